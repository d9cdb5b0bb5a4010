"""Input x gradient and integrated gradients on embeddings (captum), and the completeness check."""

import pytest
import torch

from attnkit.analysis.attribution import STEPS, input_x_gradient, input_x_gradient_and_integrated_gradients, integrated_gradients
from attnkit.errors import AttnkitError

pytest.importorskip("captum")


def small_network(seed=0, D=8):
    """A nonlinear score of (N, T, D) embeddings: a tanh MLP per token, attention-pooled, one logit."""
    torch.manual_seed(seed)
    w1, w2, q = torch.randn(D, 16), torch.randn(16), torch.randn(D)

    def f(x):  # (N, T, D) -> (N,)
        alpha = torch.softmax(x @ q, dim=-1)  # (N, T)
        h = torch.tanh(x @ w1) @ w2  # (N, T)
        return (alpha * h).sum(dim=-1)  # (N,)

    return f


def test_input_x_gradient_of_a_linear_score_is_x_times_w():
    w = torch.tensor([1.0, -2.0, 0.5])
    x = torch.tensor([[1.0, 1.0, 1.0], [2.0, 0.0, -4.0]])  # (T=2, D=3)
    got = input_x_gradient(lambda e: (e @ w).sum(dim=-1), x)
    assert torch.allclose(got.scores, torch.tensor([1 - 2 + 0.5, 2 - 2.0]))
    assert got.f_input == pytest.approx(-0.5 + 0.0)


@pytest.mark.parametrize("seed", range(3))
def test_integrated_gradients_completeness_within_one_percent(seed):
    f = small_network(seed)
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(seed + 10))  # (T, D)
    got = integrated_gradients(f, x)
    assert got.steps == STEPS and got.scores.shape == (5,)
    target = f(x[None]).item() - f(torch.zeros(1, 5, 8)).item()
    assert got.scores.sum().item() == pytest.approx(target, rel=0.01)
    assert got.relative_error < 0.01


def test_integrated_gradients_of_a_linear_score_equals_input_x_gradient():
    # For f linear, IG with a zero baseline is exactly x * w.
    w = torch.tensor([1.0, -2.0, 0.5])
    f = lambda e: (e @ w).sum(dim=-1)  # noqa: E731
    x = torch.tensor([[1.0, 1.0, 1.0], [2.0, 0.0, -4.0]])
    assert torch.allclose(integrated_gradients(f, x).scores, input_x_gradient(f, x).scores, atol=1e-5)


def test_too_few_steps_fail_the_check_with_one_line():
    # A sharply curved score: 1 Gauss-Legendre point misses the integral by far more than 1%.
    f = lambda e: (e**4).sum(dim=(-2, -1))  # noqa: E731
    x = torch.full((2, 2), 1.5)
    with pytest.raises(AttnkitError, match=r"integrated gradients: .* at 1 steps: use more steps"):
        integrated_gradients(f, x, steps=1)
    assert integrated_gradients(f, x, steps=1, check=False).relative_error > 0.01


def test_default_steps_double_until_complete():
    # tanh(k (sum(x) - 1)) along the path from 0 to x (sum 2) is a step at the midpoint, sharper with k:
    # measured relative errors at 50 / 100 / 200 points: k = 40: 29% / 1.2% / 0.001%, so the check passes at 200.
    f = lambda e: torch.tanh(40 * (e.sum(dim=(-2, -1)) - 1.0))  # noqa: E731
    x = torch.full((2, 2), 0.5)
    got = integrated_gradients(f, x)
    assert got.steps == 200 and got.relative_error < 0.01
    with pytest.raises(AttnkitError, match="at 100 steps"):
        integrated_gradients(f, x, steps=100)


def counted(f):
    """f, counting its calls and the rows it is given."""
    calls = []

    def run(e):
        calls.append(e.size(0))
        return f(e)

    run.calls = calls
    return run


@pytest.mark.parametrize("seed", range(2))
def test_one_pass_input_x_gradient_and_integrated_gradients_are_captums(seed):
    """The one-pass pair against captum's InputXGradient and IntegratedGradients, each run on its own (the old path)."""
    f = counted(small_network(seed))
    x = torch.randn(5, 8, generator=torch.Generator().manual_seed(seed + 10))  # (T, D)
    ixg, ig = input_x_gradient_and_integrated_gradients(f, x)
    assert f.calls == [STEPS + 2]  # x', x and the path: one forward (and one backward)
    want_ixg, want_ig = input_x_gradient(f, x), integrated_gradients(f, x, check=False)
    assert torch.allclose(ixg.scores, want_ixg.scores, atol=1e-6, rtol=0) and ixg.f_input == pytest.approx(want_ixg.f_input, abs=1e-6)
    assert torch.allclose(ig.scores, want_ig.scores, atol=1e-6, rtol=0) and ig.steps == want_ig.steps == STEPS
    assert (ig.f_input, ig.f_baseline, ig.delta) == pytest.approx((want_ig.f_input, want_ig.f_baseline, want_ig.delta), abs=1e-6)


def test_one_pass_steps_double_as_integrated_gradients_steps():
    f = counted(lambda e: torch.tanh(40 * (e.sum(dim=(-2, -1)) - 1.0)))  # the step of test_default_steps_double_until_complete
    x = torch.full((2, 2), 0.5)
    ixg, ig = input_x_gradient_and_integrated_gradients(f, x)
    assert f.calls == [52, 102, 202]  # 50, 100, 200 path points, each with x' and x
    want = integrated_gradients(f, x, check=False)
    assert ig.steps == want.steps == 200
    assert torch.allclose(ig.scores, want.scores, atol=1e-6, rtol=0) and ig.relative_error == pytest.approx(want.relative_error, abs=1e-6)
    assert torch.allclose(ixg.scores, input_x_gradient(f, x).scores, atol=1e-6, rtol=0)


def test_one_pass_takes_a_baseline_and_a_step_count_as_captum_does():
    """A given baseline and step count (inseq's [UNK] embedding and n_steps, benchmarks/vs_tools.py): one pass, captum's figures."""
    f = counted(small_network(3))
    x, base = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(7)).unbind(0)  # (T, D) each
    _, ig = input_x_gradient_and_integrated_gradients(f, x, baseline=base, steps=20)
    assert f.calls == [22]
    want = integrated_gradients(f, x, baseline=base, steps=20, check=False)
    assert torch.allclose(ig.scores, want.scores, atol=1e-6, rtol=0) and ig.steps == 20
    assert (ig.f_baseline, ig.delta) == pytest.approx((want.f_baseline, want.delta), abs=1e-6)
