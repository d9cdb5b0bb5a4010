"""The record of one input through a Hugging Face model (`HfSource.read`): one forward pass, each layer kept as it comes.

The record holds per kind (`encoder`, `self`, `decoder_self`, `cross`: `hf.collect`) the layers
(H, Tq, Tk) as the model gave them, kept by the output's store (`sources.store`), with their queries
and keys; the summaries (`rollout`, and `rollout_encoder`, `flow`: `sources.collect`); what the model
predicts (`prediction`); as `sequences` `tokens` (vision: "[CLS]" and "patch r,c"), for an
encoder-decoder model `target_tokens` (the decoder's input) and `output_tokens`, for a vision model
`grid`; and with attribution methods the `Attribution` of one output (`sources.attribute`).
"""

from __future__ import annotations

import numpy as np
import torch

from attnkit.errors import AttnkitError
from attnkit.sources.collect import Collector, Groups
from attnkit.sources.hf.collect import collecting
from attnkit.sources.hf.inputs import HfInputs, prepare, vision_tokens
from attnkit.sources.hf.load import HfModel
from attnkit.sources.hf.long.budget import check_eager, shape_of
from attnkit.sources.options import AttentionOptions
from attnkit.sources.store import Store
from attnkit.viz.attention_view import TRANSFORMER_KINDS, ExplainedInput, kind_table, ordered
from attnkit.viz.words import join_pieces, word_groups


def _labels(prep: HfInputs, kind: str) -> tuple[list[str], list[str]]:
    """(queries, keys) of a kind."""
    target = prep.target_tokens or []
    return {"decoder_self": (target, target), "cross": (target, prep.tokens)}.get(kind, (prep.tokens, prep.tokens))


def _groups(prep: HfInputs) -> dict[str, Groups]:
    src = word_groups(prep.tokens, prep.specials)
    tgt = word_groups(prep.target_tokens or [], prep.specials)
    return {"encoder": Groups(src, src), "self": Groups(src, src), "decoder_self": Groups(tgt, tgt), "cross": Groups(tgt, src)}


def _named(prep: HfInputs, tokens: list[str], words: bool) -> list[str]:
    return join_pieces(tokens, word_groups(tokens, prep.specials)) if words else tokens


def _sequences(prep: HfInputs, words: bool) -> dict:
    """What the npz holds of the input besides the maps: its tokens, the target's, the grid."""
    out = {"tokens": _named(prep, prep.tokens, words)}
    if prep.target_tokens is not None:
        out["target_tokens"] = _named(prep, prep.target_tokens, words)
        out["output_tokens"] = prep.output_tokens
    if prep.grid is not None:
        out["grid"] = np.asarray(prep.grid, dtype=np.int64)
    return out


def _output_row(hf: HfModel, prep: HfInputs, options: AttentionOptions) -> tuple[str, int] | None:
    """(kind, query row as written) the explained output is read at: the row flow computes by default and the
    attributions are compared with (`sources.agreement`); a vision model's class is read at [CLS], row 0."""
    if hf.arch == "vision":
        return "encoder", 0
    kind, piece = {"encoder": ("encoder", 0), "decoder": ("self", len(prep.tokens) - 1)}.get(hf.arch, ("cross", options.output or 0))
    if kind == "cross" and not 0 <= piece < len(prep.target_tokens or []):
        return None  # the attribution refuses it, in one line
    if not options.words:
        return kind, piece
    return kind, next(w for w, g in enumerate(_groups(prep)[kind].rows) if piece in g)


def _attribute(hf: HfModel, prep: HfInputs, options: AttentionOptions, collector: Collector, tokens: list[str]):
    from attnkit.sources.attribute import attribution
    from attnkit.sources.hf.attribute import score_function

    f, x, label = score_function(hf, prep, options.output)
    groups = word_groups(prep.tokens, prep.specials) if options.words else None
    return attribution(f, x, label, options.attribute, tokens, groups, collector)


def _prediction(hf: HfModel, prep: HfInputs, out) -> str:
    """What the model predicts, in words, where it has a head: the output (encoder-decoder), the next token (a causal
    language model), the fill of each masked token (a masked language model), the class (a classifier); "" where it
    has no head (a bare encoder) or a masked language model reads no mask token."""
    if prep.output_ids is not None:
        return hf.tokenizer.decode(prep.output_ids, skip_special_tokens=True)
    logits = getattr(out, "logits", None)
    if logits is None:
        return ""
    if logits.dim() == 2:  # (1, C): a classifier
        labels = getattr(hf.model.config, "id2label", None) or {}
        return f"class: {labels.get(int(logits[0].argmax()), int(logits[0].argmax()))}"
    if hf.tokenizer is None:
        return ""
    if hf.arch == "decoder":  # (1, T, V): the next token
        return f"next token: {hf.tokenizer.convert_ids_to_tokens(int(logits[0, -1].argmax()))}"
    mask = hf.tokenizer.mask_token_id
    masked = [] if mask is None else (prep.inputs["input_ids"][0] == mask).nonzero().flatten().tolist()
    if not masked or logits.size(-1) != len(hf.tokenizer):  # no mask read, or (1, T, C) a token classifier's tags
        return ""
    fills = hf.tokenizer.convert_ids_to_tokens(logits[0, masked].argmax(-1).tolist())  # (1, T, V) at the masks
    return f"{hf.tokenizer.mask_token} = {', '.join(fills)}"


def read_hf(hf: HfModel, text: str | None, options: AttentionOptions, store: Store) -> ExplainedInput:
    """The record of `text` (or `options.image`) through `hf` (module docstring)."""
    if options.words and hf.arch == "vision":
        raise AttnkitError(f"{hf.name}: --words merges text pieces; this is a vision model")
    for name in ("beam", "alpha", "nbest"):
        if getattr(options, name) is not None:
            raise AttnkitError(f"{hf.name}: --{name} is for attnkit runs (they decode); a Hugging Face model reads --target")
    prep = prepare(hf, text, options)
    if hf.arch in ("encoder", "decoder"):
        check_eager(hf.name, shape_of(hf.model), len(prep.tokens), options.max_memory)
    collector = Collector(store, flow=options.flow, words=_groups(prep) if options.words else {}, output=_output_row(hf, prep, options))
    with collecting(hf.model, hf.arch, collector), torch.inference_mode():
        out = hf.model(**prep.inputs)
    if hf.arch == "vision":
        prep.tokens = vision_tokens(prep, collector.shapes["encoder"][-1])
    collector.finish()
    views = []
    for kind in ordered(collector.kept, kind_table(TRANSFORMER_KINDS)):
        rows, cols = _labels(prep, kind.name)
        views.append(kind.view(_named(prep, rows, options.words), _named(prep, cols, options.words), collector.kept[kind.name]))
    sequences = _sequences(prep, options.words)
    if collector.flow_rows:
        sequences["flow/rows"] = np.asarray(collector.flow_rows, dtype=np.int64)
    source = text if text is not None else str(options.image)
    e = ExplainedInput(source, _prediction(hf, prep, out), views + collector.summary_views(views), model=hf.name, sequences=sequences)
    if options.attribute:
        e.attribution = _attribute(hf, prep, options, collector, sequences["tokens"])
    return e
