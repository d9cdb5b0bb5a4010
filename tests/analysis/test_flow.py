"""Attention flow: hand-computed cases, and the networkx definition attnkit had before scipy
(`networkx_flow` in benchmarks/flow_speed.py: `nx.maximum_flow_value` per (query, token) pair) on
random attention of several sizes, zero rows, causal masks and chosen queries, within 1e-6."""

import sys

import pytest
import torch

from attnkit.analysis.flow import SCALE_RANGE, attention_flow, integer_capacities
from attnkit.errors import AttnkitError
from benchmark_scripts import load_benchmark

pytest.importorskip("scipy")
pytest.importorskip("networkx")
networkx_flow = load_benchmark("flow_speed").networkx_flow

A1 = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
A2 = torch.tensor([[0.0, 1.0], [0.0, 1.0]])
A3 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])


def random_layers(L: int, H: int, T: int, seed: int, sharp: float = 2.0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.softmax(torch.randn(H, T, T, generator=g) * sharp, dim=-1) for _ in range(L)]  # (H, T, T) each


def assert_same_as_networkx(layers, **kw) -> None:
    for normalise in (False, True):
        expected = networkx_flow(layers, normalise=normalise, **kw)  # (Tq, T) float64
        got = attention_flow(layers, normalise=normalise, **kw)
        assert got.dtype == torch.float32 and got.shape == expected.shape
        assert (got.double() - expected).abs().max() <= 1e-6


def test_flow_of_the_hand_case():
    # A'_1 = [[1, 0], [.5, .5]], A'_2 = [[.5, .5], [0, 1]], A'_3 = I (see test_rollout.py). Edges (l, q) -> (l-1, k).
    # From (3, 0): only (2, 0) (cap 1); (2, 0) -> (1, 0) .5 -> (0, 0) 1, and (2, 0) -> (1, 1) .5 -> (0, 0) .5:
    #   flow to input 0 = .5 + .5 = 1;  to input 1: (2, 0) -> (1, 1) .5 -> (0, 1) .5 = .5.
    # From (3, 1): (2, 1) (cap 1) -> (1, 1) (cap 1) -> (0, 0) .5 and (0, 1) .5: flows .5 and .5.
    layers = [a[None] for a in (A1, A2, A3)]  # (H=1, T, T)
    raw = attention_flow(layers, normalise=False)
    assert torch.allclose(raw, torch.tensor([[1.0, 0.5], [0.5, 0.5]]), atol=1e-9)
    # Rows normalised as the reference code: [2/3, 1/3] (rollout gives [.75, .25]) and [.5, .5].
    assert torch.allclose(attention_flow(layers), torch.tensor([[2 / 3, 1 / 3], [0.5, 0.5]]), atol=1e-7)
    assert torch.allclose(attention_flow(layers, queries=[1]), torch.tensor([[0.5, 0.5]]), atol=1e-7)
    assert_same_as_networkx(layers)


def test_a_bottleneck_bounds_the_flow_where_rollout_sums_the_paths():
    # Without the residual. From (2, 0): .5 to (1, 0), .5 to (1, 1); (1, 0) -> (0, 0) 1; (1, 1) -> (0, 0) .2, (0, 1) .8.
    # To input 0: .5 through (1, 0) and min(.5, .2) through (1, 1) = .7; to input 1: min(.5, .8) = .5 (rollout: .6, .4).
    # From (2, 1): 1 to (1, 1), then .2 and .8.
    a1 = torch.tensor([[1.0, 0.0], [0.2, 0.8]])[None]  # (1, 2, 2)
    a2 = torch.tensor([[0.5, 0.5], [0.0, 1.0]])[None]
    raw = attention_flow([a1, a2], residual=False, normalise=False)
    assert torch.allclose(raw, torch.tensor([[0.7, 0.5], [0.2, 0.8]]), atol=1e-8)
    assert_same_as_networkx([a1, a2], residual=False)


@pytest.mark.parametrize(("L", "H", "T", "seed"), [(1, 2, 4, 0), (2, 3, 5, 1), (3, 2, 4, 2), (4, 4, 8, 3), pytest.param(6, 2, 12, 4, marks=pytest.mark.slow)])
def test_flow_equals_the_networkx_definition_on_random_attention(L, H, T, seed):
    layers = random_layers(L, H, T, seed)
    assert_same_as_networkx(layers)
    assert_same_as_networkx(layers, residual=False)
    assert torch.allclose(attention_flow(layers).sum(dim=-1), torch.ones(T), atol=1e-6)


def test_chosen_queries_and_heads_are_those_rows_of_every_row():
    layers = random_layers(3, 4, 6, seed=5)
    every = attention_flow(layers)
    assert torch.equal(attention_flow(layers, queries=[4, 0, 4]), every[[4, 0, 4]])
    assert_same_as_networkx(layers, queries=[5, 2], heads=[1, 3])


def test_rows_that_are_all_zero_stay_zero():
    layers = random_layers(3, 2, 5, seed=6)
    layers[1][:, 2] = 0.0  # query 2 of layer 2 attends nowhere
    layers[2][:, 4] = 0.0  # and last-layer query 4
    raw = attention_flow(layers, residual=False, normalise=False)
    assert (raw[4] == 0).all() and not torch.isnan(attention_flow(layers, residual=False)).any()
    assert_same_as_networkx(layers, residual=False)
    zero = [torch.zeros(1, 3, 3)] * 2  # no edge at all: every flow 0
    assert torch.equal(attention_flow(zero, residual=False), torch.zeros(3, 3))


def test_causal_attention_reaches_only_earlier_tokens():
    layers = random_layers(3, 2, 6, seed=7)
    keep = torch.ones(6, 6).tril().bool()  # (T, T)
    layers = [a.masked_fill(~keep, 0.0) / a.masked_fill(~keep, 0.0).sum(-1, keepdim=True) for a in layers]
    flow = attention_flow(layers, normalise=False)
    assert (flow.triu(1) == 0).all()
    assert_same_as_networkx(layers)


def test_both_scipy_methods_give_the_same_values():
    layers = random_layers(3, 2, 6, seed=8)
    assert torch.equal(attention_flow(layers, method="edmonds_karp"), attention_flow(layers))
    with pytest.raises(AttnkitError, match=r"^attention flow: method 'push' is not one of dinic, edmonds_karp$"):
        attention_flow(layers, method="push")


def test_capacities_fit_int32_whatever_the_weights():
    caps, scale = integer_capacities([torch.full((4, 4), 3.0), torch.eye(4)])
    assert scale == SCALE_RANGE / 12.0 and max(int(c.sum(axis=1).max()) for c in caps) <= SCALE_RANGE < 2**31 - 1


def test_progress_is_called_once_per_row_and_bad_queries_are_one_line():
    layers = random_layers(2, 2, 5, seed=9)
    calls = []
    attention_flow(layers, queries=[0, 3], progress=calls.append)
    assert calls == [1, 1]
    with pytest.raises(AttnkitError, match=r"^attention flow: queries \[0, 5\] must be positions 0\.\.4$"):
        attention_flow(layers, queries=[0, 5])


def test_missing_scipy_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.sparse.csgraph", None)  # import scipy.sparse.csgraph now raises ImportError
    with pytest.raises(AttnkitError, match=r"^attention flow needs scipy, which is not installed: pip install 'attnkit\[analysis\]'$"):
        attention_flow([A1[None]])
