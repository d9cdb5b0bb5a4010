"""A parse's attention maps and picture, for `attnkit report`, `plot` and the web page.

`explore` parses sentences, then re-runs each best output teacher-forced through
`model.attentions` (as the translation family does) for every map in the common format: encoder
self-attention (words x words), decoder self-attention (symbols x decoder input) and
encoder-decoder attention (output symbols x words), per layer and head. A record
(`record`) is the attention JSONL format of `viz.export` (`id`, `src`, `tgt`, `attention`,
`score`) plus `source`, `text` (the bracketed tree), `nbest`, `maps`, `tree` and `svg`
(`draw.tree_svg`), and `repaired`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnkit.artifacts.runs import LoadedRun
from attnkit.config.schema import Decode
from attnkit.data.batching import collate
from attnkit.families.parse.codec import ParseVocabs, source_ids, tokenize
from attnkit.families.parse.draw import tree_svg
from attnkit.families.parse.infer import ParseResult, parse_words
from attnkit.families.protocol import ExploreOptions
from attnkit.viz.export import attention_record
from attnkit.viz.plot import AttentionView

TITLES = {"encoder": "encoder self-attention", "decoder_self": "decoder self-attention", "cross": "encoder-decoder attention"}
AXES = {"encoder": ("words (keys)", "words (queries)"), "decoder_self": ("decoder input", "output symbols"), "cross": ("words", "output symbols")}


@dataclass
class Explored:
    index: int
    source: str
    result: ParseResult
    views: list[AttentionView]


def explore(loaded: LoadedRun, lines: Sequence[str], decode: Decode, *, maps: bool = True, raw: bool = False) -> list[Explored]:
    """Parse `lines` (tokenised, or `raw` text) and collect the attention maps of each parse."""
    sentences = [tokenize(line) if raw else line.split() for line in lines]
    results = parse_words(loaded.model, loaded.vocabs, sentences, decode, return_attention=True)
    views = attention_views(loaded.model, loaded.vocabs, results) if maps else [[] for _ in results]
    return [Explored(i, line, r, v) for i, (line, r, v) in enumerate(zip(lines, results, views))]


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
        out.append([AttentionView(kind, rows, cols, [w[b, :, : len(rows), : len(cols)].float().cpu() for w in getattr(maps, kind)],  # (H, Tq, Tk)
                                  TITLES[kind], AXES[kind])
                    for kind, (rows, cols) in labels.items()])  # fmt: skip
    return out


def _rounded(t: torch.Tensor) -> list:
    return t.double().round(decimals=4).tolist()


def record(e: Explored) -> dict:
    """The JSON record of one parse (see the module docstring)."""
    r = e.result
    src, tgt = [*r.words, "</s>"], [*r.symbols, *(["</s>"] if r.finished else [])]
    out = (
        attention_record(e.index, src, tgt, r.attention, r.score)
        if r.attention is not None
        else {"id": e.index, "src": src, "tgt": tgt, "attention": None, "score": r.score}
    )
    text = str(r.tree)
    out.update(source=e.source, text=text, tree=text, svg=tree_svg(r.tree), repaired=r.repaired,
               nbest=[{"text": text, "score": round(r.score, 4), "finished": r.finished}])  # fmt: skip
    if e.views:
        out["maps"] = {v.kind: {"rows": v.rows, "cols": v.cols, "layers": [_rounded(w) for w in v.layers]} for v in e.views}
    return out


def records(loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[dict]:
    return [record(e) for e in explore(loaded, lines, options.decode)]


def views(loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[list[AttentionView]]:
    return [e.views for e in explore(loaded, lines, options.decode)]
