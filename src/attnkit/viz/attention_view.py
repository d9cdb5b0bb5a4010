"""The one attention-map contract: what a model gives `report`, `serve`, `show`, `attention` and `plot`.

An `AttentionView` is one kind of attention of one input: its queries (`rows`), its keys (`cols`)
and its weights per layer, each (H, Tq, Tk) (a kind without layers or heads, a classifier's hops, is
one layer of one head). An `AttentionKind` names a kind: its title, its axis labels and its `role`,
what its queries are. The families declare the kinds their views have (`Family.attention_kinds`,
the registry the family fills); a kind nobody declared still goes everywhere, under `generic_kind`
(its name as its title), and the pages draw it as a heatmap like any other. An `Explained` is one
input through a model: the input, what the model made of it, its views, and the fields the family's
renderer draws besides them (`viz.records` turns it into the pages' JSON).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from torch import Tensor

# What a kind's queries are: the input itself (self-attention over it), the model's output (a decoder's
# rows: what `attnkit attention` writes as target_tokens), learned queries that read the input out (a
# classifier's hops), or one map summarising every layer (rollout, flow).
Role = Literal["input", "output", "readout", "summary"]


@dataclass
class AttentionView:
    """One kind of attention of one input: per layer (H, Tq, Tk), rows = queries, cols = keys."""

    kind: str
    rows: list[str]  # the queries, one label per row of each map (Tq)
    cols: list[str]  # the keys (Tk)
    layers: list[Tensor]  # per layer the weights (H, Tq, Tk), probabilities over the keys
    title: str  # e.g. "encoder-decoder attention"
    axes: tuple[str, str]  # (x label: the keys, y label: the queries)
    note: str | None = None  # what the maps do not show of the model's answer (a classifier's class and probabilities)
    role: Role = "input"


@dataclass(frozen=True)
class AttentionKind:
    """A kind of attention map as the pages and plots name it; `view` makes one of its views."""

    name: str
    title: str
    axes: tuple[str, str] = ("keys", "queries")  # (x label: the keys, y label: the queries)
    role: Role = "input"

    def view(self, rows: list[str], cols: list[str], layers: list[Tensor], note: str | None = None) -> AttentionView:
        """A view of this kind: `layers` per layer (H, Tq, Tk), Tq = len(rows), Tk = len(cols)."""
        return AttentionView(self.name, rows, cols, layers, self.title, self.axes, note, self.role)


def generic_kind(name: str) -> AttentionKind:
    """How a kind nobody declared is named and drawn: its name as its title, keys x queries."""
    return AttentionKind(name, name.replace("_", " "))


# The kinds of the core's Transformer (attnkit's encoder-decoder runs and Hugging Face models alike).
ENCODER = AttentionKind("encoder", "encoder self-attention", ("source (keys)", "source (queries)"))
DECODER_SELF = AttentionKind("decoder_self", "decoder self-attention", ("decoder input", "output"), "output")
CROSS = AttentionKind("cross", "encoder-decoder attention", ("source", "output"), "output")
SELF = AttentionKind("self", "self-attention", ("keys", "queries"))
TRANSFORMER_KINDS = (ENCODER, SELF, DECODER_SELF, CROSS)
# The summaries `sources.collect` computes over any source's layers.
SUMMARY_KINDS = (
    AttentionKind("rollout", "attention rollout", role="summary"),
    AttentionKind("rollout_encoder", "encoder rollout", role="summary"),
    AttentionKind("flow", "attention flow", role="summary"),
)


def kind_table(kinds: Iterable[AttentionKind]) -> dict[str, AttentionKind]:
    """Kinds by name (a later one of the same name wins: a family's own over the core's)."""
    return {k.name: k for k in kinds}


def ordered(names: Iterable[str], table: dict[str, AttentionKind]) -> list[AttentionKind]:
    """The kinds `names` in `table`'s order, then those it does not know (`generic_kind`) in their own order."""
    names = list(dict.fromkeys(names))
    known = [table[n] for n in table if n in names]
    return known + [generic_kind(n) for n in names if n not in table]


@dataclass
class Explained:
    """One input through a model, as every page and plot takes it."""

    source: str  # the input as given (a sentence, an image path)
    text: str  # what the model made of it: its output, parse, class or caption
    views: list[AttentionView]
    nbest: Sequence[dict] | None = None  # the hypotheses, best first: {"text", "score", "finished"}
    note: str | None = None  # what neither the text nor the maps show (default: the first view's note)
    fields: dict[str, Any] = field(default_factory=dict)  # what the family's renderer draws besides (a tree, an image)
