"""Gradient attributions on the input embeddings, through captum.

- Input x gradient (Shrikumar et al. 2016; the gradient-based attribution that Jain & Wallace 2019
  compare with attention): a_i = x_i * df/dx_i, summed over the embedding width per token.
- Integrated gradients (Sundararajan et al. 2017, eq. 1):
  IG_i(x) = (x_i - x'_i) * integral_0^1 df(x' + a (x - x'))/dx_i da, with the baseline x' (zeros
  unless given), the integral by captum's Gauss-Legendre rule at `steps` points. Completeness
  (their Proposition 1): sum_i IG_i(x) = f(x) - f(x'). captum returns the difference of the two
  sides as the convergence delta; `integrated_gradients` checks |delta| <= 1% of |f(x) - f(x')| at
  the step count used and raises if not. By default (`steps=None`) it starts at `STEPS` = 50 and
  doubles the count up to `MAX_STEPS` = 800 until the check passes; `Attribution.steps` says which
  count did. Random small networks pass at 50; a trained Transformer's log-probabilities, from a
  zero baseline, needed up to 500 for some outputs (toy-reverse run: 14 of 69 outputs over 1% at 50,
  2 at 100, none at 500).

`f` maps a batch of embedded inputs (N, T, D) to one score per input (N,): the logit of a class,
the log-probability of a generated or next token. For a model that embeds inside `forward`, write f
to run the model from its embeddings (or replace the embedding output with a forward hook).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnkit.errors import AttnkitError
from attnkit.extras import load

STEPS = 50  # Gauss-Legendre points tried first; the tests check completeness within 1% at this count
MAX_STEPS = 800  # the last count tried before the check fails
TOLERANCE = 0.01

ScoreFn = Callable[[Tensor], Tensor]


@dataclass(frozen=True)
class Attribution:
    """Per-token scores of one input and, for integrated gradients, its completeness figures.

    `scores` (T,) sums the embedding axis (`reduce="sum"`, the sum that completeness is about)
    or takes its L2 norm (`reduce="norm"`). `delta` = sum of attributions - (f(x) - f(x')).
    """

    scores: Tensor
    f_input: float
    f_baseline: float | None = None
    delta: float | None = None
    steps: int | None = None

    @property
    def relative_error(self) -> float | None:
        """|delta| / |f(x) - f(x')| (None for input x gradient)."""
        if self.delta is None or self.f_baseline is None:
            return None
        return abs(self.delta) / max(abs(self.f_input - self.f_baseline), 1e-12)


def _batched(embeddings: Tensor) -> Tensor:
    if embeddings.dim() == 2:
        return embeddings.unsqueeze(0)  # (1, T, D)
    if embeddings.dim() != 3 or embeddings.size(0) != 1:
        raise AttnkitError(f"attribution: embeddings must be (T, D) or (1, T, D), got {tuple(embeddings.shape)}")
    return embeddings


def _reduce(attr: Tensor, reduce: str) -> Tensor:
    if reduce == "sum":
        return attr.sum(dim=-1)[0]  # (T,)
    if reduce == "norm":
        return attr.norm(dim=-1)[0]  # (T,)
    raise AttnkitError(f"attribution: reduce must be 'sum' or 'norm', got {reduce!r}")


def _score(f: ScoreFn, x: Tensor) -> float:
    with torch.no_grad():
        return float(f(x).reshape(-1)[0])


def input_x_gradient(f: ScoreFn, embeddings: Tensor, reduce: str = "sum") -> Attribution:
    """Input x gradient of f at `embeddings` (T, D) or (1, T, D): -> per-token scores (T,)."""
    captum_attr = load("captum.attr", "attributions (input x gradient, integrated gradients)")
    x = _batched(embeddings).detach().float()  # (1, T, D)
    attr = captum_attr.InputXGradient(f).attribute(x.clone().requires_grad_(True))  # (1, T, D)
    return Attribution(_reduce(attr.detach(), reduce), _score(f, x))


def integrated_gradients(
    f: ScoreFn,
    embeddings: Tensor,
    baseline: Tensor | None = None,
    steps: int | None = None,
    reduce: str = "sum",
    check: bool = True,
    tolerance: float = TOLERANCE,
) -> Attribution:
    """Integrated gradients of f from `baseline` (zeros) to `embeddings`, with the completeness check.

    Args:
        f: (N, T, D) -> (N,) scores.
        embeddings: (T, D) or (1, T, D).
        baseline: same shape as `embeddings` (zeros when None).
        steps: Gauss-Legendre points of the path integral; None tries STEPS, doubling up to MAX_STEPS until the check passes.
        reduce: `sum` or `norm` over the embedding axis.
        check: raise when |delta| > tolerance * |f(x) - f(baseline)|.

    Raises:
        AttnkitError: the completeness check failed (names the figures and the step count).
    """
    captum_attr = load("captum.attr", "attributions (input x gradient, integrated gradients)")
    x = _batched(embeddings).detach().float()  # (1, T, D)
    base = torch.zeros_like(x) if baseline is None else _batched(baseline).detach().float()  # (1, T, D)
    ig = captum_attr.IntegratedGradients(f)
    counts = [steps] if steps is not None else [STEPS * 2**i for i in range(int(math.log2(MAX_STEPS // STEPS)) + 1)]
    for n in counts:
        attr, delta = ig.attribute(x, baselines=base, n_steps=n, return_convergence_delta=True)  # (1, T, D), (1,)
        out = Attribution(_reduce(attr.detach(), reduce), _score(f, x), _score(f, base), float(delta.reshape(-1)[0]), n)
        if out.relative_error <= tolerance:
            return out
    if check:
        raise AttnkitError(
            f"integrated gradients: attributions sum to {out.f_input - out.f_baseline + out.delta:.6g} but "
            f"f(x) - f(baseline) = {out.f_input - out.f_baseline:.6g} ({out.relative_error:.2%} off, over {tolerance:.0%}) "
            f"at {out.steps} steps: use more steps"
        )
    return out


@functools.cache
def gauss_legendre(n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """captum's Gauss-Legendre (weights, points in [0, 1]) for n steps, computed once per n (numpy's eigenvalue
    solve costs more than a tiny model's forward pass)."""
    methods = load("captum.attr._utils.approximation_methods", "attributions (input x gradient, integrated gradients)")
    sizes_of, alphas_of = methods.approximation_parameters("gausslegendre")
    return tuple(sizes_of(n)), tuple(alphas_of(n))


def input_x_gradient_and_integrated_gradients(
    f: ScoreFn, embeddings: Tensor, reduce: str = "sum", tolerance: float = TOLERANCE, baseline: Tensor | None = None, steps: int | None = None
) -> tuple[Attribution, Attribution]:
    """Input x gradient and integrated gradients (from `baseline`, zeros when None) of f at `embeddings` (T, D) or (1, T, D),
    from one forward and one backward pass instead of the several that `input_x_gradient` and
    `integrated_gradients` take apart (and the two of f(x) and f(x') that each figure takes).

    The batch is [x', x, x' + a_1 (x - x'), ..., x' + a_n (x - x')] (n + 2, T, D), with captum's
    Gauss-Legendre points a_j and weights; the gradient of the sum of f over every row but x' is each row's
    own gradient, since a score reads one input per row (as captum's batched integral assumes). Row x gives
    input x gradient, the path rows integrated gradients as captum sums them, rows x' and x f(x') and f(x).
    The step count is `steps`, or as `integrated_gradients(check=False)` chooses it: STEPS, doubled up to MAX_STEPS
    until the completeness error is within `tolerance` (a later try runs the batch again with more path rows).
    """
    return attributions_of_outputs(lambda e: f(e).unsqueeze(1), [0], embeddings, reduce, tolerance, baseline, steps)[0]  # (N, 1): one output


@dataclass(frozen=True)
class OutputOf:
    """One output's score f(e) = scores(e)[:, output] (N,), of a score function that gives every output of an input in
    one forward pass, scores: (N, T, D) -> (N, O) (a translation's teacher-forced log-probability of each output token).
    `attributions_of_outputs` attributes several outputs of the same `scores` in one batched pass."""

    scores: Callable[[Tensor], Tensor]
    output: int

    def __call__(self, e: Tensor) -> Tensor:  # (N, T, D) -> (N,)
        return self.scores(e)[:, self.output]


TOKENS = 8192  # input tokens (rows x T) per batched pass of `attributions_of_outputs`: outputs beyond them go in further passes


def attributions_of_outputs(
    scores: Callable[[Tensor], Tensor], outputs: Sequence[int], embeddings: Tensor, reduce: str = "sum", tolerance: float = TOLERANCE,
    baseline: Tensor | None = None, steps: int | None = None, tokens: int = TOKENS,
) -> list[tuple[Attribution, Attribution]]:  # fmt: skip
    """`input_x_gradient_and_integrated_gradients` of several outputs of one input: for each o of `outputs`, of
    f_o(e) = scores(e)[:, o] ((N, T, D) -> (N, O)), at `embeddings` (T, D) or (1, T, D), from `baseline` (zeros).

    A gradient belongs to one output, so each output gets its own copies of x and of the path (a row's score is
    its own output's), and the copies of every output are one batch: [x', x (per output), path (per output)], one
    forward and one backward pass for them all (in passes of at most `tokens` input tokens, and at least one output
    a pass), where one pass per output took as many. f(x') comes from the one row x'. With `steps=None` the outputs whose completeness error is over
    `tolerance` are run again with twice the steps (as `input_x_gradient_and_integrated_gradients`), the others kept.
    """
    x = _batched(embeddings).detach().float()  # (1, T, D)
    base = torch.zeros_like(x) if baseline is None else _batched(baseline).detach().float()  # (1, T, D)
    counts = [steps] if steps is not None else [STEPS * 2**i for i in range(int(math.log2(MAX_STEPS // STEPS)) + 1)]
    done: dict[int, tuple[Attribution, Attribution]] = {}
    pending = list(range(len(outputs)))
    for n in counts:
        size = max(1, (tokens // x.size(1) - 1) // (n + 1))  # outputs per pass
        for start in range(0, len(pending), size):
            chunk = pending[start : start + size]
            done.update(zip(chunk, _outputs_pass(scores, [outputs[i] for i in chunk], x, base, n, reduce)))
        pending = [i for i in pending if done[i][1].relative_error > tolerance]
        if not pending:
            break
    return [done[i] for i in range(len(outputs))]


def _outputs_pass(
    scores: Callable[[Tensor], Tensor], outputs: list[int], x: Tensor, base: Tensor, n: int, reduce: str
) -> list[tuple[Attribution, Attribution]]:
    """One forward and backward pass of `attributions_of_outputs` at n steps (its docstring): (ixg, ig) per output."""
    k = len(outputs)
    sizes, alphas = gauss_legendre(n)
    path = torch.cat([base + a * (x - base) for a in alphas])  # (n, T, D)
    batch = torch.cat([base, x.expand(k, -1, -1), path.repeat(k, 1, 1)]).requires_grad_(True)  # (1 + k + k n, T, D)
    own = torch.tensor(outputs)  # (k,)
    with torch.enable_grad():
        out = scores(batch)  # (1 + k + k n, O)
        at_x = out[1 : 1 + k].gather(1, own.to(out.device).unsqueeze(1))[:, 0]  # (k,): f_o(x)
        on_path = out[1 + k :].view(k, n, -1).gather(2, own.to(out.device).view(k, 1, 1).expand(k, n, 1))[..., 0]  # (k, n): f_o on o's path
        (grads,) = torch.autograd.grad(at_x.sum() + on_path.sum(), batch)  # (1 + k + k n, T, D)
    weights = torch.tensor(sizes).float().view(1, n, 1, 1)  # (1, n, 1, 1)
    attr = (grads[1 + k :].view(k, n, *x.shape[1:]) * weights).sum(dim=1) * (x - base)  # (k, T, D)
    found = []
    for j, o in enumerate(outputs):
        f_base, f_input = float(out[0, o].detach()), float(at_x[j].detach())
        ixg = Attribution(_reduce(x * grads[1 + j : 2 + j], reduce), f_input)
        delta = float(attr[j].double().sum()) - (f_input - f_base)
        found.append((ixg, Attribution(_reduce(attr[j : j + 1], reduce), f_input, f_base, delta, n)))
    return found


@contextmanager
def embeddings_replaced(module: nn.Module, e: Tensor) -> Iterator[None]:
    """Within the block, the first call of `module` (an embedding layer) gives `e` (N, S, E) instead of its output,
    which is how a score f(embeddings) runs the rest of a model; later calls of the same module (a decoder's, with
    a joint vocabulary, or a pair's second sentence) keep their own. cuDNN is off: its LSTM has no backward in eval mode."""
    seen = []

    def hook(module: nn.Module, args: object, out: Tensor) -> Tensor | None:
        if seen:
            return None
        seen.append(True)
        return e.to(out.dtype)  # (N, S, E)

    handle = module.register_forward_hook(hook)
    try:
        with torch.backends.cudnn.flags(enabled=False):
            yield
    finally:
        handle.remove()
