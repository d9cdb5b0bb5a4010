"""The one attention-map contract: what a model gives `report`, `serve`, `show`, `attention` and `plot`.

An `AttentionView` is one kind of attention of one input: its queries (`rows`), its keys (`cols`)
and its weights per layer, each (H, Tq, Tk) (a kind without layers or heads, a classifier's hops, is
one layer of one head). An `AttentionKind` names a kind: its title, its axis labels and its `role`,
what its queries are. The families declare the kinds their views have (`Family.attention_kinds`,
the registry the family fills); a kind nobody declared still goes everywhere, under `generic_kind`
(its name as its title), and the pages draw it as a heatmap like any other. An `Explained` is one
input through a model: the input, what the model made of it, its views, and the fields the family's
renderer draws besides them (`viz.records` turns it into the pages' JSON).

`ExplainedInput` is the one record: a source makes one per input (`attnkit.sources.record.explain_inputs`)
and every output serializes it (the page's JSON, `viz.records`; the npz, `sources.npz.write_record`; the
pictures, `viz.plot`, `viz.views`). A view's `layers` are kept as the output needs them, from the moment a
layer arrives (`sources.store`): float tensors, `viz.weights.Quantized` bytes (pages), or `Written` (the
layer is already in the npz file).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from torch import Tensor

SCHEMA = 2  # the record's version: 0.1.0's records had no `schema` (read as 1: the same keys, less of them)

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
    layers: list[Any]  # per layer the weights (H, Tq, Tk), probabilities over the keys: a Tensor, Quantized or Written
    title: str  # e.g. "encoder-decoder attention"
    axes: tuple[str, str]  # (x label: the keys, y label: the queries)
    note: str | None = None  # what the maps do not show of the model's answer (a classifier's class and probabilities)
    role: Role = "input"
    positions: bool = False  # queries and keys are positions of one sequence (self-attention): head statistics apply


@dataclass(frozen=True)
class AttentionKind:
    """A kind of attention map as the pages and plots name it; `view` makes one of its views."""

    name: str
    title: str
    axes: tuple[str, str] = ("keys", "queries")  # (x label: the keys, y label: the queries)
    role: Role = "input"
    positions: bool = False  # queries and keys are positions of one sequence (self-attention)

    def view(self, rows: list[str], cols: list[str], layers: list[Tensor], note: str | None = None) -> AttentionView:
        """A view of this kind: `layers` per layer (H, Tq, Tk), Tq = len(rows), Tk = len(cols)."""
        return AttentionView(self.name, rows, cols, layers, self.title, self.axes, note, self.role, self.positions)


def generic_kind(name: str) -> AttentionKind:
    """How a kind nobody declared is named and drawn: its name as its title, keys x queries."""
    return AttentionKind(name, name.replace("_", " "))


# The kinds of the core's Transformer (attnkit's encoder-decoder runs and Hugging Face models alike).
ENCODER = AttentionKind("encoder", "encoder self-attention", ("source (keys)", "source (queries)"), positions=True)
DECODER_SELF = AttentionKind("decoder_self", "decoder self-attention", ("decoder input", "output"), "output", positions=True)
CROSS = AttentionKind("cross", "encoder-decoder attention", ("source", "output"), "output")
SELF = AttentionKind("self", "self-attention", ("keys", "queries"), positions=True)
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


@dataclass(frozen=True)
class Written:
    """A layer kept in an npz file, not in memory (`attnkit attention`): its member's name."""

    member: str


@dataclass
class OutputAttribution:
    """The attributions of one output over the input tokens, and their agreement with attention (`sources.attribute`)."""

    output: str  # what was scored: "class 1 (pos)", "output 2 'Hund'"
    row: int | None  # the query row the output is read at (None: the mean of the rows)
    tokens: list[str]  # the S tokens scored
    scores: dict[str, np.ndarray]  # method -> (S,) float32
    ig: dict[str, float] | None = None  # integrated gradients' `steps` and `relative_error` (completeness)
    compared: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (S,): the rows of attention the output reads
    tau: dict[str, np.ndarray] = field(default_factory=dict)  # method -> (K,) Kendall tau-b with each compared row


@dataclass
class ExplainedInput:
    """One input through a model: the one record every page, file and picture takes (module docstring)."""

    source: str  # the input as given (a sentence, an image path)
    text: str  # what the model made of it: its output, parse, class or caption
    views: list[AttentionView]  # its kinds, then the summaries (role "summary": rollout, flow)
    nbest: Sequence[dict] | None = None  # the hypotheses, best first: {"text", "score", "finished"}
    note: str | None = None  # what neither the text nor the maps show (default: the first view's note)
    fields: dict[str, Any] = field(default_factory=dict)  # what the family's renderer draws besides (a tree, an image)
    model: str | None = None  # the source's name (a run's folder, a model as the user gave it)
    attribution: OutputAttribution | None = None  # with --attribute
    # what the npz holds besides the maps: `tokens`, `target_tokens`, `output_tokens`, `grid`, `flow/rows`
    sequences: dict[str, Any] = field(default_factory=dict)

    def view(self, kind: str) -> AttentionView | None:
        """The view of `kind`, or None."""
        return next((v for v in self.views if v.kind == kind), None)

    @property
    def shown_note(self) -> str | None:
        """The note: its own, else the first view's."""
        return self.note or next((v.note for v in self.views if v.note), None)
