"""What happens to each layer's attention as it comes: kept as the output needs it, and folded into rollout and flow.

A `Collector` is called once per layer and kind with that layer's weights (H, Tq, Tk), float32,
in the order the model runs its layers. It hands `<kind>/layer<l>` (l from 1) to its store
(`sources.store`: floats, bytes, or straight into the npz), keeps what the store returns in `kept`
(kind -> its layers, the views' `layers`) and, besides, only what the summaries need:

- `rollout` (Abnar & Zuidema 2020; `attnkit.analysis.rollout`) of the self-attention kind
  (`encoder`, or `self` for a decoder-only model), folded in layer by layer: R <- A'_l R, so it
  holds one (T, T) matrix, never the layers. For an encoder-decoder model `rollout` is the last
  decoder layer's cross attention composed with the encoder's rollout, C R_enc (T_tgt, S)
  (`cross_rollout`), and `rollout_encoder` the encoder's own (S, S).
- `flow` (only when asked) keeps each layer's head mean (T, T) and runs `attnkit.analysis.flow.attention_flow`
  at the end, over the same kind as the rollout, for the rows `flow` names: "explained" (`--flow`), the
  row of the explained output (`output`, below) when it is a query row of that kind (a classifier's
  first token, a language model's last position; with words, the pieces of its word, merged), else
  every row (an encoder-decoder model's output reads every encoder row through cross attention, c_t F_enc;
  a mean over rows needs them all); "all" (`--flow all`), every row, T^2 maximum flows, with a progress
  bar (`attnkit.progress.counter`) when there is more than one row. `flow` (Q, T) holds the rows
  computed, `flow/rows` (Q,) which query rows (as written) they are.

With word groups (`--words`), each layer is written with its pieces merged into words
(`viz.words.merge_matrix`) while rollout and flow are computed on the pieces and merged at the end.

`output` = (kind, row) is the output being explained and the query row it is read at (as written).
The collector keeps what the attributions of that output are compared with (`sources.agreement`):
row `row` of each layer of `kind` (head mean, as written), of `rollout`, and of `flow` (for an
encoder-decoder model, that cross-attention row of the last layer composed with the encoder's flow,
c_t F_enc, as `rollout` is c_t R_enc); `finish` leaves them in `compared`, name -> (S,). A row of
None averages the rows (a classifier's hops: one output for all of them).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from attnkit import extras
from attnkit.analysis.rollout import head_mean, with_residual
from attnkit.sources.store import Store
from attnkit.viz.attention_view import SUMMARY_KINDS, AttentionView
from attnkit.viz.words import merge_matrix

SELF_KINDS = ("encoder", "self")  # the kinds that roll out: square self-attention over the input


@dataclass
class Groups:
    """Word groups of one kind's queries and keys (piece indices per word)."""

    rows: Sequence[Sequence[int]]
    cols: Sequence[Sequence[int]]


