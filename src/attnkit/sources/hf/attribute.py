"""Gradient attributions of one output of a transformers model over its input tokens.

The score f of an embedded input (`attnkit.analysis.attribution`: (N, T, D) -> (N,)) runs the
model from its token ids with the input embedding module's output replaced by the given
embeddings (a forward hook, so scaling and positions are added after it as the model does):

- a classifier (`...ForSequenceClassification`): the logit of a class (`--attribute-target`, default the
  predicted one);
- a decoder-only language model: the log-probability of the next token after the text (`--attribute-target`
  a token id, default the most likely);
- an encoder-decoder model: the log-probability of output position t (`--attribute-target t`, default 0)
  of the target, over the source tokens (the decoder input stays as it is).

Vision models and models without such a head are refused with one line.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from attnkit.analysis.attribution import embeddings_replaced
from attnkit.errors import AttnkitError
from attnkit.sources.hf.inputs import HfInputs
from attnkit.sources.hf.load import HfModel


def _run(hf: HfModel, prep: HfInputs, embedding: torch.nn.Module, e: Tensor) -> Tensor:
    """The model's logits for the embedded inputs e (N, T, D): the embedding module's first output replaced
    (`embeddings_replaced`: an encoder-decoder model's shared embedding keeps its own output in the decoder)."""
    inputs = {k: v.expand(e.size(0), *v.shape[1:]) for k, v in prep.inputs.items()}
    with embeddings_replaced(embedding, e):
        return hf.model(**inputs).logits


def score_function(hf: HfModel, prep: HfInputs, output: int | None, logits: Tensor | None = None) -> tuple[Callable[[Tensor], Tensor], Tensor, str]:
    """(f: (N, T, D) -> (N,), the input's embeddings (T, D), what f scores). `logits`: the model's output for `prep`
    where the caller has already run it (faithfulness's explained pass), which saves a forward pass."""
    if hf.arch == "vision":
        raise AttnkitError(f"{hf.name}: attributions are over text tokens; this is a vision model")
    holder = hf.model.get_encoder() if hf.arch == "encoder-decoder" else hf.model
    embedding = holder.get_input_embeddings()
    with torch.no_grad():
        x = embedding(prep.inputs["input_ids"])[0].float()  # (T, D)
        logits = getattr(hf.model(**prep.inputs), "logits", None) if logits is None else logits
    name = type(hf.model).__name__
    if logits is None or (hf.arch == "encoder" and logits.dim() != 2):
        raise AttnkitError(f"{hf.name}: {name} has no classification or language-model head to attribute")
    if hf.arch == "encoder":
        c = int(logits[0].argmax()) if output is None else output
        if not 0 <= c < logits.size(-1):
            raise AttnkitError(f"{hf.name}: --attribute-target {c}: the model has {logits.size(-1)} classes")
        label = hf.model.config.id2label.get(c, str(c))
        return lambda e: _run(hf, prep, embedding, e)[:, c].float(), x, f"class {c} ({label})"
    if hf.arch == "decoder":
        tok = int(logits[0, -1].argmax()) if output is None else output
        if not 0 <= tok < logits.size(-1):
            raise AttnkitError(f"{hf.name}: --attribute-target {tok}: the vocabulary has {logits.size(-1)} tokens")
        text = hf.tokenizer.convert_ids_to_tokens(tok)
        return lambda e: _run(hf, prep, embedding, e)[:, -1].float().log_softmax(-1)[:, tok], x, f"next token {text!r} ({tok})"
    t = 0 if output is None else output
    if not 0 <= t < len(prep.output_tokens):
        raise AttnkitError(f"{hf.name}: --attribute-target {t}: the target has {len(prep.output_tokens)} positions")
    tok = prep.output_ids[t]
    return lambda e: _run(hf, prep, embedding, e)[:, t].float().log_softmax(-1)[:, tok], x, f"output {t} {prep.output_tokens[t]!r}"
