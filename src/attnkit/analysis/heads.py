"""What each head looks at, over many sentences (Clark et al. 2019, "What Does BERT Look At?").

For every layer l and head h, averaged over all query positions of all sentences (each query
weighs the same, as the paper's averages over tokens), with p the query's attention row:

- `entropy`: -sum_k p_k log p_k in nats (sec. 3.4, "attention entropy");
- `distance`: sum_k p_k |q - k|, the mean attended distance in tokens;
- `first`: p_0, the share on the first token ([CLS] or BOS; sec. 3.1);
- `separator`: the share on separator/end tokens ([SEP], EOS; sec. 3.2): the positions whose token
  is in `separators`, or the last position when `separators` is None;
- `punctuation`: the share on tokens made only of punctuation (sec. 3.2), subword markers removed;
- `previous`, `next`: p_{q-1} and p_{q+1} (sec. 3.3, the positional heads), averaged over the
  queries that have such a neighbour.

A head that always attends to the previous token reads `previous` = 1.0.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from attnkit.errors import AttnkitError

STATS = ("entropy", "distance", "first", "separator", "punctuation", "previous", "next")
SUBWORD_MARKERS = ("\u2581", "##", "@@", "\u0120")  # SentencePiece, WordPiece, subword-nmt, GPT-2 byte-level


def is_punctuation(token: str) -> bool:
    """Whether `token`, subword markers removed, is non-empty and all Unicode punctuation (P*)."""
    for marker in SUBWORD_MARKERS:
        token = token.replace(marker, "")
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


@dataclass
class HeadStats:
    """Running sums over sentences; `means()` gives each statistic as (L, H)."""

    layers: int
    heads: int
    separators: frozenset[str] | None = None
    sentences: int = 0
    sums: dict[str, Tensor] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in STATS:
            self.sums.setdefault(name, torch.zeros(self.layers, self.heads, dtype=torch.float64))  # (L, H)
            self.counts.setdefault(name, 0)

    def add(self, layers: Sequence[Tensor], tokens: Sequence[str]) -> None:
        """Add one sentence: per layer (H, T, T) self-attention and its T tokens."""
        a = _stack(layers, tokens, self.layers, self.heads)  # (L, H, T, T)
        T = a.size(-1)
        pos = torch.arange(T)
        dist = (pos[:, None] - pos[None, :]).abs().to(a.dtype)  # (T, T)
        self._add("entropy", -(a * a.clamp_min(1e-30).log()).sum(dim=(-2, -1)), T)
        self._add("distance", (a * dist).sum(dim=(-2, -1)), T)
        self._add("first", a[..., 0].sum(dim=-1), T)
        self._add("separator", a[..., self._separator_positions(tokens)].sum(dim=(-2, -1)), T)
        punct = [i for i, t in enumerate(tokens) if is_punctuation(t)]
        self._add("punctuation", a[..., punct].sum(dim=(-2, -1)), T)
        self._add("previous", a.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=-1), T - 1)  # p[q, q-1], q >= 1
        self._add("next", a.diagonal(offset=1, dim1=-2, dim2=-1).sum(dim=-1), T - 1)  # p[q, q+1], q <= T-2
        self.sentences += 1

    def _add(self, name: str, total: Tensor, count: int) -> None:
        self.sums[name] += total  # (L, H)
        self.counts[name] += count

    def _separator_positions(self, tokens: Sequence[str]) -> list[int]:
        if self.separators is None:
            return [len(tokens) - 1]
        return [i for i, t in enumerate(tokens) if t in self.separators]

    def means(self) -> dict[str, Tensor]:
        """Each statistic averaged over its queries: name -> (L, H) (NaN where no query counted)."""
        return {name: self.sums[name] / self.counts[name] if self.counts[name] else torch.full_like(self.sums[name], float("nan")) for name in STATS}

    def to_json(self) -> dict:
        """The means as nested lists [layer][head], with the counts."""
        return {
            "layers": self.layers,
            "heads": self.heads,
            "sentences": self.sentences,
            "queries": self.counts["entropy"],
            "separators": sorted(self.separators) if self.separators is not None else "last token",
            "stats": {name: [[round(float(v), 6) for v in row] for row in m] for name, m in self.means().items()},
        }


def _stack(layers: Sequence[Tensor], tokens: Sequence[str], n_layers: int, n_heads: int) -> Tensor:
    if len(layers) != n_layers:
        raise AttnkitError(f"head statistics: {len(layers)} layers given, expected {n_layers}")
    a = torch.stack([w.detach().to("cpu", torch.float64) for w in layers])  # (L, H, T, T)
    if a.dim() != 4 or a.size(1) != n_heads or a.size(2) != a.size(3) or a.size(3) != len(tokens):
        raise AttnkitError(f"head statistics: attention of shape {tuple(a.shape)} does not fit {n_layers} layers x {n_heads} heads x {len(tokens)} tokens")
    return a


def head_statistics(sentences: Iterable[tuple[Sequence[Tensor], Sequence[str]]], separators: Iterable[str] | None = None) -> HeadStats:
    """Head statistics over `sentences`: each (per-layer (H, T, T) self-attention, its T tokens)."""
    stats = None
    for layers, tokens in sentences:
        if stats is None:
            stats = HeadStats(len(layers), layers[0].size(0), frozenset(separators) if separators is not None else None)
        stats.add(layers, tokens)
    if stats is None:
        raise AttnkitError("head statistics: no sentences given")
    return stats
