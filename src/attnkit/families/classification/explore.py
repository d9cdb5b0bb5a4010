"""A sentence classifier in the explorer: its attention hops as views, and the score its attributions explain.

`views` gives, per line, the r hops of the structured self-attention A (Lin et al. 2017, `model`) as
an `AttentionView` of kind `hops`: one layer of one head, (1, R, n), the queries the hops ("hop 1" ..
"hop r") and the keys the words the model read, A as the model computed it. So `attnkit attention`
writes `hops/layer1` (1, R, n), and `report`, `plot --view` and the `/attention` page of `serve` draw
it as any kind. A sentence-pair model (``premise<TAB>hypothesis``) adds `hops2`, the hypothesis's A; a
Transformer encoder (`model.encoder: transformer`) adds `encoder`, its layers' self-attention over the
words (heads, n, n), which `attnkit attention` rolls out (and flows) as any encoder's. The output a
classifier explains reads the first view's rows: the hops' mean, or, with mean pooling over a
Transformer, the mean of the last layer's rows (as the pooled vector is the mean of H).
The views' note is the class the model chose and the probabilities (the page shows it; the maps do
not). A bi-LSTM (or bag of embeddings) without attention pooling has no maps. `explain` gives each
line's `ExplainedInput`: the common record (`source` the text, `text` the class) with the class
probabilities as `probs`, which the family's renderer draws as bars above the hops.

`score_function` is the family's `Family.attribution`: f(word embeddings (N, n, E)) = log p(c | x) (N,)
(`class_score`; f(e, keep) reads a padded batch of inputs of other lengths under the model's padding mask), c the predicted class or `--attribute-target c`, over the premise's word embeddings (what the
model's embedding module gives, before the bi-LSTM); a pair's hypothesis keeps its own.
`benchmarks/sst_attention_attribution.py` attributes with the same `class_score` (or its logit, as
its published figures did).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from attnkit.analysis.attribution import embeddings_replaced
from attnkit.artifacts.runs import LoadedRun
from attnkit.errors import AttnkitError
from attnkit.families.classification.infer import ClassifyResult, classify_texts, model_inputs
from attnkit.families.protocol import ExploreOptions
from attnkit.viz.attention_view import ENCODER, AttentionKind, AttentionView, ExplainedInput

HOPS = AttentionKind("hops", "attention hops", ("words", "hops"), "readout")
HOPS2 = AttentionKind("hops2", "attention hops of the second sentence", ("words", "hops"), "readout")
KINDS = (HOPS, HOPS2)  # the kinds of a classifier's views (`Family.attention_kinds`); `encoder` is the core's


def note(result: ClassifyResult) -> str:
    """The class and the probabilities, most probable first: "pos, p = 0.731 (neg 0.269)"."""
    others = sorted(((p, label) for label, p in result.probs.items() if label != result.label), reverse=True)
    rest = f" ({', '.join(f'{label} {p:.3f}' for p, label in others)})" if others else ""
    return f"{result.label}, p = {result.probs[result.label]:.3f}{rest}"


def hop_views(result: ClassifyResult) -> list[AttentionView]:
    """The hops of one classified text (and of its hypothesis) as views (module docstring)."""
    views = []
    for kind, tokens, a in ((HOPS, result.tokens, result.attention), (HOPS2, result.tokens2, result.attention2)):
        if a:  # [] without attention pooling, None without a second sentence
            weights = torch.tensor(a, dtype=torch.float32).unsqueeze(0)  # (1, R, n)
            rows = [f"hop {r}" for r in range(1, len(a) + 1)]
            views.append(kind.view(rows, list(tokens), [weights], note(result)))
    if result.encoder:
        views.append(ENCODER.view(list(result.tokens), list(result.tokens), result.encoder, note(result)))
    return views


def explain(loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[ExplainedInput]:
    """Per line: the text, its class, the hops and the class probabilities (module docstring)."""
    return [ExplainedInput(text, r.label, hop_views(r), note=note(r), fields={"probs": r.probs}) for text, r in zip(lines, classify_texts(loaded, list(lines)))]


def class_score(model: nn.Module, inputs: tuple[Tensor, ...], c: int, logit: bool = False) -> Callable[..., Tensor]:
    """f(word embeddings (N, S', E), keep (N, S') = all True) = log p(c | x) (N,) (with `logit`, the logit of c) for one
    example `inputs` = (tokens, keep[, tokens2, keep2]), each (1, S): the embeddings replace what `model.embedding` gives
    the (first) sentence, through a forward hook; S' <= S words (a deletion, `sources.scored`) read as a sentence of S'
    words. `keep` is the model's own padding mask (True on the words, as in training): a batch of inputs of other
    lengths, left-aligned and padded, reads as each input alone."""

    def f(e: Tensor, keep: Tensor | None = None) -> Tensor:  # (N, S', E), (N, S') -> (N,)
        n, s = e.shape[:2]
        tokens = inputs[0][:, :s].expand(n, -1)  # (N, S'): only the length is read (the hook gives e)
        keep = inputs[1][:, :s].expand(n, -1) if keep is None else keep.to(inputs[1].device)  # (N, S')
        with embeddings_replaced(model.embedding, e):  # a pair's hypothesis keeps its own embeddings
            logits = model(tokens, keep, *(t.expand(n, -1) for t in inputs[2:])).logits  # (N, C)
        return (logits.float() if logit else logits.float().log_softmax(dim=-1))[:, c]  # (N,)

    return f


def score_function(loaded: LoadedRun, line: str, output: int | None) -> tuple[Callable[..., Tensor], Tensor, str]:
    """(f: word embeddings (N, n, E) -> log p(c) (N,), the line's word embeddings (n, E), what f scores) for class
    c = `output` (default: the one the model chose), as the module docstring says."""
    labels = loaded.vocabs.labels.labels
    result = classify_texts(loaded, [line])[0]
    c = labels.index(result.label) if output is None else output
    if not 0 <= c < len(labels):
        raise AttnkitError(f"{loaded.folder}: --attribute-target {c}: the model has {len(labels)} classes (0-{len(labels) - 1}: {', '.join(labels)})")
    inputs = model_inputs(loaded, line)  # (tokens, keep[, tokens2, keep2]), each (1, S)
    with torch.no_grad():
        x = loaded.model.embedding(inputs[0])[0].float()  # (n, E)
    return class_score(loaded.model, inputs, c), x, f"class {c} ({labels[c]})"