@dataclass
class Collector:
    """Receives (kind, weights (H, Tq, Tk)) layer by layer; `finish` writes rollout (and flow)."""

    store: Store
    flow: str | None = None  # which rows of attention flow: "explained", "all" (`options.FLOWS`), None: no flow
    words: dict[str, Groups] = field(default_factory=dict)  # kind -> its word groups (empty: pieces)
    layers: dict[str, int] = field(default_factory=dict)  # kind -> layers written
    kept: dict[str, list] = field(default_factory=dict)  # kind -> what the store kept of each layer
    summaries: dict[str, Any] = field(default_factory=dict)  # rollout, rollout_encoder, flow -> what the store kept
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # kind -> (H, Tq, Tk) of its latest layer
    output: tuple[str, int | None] | None = None  # (kind, query row as written; None: every row averaged) of the explained output
    compared: dict[str, Tensor] = field(default_factory=dict)  # name -> (S,): that row per layer, of rollout and flow
    flow_rows: list[int] = field(default_factory=list)  # the query rows (as written) of `flow`, once finished
    _rollout: Tensor | None = None  # (T, T): A'_l ... A'_1 of the self kind so far
    _cross: Tensor | None = None  # (T_tgt, S): the head mean of the latest cross-attention layer
    _means: list[Tensor] = field(default_factory=list)  # (1, T, T) per self layer, for flow

    def __post_init__(self) -> None:
        if self.flow:
            extras.require("attention flow (--flow)", "scipy")  # before the forward pass

    def __call__(self, kind: str, weights: Tensor) -> None:
        weights = weights.detach().to("cpu", torch.float32)  # (H, Tq, Tk)
        self.layers[kind] = self.layers.get(kind, 0) + 1
        self.shapes[kind] = tuple(weights.shape)
        groups = self.words.get(kind)
        out = weights if groups is None else merge_matrix(weights, groups.rows, groups.cols)  # (H, Wq, Wk)
        self.kept.setdefault(kind, []).append(self.store.layer(f"{kind}/layer{self.layers[kind]}", out.numpy()))
        if self.output is not None and self.output[0] == kind:
            self.compared[f"{kind}/layer{self.layers[kind]}"] = self._row(head_mean(out))  # (Wk,)
        if kind in SELF_KINDS and weights.size(-1) == weights.size(-2):
            mean = head_mean(weights)  # (T, T)
            a = with_residual(mean)  # (T, T)
            self._rollout = a if self._rollout is None else a @ self._rollout  # (T, T)
            if self.flow:
                self._means.append(mean.unsqueeze(0))  # (1, T, T)
        elif kind == "cross":
            self._cross = head_mean(weights)  # (T_tgt, S)

    @property
    def self_kind(self) -> str | None:
        """The kind that rolls out: `encoder`, else `self` (None: neither)."""
        return next((k for k in SELF_KINDS if k in self.layers), None)

    def _merged(self, m: Tensor, rows: str, cols: str) -> Tensor:
        if rows not in self.words:
            return m
        return merge_matrix(m, self.words[rows].rows, self.words[cols].cols)

    def _keep(self, name: str, m: Tensor) -> None:
        self.summaries[name] = self.store.summary(name, m.numpy())

    def finish(self) -> list[str]:
        """Keep `rollout` (and `rollout_encoder`, `flow`; `flow_rows` the query rows of flow); returns their names."""
        written = []
        if self._rollout is None:
            return written
        self_kind = self.self_kind
        cross = self._cross is not None and self._cross.size(-1) == self._rollout.size(0)
        if cross:
            rollout = self._merged(self._cross @ self._rollout, "cross", self_kind)  # (T_tgt, S)
            self._keep("rollout", rollout)
            self._keep("rollout_encoder", self._merged(self._rollout, self_kind, self_kind))  # (S, S)
            written += ["rollout", "rollout_encoder"]
        else:
            rollout = self._merged(self._rollout, self_kind, self_kind)  # (T, T)
            self._keep("rollout", rollout)
            written.append("rollout")
        flow = None
        if self.flow:
            flow = self._flow(self_kind)  # (Q, T)
            self._keep("flow", flow)
            written.append("flow")
        self._compare(rollout, flow, cross)
        return written

    def summary_views(self, views: list[AttentionView]) -> list[AttentionView]:
        """The summaries kept (`finish`) as views, labelled from the kinds' `views`: an encoder-decoder `rollout` over
        the cross queries x the input, the others (and `flow`, over the query rows it holds) over the self kind's."""
        own = next((v for v in views if v.kind == self.self_kind), None)
        cross = next((v for v in views if v.kind == "cross"), None)
        out = []
        for kind in (k for k in SUMMARY_KINDS if k.name in self.summaries):
            if kind.name == "rollout" and cross is not None and "rollout_encoder" in self.summaries:
                rows, cols = cross.rows, cross.cols
            elif kind.name == "flow":
                rows, cols = [own.rows[i] for i in self.flow_rows], own.cols
            else:
                rows, cols = own.rows, own.cols
            out.append(kind.view(list(rows), list(cols), [self.summaries[kind.name]]))
        return out

    def _flow(self, self_kind: str) -> Tensor:
        """Attention flow of the rows `flow` asks for (module docstring), merged into words if asked; sets `flow_rows`."""
        from attnkit.analysis.flow import attention_flow
        from attnkit.progress import counter

        groups = self.words.get(self_kind)
        kind, row = self.output or (None, None)
        if self.flow == "all" or kind != self_kind or row is None:  # every row
            pieces, row_groups = None, (None if groups is None else groups.rows)
            self.flow_rows = list(range(len(groups.rows) if groups else self._means[0].size(-1)))
        else:  # the explained row: its word's pieces, averaged into one row
            pieces = list(groups.rows[row]) if groups else [row]
            row_groups, self.flow_rows = [list(range(len(pieces)))], [row]
        n = self._means[0].size(-1) if pieces is None else len(pieces)
        with counter(n, "attention flow", unit="row") if n > 1 else nullcontext() as bar:
            flow = attention_flow(self._means, queries=pieces, progress=None if bar is None else bar.update)  # (P, T)
        return flow if groups is None else merge_matrix(flow, row_groups, groups.cols)  # (Q, W)

    def _compare(self, rollout: Tensor, flow: Tensor | None, cross: bool) -> None:
        """`compared`'s rollout and flow rows of the output (module docstring)."""
        if self.output is None or self.output[0] not in self.layers or (self.output[0] == "cross") != cross:
            return
        kind = self.output[0]
        self.compared["rollout"] = self._row(rollout)  # (S,)
        if flow is not None:
            last = self.compared[f"{kind}/layer{self.layers[kind]}"]  # (S,): the last layer's row
            self.compared["flow"] = last @ flow if cross else self._row(flow, self.flow_rows)  # (S,)

    def _row(self, m: Tensor, rows: Sequence[int] | None = None) -> Tensor:
        """(Tq, Tk) -> (Tk,): the output's row, or the mean of the rows (`output` row None); `rows`: the query
        rows that m's rows are (default: all of them, in order)."""
        if self.output[1] is None:
            return m.mean(dim=0)  # (Tk,)
        return m[self.output[1] if rows is None else list(rows).index(self.output[1])]  # (Tk,)
