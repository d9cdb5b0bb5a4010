"""Learning-rate schedules: pure functions of the 1-based optimizer step.

Step 1 is the first update; step 0 is rejected, since `noam` is undefined there. To drive
`torch.optim.lr_scheduler.LambdaLR` (which counts from 0 and multiplies the optimizer's base lr),
build the optimizer with lr=1.0 and pass `lambda i: schedule(i + 1)`; or set
`group["lr"] = schedule(step)` before each `optimizer.step()`.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from functools import partial


def _check_step(step: int) -> None:
    if step < 1:
        raise ValueError(f"schedules count optimizer steps from 1, got step={step}")


def noam(step: int, *, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """Vaswani et al. (2017), "Attention Is All You Need", eq. 3.

    lrate = scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5): linear growth for `warmup`
    steps, then decay with the inverse square root of the step. The peak, at step = warmup, is
    scale * (d_model * warmup)^-0.5. The paper uses scale = 1, warmup = 4000.

    Args:
        step: 1-based optimizer step.
        d_model: model width.
        warmup: warmup_steps.
        scale: constant factor (fairseq/tensor2tensor's "lr" multiplier of this schedule).
    """
    _check_step(step)
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def inverse_sqrt(step: int, *, peak_lr: float, warmup: int) -> float:
    """fairseq's `inverse_sqrt` schedule with a linear warmup from 0.

    lr = peak_lr * min(step / warmup, sqrt(warmup / step)): peak_lr is reached at step = warmup,
    after which the rate decays as 1/sqrt(step). (fairseq warms up from `warmup_init_lr`; here it
    is 0.) This is `noam` with the peak given directly instead of through d_model.

    Args:
        step: 1-based optimizer step.
        peak_lr: the learning rate at step = warmup.
        warmup: number of warmup steps (>= 1).
    """
    _check_step(step)
    if warmup < 1:
        raise ValueError(f"inverse_sqrt needs warmup >= 1, got {warmup}")
    return peak_lr * min(step / warmup, math.sqrt(warmup / step))


def constant(step: int, *, lr: float) -> float:
    """The same learning rate at every step.

    Args:
        step: 1-based optimizer step (checked, otherwise unused).
        lr: the learning rate.
    """
    _check_step(step)
    return lr


def cosine(step: int, *, peak_lr: float, warmup: int, total: int) -> float:
    """Linear warmup from 0 to `peak_lr` over `warmup` steps, then a half cosine down to 0 at `total`.

    lr = peak_lr * step / warmup for step <= warmup, then
    lr = peak_lr * (1 + cos(pi * (step - warmup) / (total - warmup))) / 2, and 0 after `total`
    (Loshchilov & Hutter 2017, SGDR, one cycle without restarts).

    Args:
        step: 1-based optimizer step.
        peak_lr: the learning rate at step = warmup.
        warmup: number of warmup steps (>= 1).
        total: the step at which the rate reaches 0 (> warmup); usually `train.max_steps`.
    """
    _check_step(step)
    if not 1 <= warmup < total:
        raise ValueError(f"cosine needs 1 <= warmup < total, got warmup={warmup}, total={total}")
    if step <= warmup:
        return peak_lr * step / warmup
    return peak_lr * (1.0 + math.cos(math.pi * min(1.0, (step - warmup) / (total - warmup)))) / 2.0


def make_schedule(kind: str, **kwargs: float) -> Callable[[int], float]:
    """Bind a schedule's keyword arguments: `make_schedule("noam", d_model=512, warmup=4000)`.

    Args:
        kind: "noam", "inverse_sqrt", "constant" or "cosine".
        **kwargs: exactly the keyword arguments of that function (checked now, not at step 1).

    Returns:
        A function of the 1-based step returning the learning rate.

    Raises:
        ValueError: for an unknown kind.
        TypeError: for missing or unexpected keyword arguments.
    """
    match kind:
        case "noam":
            fn = noam
        case "inverse_sqrt":
            fn = inverse_sqrt
        case "constant":
            fn = constant
        case "cosine":
            fn = cosine
        case _:
            raise ValueError(f"unknown learning-rate schedule {kind!r}; expected noam, inverse_sqrt, constant or cosine")
    try:
        inspect.signature(fn).bind(1, **kwargs)
    except TypeError as err:
        raise TypeError(f"schedule {kind!r}: {err}") from None
    return partial(fn, **kwargs)
