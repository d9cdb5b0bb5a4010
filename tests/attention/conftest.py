"""Shared checks for tests/attention: the mask rule every attention variant must follow."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch


def _assert_weights_follow_mask_rule(weights: torch.Tensor, keep: torch.Tensor | None) -> None:
    """Weights are finite, sum to 1 over kept keys, are exactly 0 on masked keys and on empty rows."""
    assert torch.isfinite(weights).all(), "weights contain NaN or inf"
    if keep is None:
        keep = torch.ones_like(weights, dtype=torch.bool)
    keep = keep.expand_as(weights)
    assert (weights[~keep] == 0).all(), "a masked key got non-zero weight"
    has_key = keep.any(dim=-1)
    sums = weights.sum(dim=-1)
    tol = 1e-12 if weights.dtype == torch.float64 else 1e-5
    torch.testing.assert_close(sums[has_key], torch.ones_like(sums[has_key]), atol=tol, rtol=0)
    assert (weights[~has_key] == 0).all(), "a row without valid key is not all zeros"


@pytest.fixture
def assert_mask_rule() -> Callable[[torch.Tensor, torch.Tensor | None], None]:
    """``assert_mask_rule(weights, keep)``: the mask rule of docs/conventions.md holds."""
    return _assert_weights_follow_mask_rule


@pytest.fixture(autouse=True)
def _seed_and_one_thread():
    """Seed every test and run it on one intra-op thread.

    The tensors here are tiny, so a second thread only adds synchronisation; when another process
    holds the other core, each parallel region waits for it (measured: a 0.03 ms SDPA call took 8 ms
    and the folder took 35 s instead of 4 s).
    """
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
