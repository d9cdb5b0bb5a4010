"""Parse sentences with a chart parser: encode, score every span, CKY (`chart.cky`), build the tree.

Sentences are sorted by length and batched (`decode.batch_size`); every output is a tree over
exactly the input words (CKY's binary trees, empty-labelled nodes dissolved). The trees carry the
given tags (gold, for scoring), else the model's tagger's (`infer.best_tags`), else
`codec.guess_tags`. `parse` is the family's one entry point: the chart parser for a chart run's
vocabularies, else the seq2seq search (`infer.parse_words`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from attnkit.config.schema import Decode
from attnkit.families.parsing.chart.cky import EMPTY_LABEL, build_tree, cky
from attnkit.families.parsing.chart.codec import ChartVocabs, chart_of, collate, encode_words, scores_of
from attnkit.families.parsing.codec import encode_words as check_words
from attnkit.families.parsing.codec import guess_tags
from attnkit.families.parsing.evalb import score
from attnkit.families.parsing.evalb_params import COLLINS
from attnkit.families.parsing.infer import ParseResult, best_tags, parse_words, tag_accuracy
from attnkit.families.parsing.trees import Tree
from attnkit.progress import counter


@dataclass
class SpanChart:
    """What the chart parser thought of each span (i, j) of fenceposts: the best non-empty label
    and its score, s(i, j, l) - s(i, j, empty) (> 0: rather a constituent than not); in_tree: the
    labelled spans of the parse."""

    best: np.ndarray  # (n+1, n+1) float, NaN where i >= j
    labels: list[list[str]]  # (n+1) x (n+1), "" where i >= j
    in_tree: list[tuple[int, int]]


@dataclass
class ChartResult(ParseResult):
    """A chart parse: `ParseResult` (no symbols, never repaired) plus the span chart and the encoder's
    self-attention per layer (H, T, T) over ``<s> words </s>`` (with `return_attention`)."""

    chart: SpanChart | None = None
    maps: list[Tensor] | None = None


def span_chart(chart: np.ndarray, spans: Sequence[tuple[int, int, int]], labels: Sequence[str]) -> SpanChart:
    """The `SpanChart` of a sentence's scores (n+1, n+1, L) and its parse's spans."""
    n = chart.shape[0] - 1
    upper = np.triu(np.ones((n + 1, n + 1), dtype=bool), k=1)
    best = np.where(upper, chart[..., 1:].max(axis=-1), np.nan) if len(labels) > 1 else np.where(upper, 0.0, np.nan)
    pick = chart[..., 1:].argmax(axis=-1) + 1 if len(labels) > 1 else np.zeros((n + 1, n + 1), dtype=int)
    names = [[labels[pick[i, j]] if upper[i, j] else EMPTY_LABEL for j in range(n + 1)] for i in range(n + 1)]
    return SpanChart(best, names, [(i, j) for i, j, label in spans if label])


def _tags_of(model: nn.Module, vocabs: ChartVocabs, y: Tensor, words: list[list[str]]) -> list[list[str]] | None:
    if getattr(model, "tagger", None) is None or vocabs.tags is None:
        return None
    return best_tags(model.tag_logits(y[:, 1:-1]).float(), vocabs.tags, words)  # word positions: 1..n


@torch.inference_mode()
def parse_chart(model: nn.Module, vocabs: ChartVocabs, sentences: Sequence[Sequence[str]], decode: Decode, *,
                tags: Sequence[Sequence[str]] | None = None, return_attention: bool = False, source: str = "input",
                progress: Callable[[int], None] | None = None) -> list[ChartResult]:  # fmt: skip
    """Parse tokenised sentences (module docstring); `return_attention` adds the span charts and maps;
    `progress(n)` is called with the number of sentences of each batch parsed.

    Raises:
        DataError: A sentence with no words, or longer than `decode.max_src_len` or the model's positions (naming it).
    """
    limit = min(decode.max_src_len, model.position_embed.num_embeddings - 2)
    check_words(vocabs, sentences, limit, source)  # type: ignore[arg-type]
    examples = [encode_words(vocabs, words) for words in sentences]
    device = next(model.parameters()).device
    results: list[ChartResult | None] = [None] * len(sentences)
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    for start in range(0, len(order), decode.batch_size):
        index = order[start : start + decode.batch_size]
        batch = collate(examples, index).to(device)
        y, scores, table, maps = scores_of(model, batch)
        words = [list(sentences[i]) for i in index]
        predicted = _tags_of(model, vocabs, y, words)
        values = scores.float().cpu().numpy()  # (B, P, L)
        for b, i in enumerate(index):
            n = len(words[b])
            chart = chart_of(values[b], table, n)
            found = cky(chart)
            row_tags = tags[i] if tags is not None else predicted[b] if predicted is not None else guess_tags(words[b])
            tree = build_tree(found.spans, vocabs.labels, words[b], row_tags)
            results[i] = ChartResult(words[b], tree, [], found.score, True, False, None, predicted[b] if predicted else None,
                                     chart=span_chart(chart, found.spans, vocabs.labels) if return_attention else None,
                                     maps=[w[b, :, : n + 2, : n + 2].float().cpu() for w in maps] if return_attention else None)  # fmt: skip
        if progress is not None:
            progress(len(index))
    return [r for r in results if r is not None]


def parse(model: nn.Module, vocabs: object, sentences: Sequence[Sequence[str]], decode: Decode, **options: object) -> list[ParseResult]:
    """Parse with whichever parser `vocabs` belong to: `parse_chart` or `infer.parse_words`."""
    if isinstance(vocabs, ChartVocabs):
        return parse_chart(model, vocabs, sentences, decode, **options)  # type: ignore[arg-type, return-value]
    return parse_words(model, vocabs, sentences, decode, **options)  # type: ignore[arg-type]


def dev_f1(model: nn.Module, vocabs: ChartVocabs, gold: Sequence[Tree], batch_size: int = 64) -> dict[str, float]:
    """EVALB (COLLINS.prm) F1, all lengths, and exact match of parses of the gold trees' sentences
    with their gold tags; with a tagger, its accuracy (`tag_acc`)."""
    with counter(len(gold), "validating", unit="sent") as bar:
        results = parse_chart(model, vocabs, [t.words() for t in gold], Decode(batch_size=batch_size), tags=[t.tags() for t in gold], source="dev",
                              progress=bar.update)  # fmt: skip
    summary = score(list(gold), [r.tree for r in results], COLLINS).summary()["all"]
    metrics = {"f1": summary["fmeasure"] or 0.0, "exact": summary["complete_match"] / 100}
    if getattr(model, "tagger", None) is not None:
        metrics["tag_acc"] = tag_accuracy(results, [t.tags() for t in gold])
    return metrics
