"""Attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers", sec. 4).

The layers form a directed acyclic graph: nodes (l, i) for every layer l = 0..L (0: the input
tokens) and position i; an edge runs from (l, q) to (l - 1, k) with capacity A'_l[q, k], where
A' = 0.5 A + 0.5 I (rows renormalised) is the head-mean attention with the residual term, as in
`rollout`. The attention flow from last-layer position q to input token k is the value of the
maximum flow from node (L, q) to node (0, k); each row is then divided by its sum, so that rows
compare with rollout's. Unlike rollout, which sums over every path, flow is bounded by the
narrowest cut between the two nodes.

This follows the authors' reference code (github.com/samiraabnar/attention_flow,
`attention_graph_util.py`: `get_adjmat` builds the same layered adjacency, `compute_flows`
calls `nx.maximum_flow_value` per (output node, input node) pair and normalises each row). Where
it departs: edges of capacity 0 are left out of the graph (their reference builds the graph with
`from_numpy_matrix`, which leaves them out too); the flow algorithm is networkx's default
(preflow-push) rather than Edmonds-Karp, which gives the same maximum value; only the last layer's
rows are computed (theirs fills every layer's nodes); a row whose flows are all 0 stays 0 instead
of dividing by zero.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from attnkit.analysis.rollout import augmented
from attnkit.extras import load


def flow_graph(mats: Sequence[Tensor]):
    """The layered graph of `mats` (per layer (T, T), input layer first) as a `networkx.DiGraph`.

    Node `(l, i)` is position i after layer l (l = 0: the input tokens); the edge `(l, q) -> (l - 1, k)`
    has `capacity` mats[l - 1][q, k]; edges of capacity 0 are left out.
    """
    nx = load("networkx", "attention flow")
    graph = nx.DiGraph()
    for l, a in enumerate(mats, start=1):
        graph.add_nodes_from((l, i) for i in range(a.size(0)))
        for q, k in torch.nonzero(a > 0).tolist():
            graph.add_edge((l, q), (l - 1, k), capacity=float(a[q, k]))
    graph.add_nodes_from((0, i) for i in range(mats[0].size(1)))
    return graph


def attention_flow(
    layers: Sequence[Tensor],
    heads: Sequence[int] | None = None,
    residual: bool = True,
    queries: Sequence[int] | None = None,
    normalise: bool = True,
) -> Tensor:
    """Attention flow from last-layer positions to input tokens.

    Args:
        layers: self-attention per layer, (H, T, T), input layer first.
        heads: the heads to average (all when None).
        residual: use A' = 0.5 A + 0.5 I (as the paper); False uses the head mean alone.
        queries: the last-layer positions to compute (all when None).
        normalise: divide each row by its sum (as the reference code).

    Returns:
        (Tq, T) flows, Tq = len(queries) or T.
    """
    nx = load("networkx", "attention flow")
    mats = augmented(layers, heads, residual)
    graph = flow_graph(mats)
    L, T = len(mats), mats[0].size(0)
    rows = list(range(T)) if queries is None else list(queries)
    out = torch.zeros(len(rows), T, dtype=torch.float64)  # (Tq, T)
    for r, q in enumerate(rows):
        for k in range(T):
            out[r, k] = nx.maximum_flow_value(graph, (L, q), (0, k))
    if normalise:
        total = out.sum(dim=-1, keepdim=True)  # (Tq, 1)
        out = torch.where(total > 0, out / total.clamp_min(1e-300), out)  # (Tq, T)
    return out.float()  # (Tq, T)
