"""The chart parser's codec: vocabularies (words, characters, span labels, tags), trees <->
examples, padded batches, and a batch's span scores.

Words are the seq2seq parser's source words (`codec.source_ids`: the training words seen
`min_freq` times, unknown ones as their signature or `<unk>`); characters are every character of
the training words (an unseen one is `<unk>`), and ``<s>`` / ``</s>`` are the one-character words
at each end of a sentence. Labels are the empty label (id 0, ``""``) and the span labels of the
training trees (`chart.gold_spans`: unary chains as compound labels).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from attnkit.data.batching import pad
from attnkit.data.vocab import BOS, EOS, PAD, UNK, Vocabulary
from attnkit.families.parsing.chart.cky import EMPTY_LABEL, gold_chart, gold_spans
from attnkit.families.parsing.codec import build_vocabs, signature, source_ids
from attnkit.families.parsing.trees import Tree


@dataclass
class ChartVocabs:
    """Words, characters, labels (label 0 the empty one) and tags; equal when all agree."""

    words: Vocabulary
    chars: Vocabulary
    labels: list[str]
    tags: Vocabulary | None
    signatures: bool = False


def build_chart_vocabs(trees: Sequence[Tree], *, min_freq: int, signatures: bool) -> ChartVocabs:
    """The vocabularies of the training trees (module docstring)."""
    words = build_vocabs(trees, keep_words=False, min_freq=min_freq, signatures=signatures).words
    chars = Vocabulary.build([list(word) for tree in trees for word in tree.words()])
    labels = sorted({label for tree in trees for _, _, label in gold_spans(tree)})
    tags = Vocabulary.build([tree.tags() for tree in trees])
    return ChartVocabs(words, chars, [EMPTY_LABEL, *labels], tags, signatures)


def vocabs_to_json(vocabs: ChartVocabs, folder: Path) -> dict[str, Any]:
    """What run.json stores: `labels` marks a chart parser's vocabularies."""
    return {"words": vocabs.words.to_json(), "chars": vocabs.chars.to_json(), "labels": vocabs.labels, "signatures": vocabs.signatures,
            **({"tags": vocabs.tags.to_json()} if vocabs.tags is not None else {})}  # fmt: skip


def vocabs_from_json(info: dict[str, Any], folder: Path) -> ChartVocabs:
    """The inverse of `vocabs_to_json`."""
    tags = Vocabulary.from_json(info["tags"]) if "tags" in info else None
    return ChartVocabs(Vocabulary.from_json(info["words"]), Vocabulary.from_json(info["chars"]), list(info["labels"]), tags, bool(info["signatures"]))


@dataclass
class ChartExample:
    """One sentence: word ids and the character ids of each word (no <s> </s>), gold spans (i, j,
    label id; none when unknown) and tag ids (none when unknown)."""

    words: list[int]
    chars: list[list[int]]
    spans: list[tuple[int, int, int]]
    tags: list[int]


def char_ids(vocabs: ChartVocabs, words: Sequence[str]) -> list[list[int]]:
    """The character ids of each word."""
    return [vocabs.chars.encode(list(word)) for word in words]


def encode_words(vocabs: ChartVocabs, words: Sequence[str]) -> ChartExample:
    """A sentence to parse (no gold spans or tags)."""
    return ChartExample(source_ids(vocabs, words), char_ids(vocabs, words), [], [])  # type: ignore[arg-type]


def unknown_ids(vocabs: ChartVocabs, words: Sequence[str]) -> list[int]:
    """The id each word would have if it were unknown: its signature's (with signatures), else `<unk>`."""
    return vocabs.words.encode([signature(word) for word in words]) if vocabs.signatures else [UNK] * len(words)


def drop_words(example: ChartExample, unknown: Sequence[int], counts: Sequence[int], alpha: float) -> ChartExample:
    """Word dropout: `example` with each word of training count c replaced by its `unknown` id
    with probability alpha / (alpha + c) (torch's generator, so a resumed run draws the same)."""
    c = torch.tensor(counts, dtype=torch.float32)  # (n,)
    drop = torch.rand(len(counts)) < alpha / (alpha + c)  # (n,)
    return replace(example, words=torch.where(drop, torch.tensor(unknown), torch.tensor(example.words)).tolist())


