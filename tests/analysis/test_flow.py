"""Attention flow: the hand-computed 3-layer case, and networkx's maximum flow on random graphs."""

import sys

import pytest
import torch

from attnkit.analysis.flow import attention_flow
from attnkit.analysis.rollout import with_residual
from attnkit.errors import AttnkitError

nx = pytest.importorskip("networkx")

A1 = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
A2 = torch.tensor([[0.0, 1.0], [0.0, 1.0]])
A3 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])


def test_flow_of_the_hand_case():
    # A'_1 = [[1, 0], [.5, .5]], A'_2 = [[.5, .5], [0, 1]], A'_3 = I (see test_rollout.py). Edges (l, q) -> (l-1, k).
    # From (3, 0): only (2, 0) (cap 1); (2, 0) -> (1, 0) .5 -> (0, 0) 1, and (2, 0) -> (1, 1) .5 -> (0, 0) .5:
    #   flow to input 0 = .5 + .5 = 1;  to input 1: (2, 0) -> (1, 1) .5 -> (0, 1) .5 = .5.
    # From (3, 1): (2, 1) (cap 1) -> (1, 1) (cap 1) -> (0, 0) .5 and (0, 1) .5: flows .5 and .5.
    layers = [a[None] for a in (A1, A2, A3)]  # (H=1, T, T)
    raw = attention_flow(layers, normalise=False)
    assert torch.allclose(raw, torch.tensor([[1.0, 0.5], [0.5, 0.5]]))
    # Rows normalised as the reference code: [2/3, 1/3] (rollout gives [.75, .25]) and [.5, .5].
    assert torch.allclose(attention_flow(layers), torch.tensor([[2 / 3, 1 / 3], [0.5, 0.5]]))
    assert torch.allclose(attention_flow(layers, queries=[1]), torch.tensor([[0.5, 0.5]]))


@pytest.mark.parametrize("seed", range(4))
def test_flow_equals_networkx_maximum_flow_on_random_graphs(seed):
    # An independent graph per case: integer-indexed nodes, built from A' with plain loops.
    g = torch.Generator().manual_seed(seed)
    L, H, T = 3, 2, 4
    layers = [torch.softmax(torch.randn(H, T, T, generator=g) * 2, dim=-1) for _ in range(L)]
    graph = nx.DiGraph()
    for l, a in enumerate(layers, start=1):
        aug = with_residual(a.mean(dim=0))
        for q in range(T):
            for k in range(T):
                graph.add_edge(l * T + q, (l - 1) * T + k, capacity=float(aug[q, k]))
    expected = torch.tensor([[nx.maximum_flow_value(graph, L * T + q, k) for k in range(T)] for q in range(T)])
    got = attention_flow(layers, normalise=False)
    assert torch.allclose(got, expected.float(), atol=1e-6)
    assert torch.allclose(attention_flow(layers).sum(dim=-1), torch.ones(T), atol=1e-6)


def test_missing_networkx_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "networkx", None)  # import networkx now raises ImportError
    with pytest.raises(AttnkitError, match=r"^attention flow needs networkx, which is not installed: pip install 'attnkit\[analysis\]'$"):
        attention_flow([A1[None]])
