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
calls `nx.maximum_flow_value` with networkx's Edmonds-Karp per (output node, input node) pair and
normalises each row). Where it departs: edges of capacity 0 are left out of the graph (their
reference builds the graph with `from_numpy_matrix`, which leaves them out too); the maximum flow is
scipy's C routine (`scipy.sparse.csgraph.maximum_flow`, Dinic's algorithm) on capacities scaled to
integers instead of networkx on floats, the same value within the rounding bound below
(tests/analysis/test_flow.py holds it to networkx's, as attnkit computed it before, within 1e-6);
only the rows asked for are computed (theirs fills every layer's nodes); a row whose flows are all
0 stays 0 instead of dividing by zero.

Integer capacities: scipy takes integer capacities only and casts them to int32 (ITYPE) without a
check, so a capacity of 2^31 or more would wrap around. Every capacity is round(A'[q, k] * scale)
with scale = 2^30 / (the largest row sum of any A'). No edge, no node's throughput and no flow value
(a source's flow is at most its row sum) then exceeds 2^30 + T / 2, well inside int32. Rounding
moves each capacity by at most 0.5 / scale (2^-31 ~ 4.7e-10 for row-stochastic A'), so a flow value
moves by at most that times the number of edges of a minimum cut (of either capacities): under
1e-6 while such a cut has fewer than 2,000 edges (the cut around the source has T). In the
test's cases the results differ from networkx's by less than their own float32 rounding (1e-7).

Dinic rather than Edmonds-Karp (scipy offers both, with the same values): Edmonds-Karp augments one
shortest path per breadth-first search of the whole graph, and through dense attention a flow
spreads over many paths; Dinic augments every shortest path of one length per search (a blocking
flow). benchmarks/flow_speed.py measures both on the same graph (docs/analysis.md has the figures).

Each maximum flow runs on the graph seen from its source: the edges out of the nodes (L, q) reaches
(through edges of capacity > 0), so the other last-layer positions and, with causal attention, the
later positions fall out; an input token the source does not reach gets flow 0 without a call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from attnkit.analysis.rollout import augmented
from attnkit.errors import AttnkitError
from attnkit.extras import load

SCALE_RANGE = 2**30  # the largest row sum, scaled: half of int32's range (module docstring)
METHODS = ("dinic", "edmonds_karp")  # scipy's maximum-flow algorithms


def integer_capacities(mats: Sequence[Tensor]) -> tuple[list[np.ndarray], float]:
    """Per layer A' (T, T) -> (its int32 capacities round(A' * scale), scale); weights below 0 count as 0."""
    weights = [np.maximum(m.double().numpy(), 0.0) for m in mats]  # (T, T) each
    largest = max(float(w.sum(axis=1).max()) for w in weights)
    scale = SCALE_RANGE / largest if largest > 0 else 0.0
    return [np.rint(w * scale).astype(np.int32) for w in weights], scale


def source_graph(caps: Sequence[np.ndarray], q: int):
    """The layered graph seen from node (L, q), as a CSR matrix over nodes l * T + i, and the input
    tokens it reaches (T,) bool: the edges out of every node (L, q) reaches, nothing else."""
    from scipy.sparse import csr_array

    L, T = len(caps), caps[0].shape[0]
    counts = np.zeros((L + 1, T), dtype=np.int64)  # edges out of each node
    heads, data = [], []  # per layer, from 1 up: each edge's head node, capacity
    reach = np.zeros(T, dtype=bool)  # (T,)
    reach[q] = True
    for l in range(L, 0, -1):
        a = np.where(reach[:, None], caps[l - 1], 0)  # (T, T): the edges out of the reached nodes of layer l
        i, k = np.nonzero(a)
        counts[l] = np.bincount(i, minlength=T)
        heads.insert(0, (l - 1) * T + k)
        data.insert(0, a[i, k])
        reach = (a > 0).any(axis=0)  # (T,): the nodes of layer l - 1 reached
    indptr = np.concatenate([[0], np.cumsum(counts.ravel())]).astype(np.int32)  # ((L + 1) T + 1,)
    n = (L + 1) * T
    graph = csr_array((np.concatenate(data), np.concatenate(heads).astype(np.int32), indptr), shape=(n, n))
    return graph, reach


def attention_flow(
    layers: Sequence[Tensor],
    heads: Sequence[int] | None = None,
    residual: bool = True,
    queries: Sequence[int] | None = None,
    normalise: bool = True,
    method: str = "dinic",
    progress: Callable[[int], None] | None = None,
) -> Tensor:
    """Attention flow from last-layer positions to input tokens.

    Args:
        layers: self-attention per layer, (H, T, T), input layer first.
        heads: the heads to average (all when None).
        residual: use A' = 0.5 A + 0.5 I (as the paper); False uses the head mean alone.
        queries: the last-layer positions to compute (all when None).
        normalise: divide each row by its sum (as the reference code).
        method: scipy's algorithm, "dinic" or "edmonds_karp" (the same values; Dinic is the fast one here).
        progress: called with 1 after each row.

    Returns:
        (Tq, T) flows, Tq = len(queries) or T.
    """
    maximum_flow = load("scipy.sparse.csgraph", "attention flow").maximum_flow
    if method not in METHODS:
        raise AttnkitError(f"attention flow: method {method!r} is not one of {', '.join(METHODS)}")
    caps, scale = integer_capacities(augmented(layers, heads, residual))
    L, T = len(caps), caps[0].shape[0]
    rows = list(range(T)) if queries is None else list(queries)
    if any(not 0 <= q < T for q in rows):
        raise AttnkitError(f"attention flow: queries {rows} must be positions 0..{T - 1}")
    out = np.zeros((len(rows), T))  # (Tq, T)
    for r, q in enumerate(rows):
        graph, reached = source_graph(caps, q)
        for k in np.flatnonzero(reached):
            out[r, k] = maximum_flow(graph, L * T + q, int(k), method=method).flow_value / scale
        if progress is not None:
            progress(1)
    if normalise:
        total = out.sum(axis=-1, keepdims=True)  # (Tq, 1)
        out = np.divide(out, total, out=out, where=total > 0)  # (Tq, T)
    return torch.from_numpy(out).float()  # (Tq, T)
