"""A parse's attention maps and picture, for `attnkit report`, `plot` and the web page.

`explore` parses sentences, then re-runs each best output teacher-forced through
`model.attentions` (as the translation family does) for every map in the common format: encoder
self-attention (words x words), decoder self-attention (symbols x decoder input) and
encoder-decoder attention (output symbols x words), per layer and head. `explained` gives the
core's `ExplainedInput` of a parse (the core serializes it, `viz.records`): the common `source`, `text`
(the bracketed tree), `nbest` and views, and as its fields `id`, `src`, `tgt` and `score` of the attention
JSONL format (`viz.export`) and the family's `tree`, `svg` (`draw.tree_svg`) and `repaired`; `api_attention`
is what `POST /v1/parse` adds, the search's attention (`attention`, [symbol][word]). A chart parse (`chart.infer`) has the encoder's self-attention
as its only map and adds `chart` (`chart_record`): each span's best label and score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from attnkit.artifacts.runs import LoadedRun
from attnkit.config.schema import Decode
from attnkit.data.batching import collate
from attnkit.families.parsing.chart.infer import ChartResult, SpanChart, parse
from attnkit.families.parsing.codec import ParseVocabs, source_ids, tokenize
from attnkit.families.parsing.draw import tree_svg
from attnkit.families.parsing.infer import ParseResult
from attnkit.families.protocol import ExploreOptions
from attnkit.viz.attention_view import CROSS, DECODER_SELF, ENCODER, AttentionView, ExplainedInput
from attnkit.viz.export import attention_record

# the kinds of a parse's views (`Family.attention_kinds`): the core Transformer's, over words and symbols
KINDS = (replace(ENCODER, axes=("words (keys)", "words (queries)")), replace(DECODER_SELF, axes=("decoder input", "output symbols")),
         replace(CROSS, axes=("words", "output symbols")))  # fmt: skip
ENCODER_WORDS = KINDS[0]


@dataclass
class ExploredParse:
    index: int
    source: str
    result: ParseResult
    views: list[AttentionView]


def explore(loaded: LoadedRun, lines: Sequence[str], decode: Decode, *, maps: bool = True, raw: bool = False) -> list[ExploredParse]:
    """Parse `lines` (tokenised, or `raw` text) and collect the attention maps of each parse."""
    sentences = [tokenize(line) if raw else line.split() for line in lines]
    results = parse(loaded.model, loaded.vocabs, sentences, decode, return_attention=True)
    if not maps:
        views: list[list[AttentionView]] = [[] for _ in results]
    elif results and isinstance(results[0], ChartResult):
        views = [chart_views(r) for r in results]  # type: ignore[arg-type]
    else:
        views = attention_views(loaded.model, loaded.vocabs, results)
    return [ExploredParse(i, line, r, v) for i, (line, r, v) in enumerate(zip(lines, results, views))]


@torch.inference_mode()
def attention_views(model: torch.nn.Module, vocabs: ParseVocabs, results: list[ParseResult]) -> list[list[AttentionView]]:
    """The teacher-forced attention maps of each parse's symbols, cut to its own lengths."""
    if not results:
        return []
    examples = [(source_ids(vocabs, r.words), vocabs.symbols.encode(r.symbols)) for r in results]
    device = next(model.parameters()).device
    batch = collate(examples, range(len(examples))).to(device)
    maps = model.attentions(batch.src, batch.src_keep, batch.tgt_in)  # lists of (B, H, Tq, Tk)
    out = []
    for b, r in enumerate(results):
        src, tgt = [*r.words, "</s>"], [*r.symbols, "</s>"]
        labels = {"encoder": (src, src), "decoder_self": (tgt, ["<s>", *r.symbols]), "cross": (tgt, src)}
        out.append([k.view(rows, cols, [w[b, :, : len(rows), : len(cols)].float().cpu() for w in getattr(maps, k.name)])  # (H, Tq, Tk)
                    for k in KINDS for rows, cols in [labels[k.name]]])  # fmt: skip
    return out


def chart_views(result: ChartResult) -> list[AttentionView]:
    """A chart parse's encoder self-attention over ``<s> words </s>`` (the chart parser has no decoder)."""
    tokens = ["<s>", *result.words, "</s>"]
    return [ENCODER_WORDS.view(tokens, tokens, result.maps or [])]


def chart_record(words: list[str], chart: SpanChart) -> dict:
    """The span chart as JSON: `best[i][j]` the best label's score of words i..j (inclusive, so
    fenceposts (i, j+1)), null below the diagonal, `labels[i][j]` that label, `in_tree` the parse's
    labelled spans as [i, j] word ranges."""
    n = len(words)
    best = [[None if j < i else round(float(chart.best[i, j + 1]), 3) for j in range(n)] for i in range(n)]
    labels = [[chart.labels[i][j + 1] if j >= i else "" for j in range(n)] for i in range(n)]
    return {"words": words, "best": best, "labels": labels, "in_tree": [[i, j - 1] for i, j in chart.in_tree]}


def explained(e: ExploredParse) -> ExplainedInput:
    """One parse as the core's `ExplainedInput` (see the module docstring)."""
    r = e.result
    src, tgt = [*r.words, "</s>"], [*r.symbols, *(["</s>"] if r.finished else [])]
    text = str(r.tree)
    fields = {"id": e.index, "src": src, "tgt": tgt, "score": r.score, "tree": text, "svg": tree_svg(r.tree), "repaired": r.repaired}
    if isinstance(r, ChartResult) and r.chart is not None:
        fields["chart"] = chart_record(r.words, r.chart)
    return ExplainedInput(e.source, text, e.views, [{"text": text, "score": round(r.score, 4), "finished": r.finished}], fields=fields)


def api_attention(e: ExploredParse) -> list[list[float]] | None:
    """The search's attention [symbol][word] (rounded as in `viz.export`), or None without it."""
    r = e.result
    return None if r.attention is None else attention_record(e.index, [], [], r.attention)["attention"]


def explain(loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[ExplainedInput]:
    return [explained(e) for e in explore(loaded, lines, options.decode)]