def encode_chart_tree(vocabs: ChartVocabs, tree: Tree) -> ChartExample:
    """A preprocessed tree as an example; a label not in `vocabs` is left out of its spans."""
    index = {label: i for i, label in enumerate(vocabs.labels)}
    words = tree.words()
    spans = [(i, j, index[label]) for i, j, label in gold_spans(tree) if label in index]
    tags = vocabs.tags.encode(tree.tags()) if vocabs.tags is not None else []
    return ChartExample(source_ids(vocabs, words), char_ids(vocabs, words), spans, tags)  # type: ignore[arg-type]


@dataclass
class ChartBatch:
    """Padded sentences ``<s> w_1 .. w_n </s>``: tokens, keep, tags (B, T) (tags PAD at <s>, </s>
    and padding), chars (B, T, C) and char_lengths (B, T); lengths (B,) words; `gold`: each
    sentence's gold label chart (n+1, n+1) (numpy, stays on the CPU)."""

    tokens: Tensor
    keep: Tensor
    chars: Tensor
    char_lengths: Tensor
    lengths: Tensor
    tags: Tensor
    gold: list[np.ndarray]
    n_words: int

    def to(self, device: torch.device | str) -> ChartBatch:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return ChartBatch(**{k: v.to(device) if isinstance(v, Tensor) else v for k, v in values.items()})


def collate(examples: Sequence[ChartExample], index: Sequence[int]) -> ChartBatch:
    """The examples `index` as one padded `ChartBatch`."""
    chosen = [examples[i] for i in index]
    tokens, keep = pad([[BOS, *e.words, EOS] for e in chosen], PAD)  # (B, T)
    tags, _ = pad([[PAD, *(e.tags or [PAD] * len(e.words)), PAD] for e in chosen], PAD)  # (B, T)
    token_chars = [[[BOS], *e.chars, [EOS]] for e in chosen]
    width = max(len(c) for row in token_chars for c in row)
    chars = torch.zeros(*tokens.shape, width, dtype=torch.long)  # (B, T, C)
    char_lengths = torch.zeros(tokens.shape, dtype=torch.long)  # (B, T)
    for b, row in enumerate(token_chars):
        for t, c in enumerate(row):
            chars[b, t, : len(c)] = torch.tensor(c)
            char_lengths[b, t] = max(len(c), 1)  # an empty word (never in PTB text) reads as one PAD character
    lengths = torch.tensor([len(e.words) for e in chosen])
    gold = [gold_chart(len(e.words), e.spans) for e in chosen]
    return ChartBatch(tokens, keep, chars, char_lengths, lengths, tags, gold, int(lengths.sum()))


def fencepost_pairs(n: int, device: torch.device | str = "cpu") -> tuple[Tensor, np.ndarray]:
    """Every span (i, j), 0 <= i < j <= n, as pairs (P, 2), and the (n+1, n+1) table of each
    span's pair index (0 where i >= j)."""
    i, j = np.triu_indices(n + 1, k=1)
    table = np.zeros((n + 1, n + 1), dtype=np.int64)
    table[i, j] = np.arange(len(i))
    return torch.from_numpy(np.stack([i, j], axis=1)).to(device), table


def chart_of(scores: np.ndarray, table: np.ndarray, n: int) -> np.ndarray:
    """One sentence's (P, L) pair scores -> its chart (n+1, n+1, L) (cells with i >= j are junk)."""
    return scores[table[: n + 1, : n + 1]]


def scores_of(model: Any, batch: ChartBatch) -> tuple[Tensor, Tensor, np.ndarray, list[Tensor]]:
    """The encoder output y (B, T, D), the span scores (B, P, L) of every fencepost pair of the
    longest sentence, the pair index table and the encoder's attention weights (B, H, T, T) per layer."""
    y, maps = model.encode(batch.tokens, batch.chars, batch.char_lengths, batch.keep)  # (B, T, D)
    pairs, table = fencepost_pairs(batch.tokens.size(1) - 2, y.device)
    return y, model.span_scores(y, pairs), table, maps
