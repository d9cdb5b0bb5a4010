"""Scheduled sampling for RNN decoders: the teacher-forcing ratio as training goes (Bengio et al. 2015)."""

from __future__ import annotations

import math


def teacher_forcing_ratio(step: int, *, ratio: float, decay: str, slope: float = 0.0, k: float = 1.0, min_ratio: float = 0.0) -> float:
    """The probability eps_i of feeding the gold token at update i (Bengio et al. 2015, sec. 2.4).

    constant: eps_i = ratio; linear: eps_i = max(min_ratio, ratio - slope * i); exponential:
    eps_i = ratio * k^i with k < 1; inverse_sigmoid: eps_i = ratio * k / (k + exp(i / k)) with
    k >= 1. The paper's curves start at ratio = 1 (always the gold token); every decay is floored
    at min_ratio.

    Args:
        step: 1-based optimizer step i.
        ratio: eps at the start (and throughout for `constant`).
        decay: "constant", "linear", "exponential" or "inverse_sigmoid".
        slope: c of the linear decay.
        k: the base of the exponential decay, or the inverse sigmoid's k.
        min_ratio: the floor eps of the decays.
    """
    if step < 1:
        raise ValueError(f"step must be >= 1 (1-based optimizer step), got {step}")
    match decay:
        case "constant":
            return ratio
        case "linear":
            eps = ratio - slope * step
        case "exponential":
            eps = ratio * k**step
        case "inverse_sigmoid":
            eps = ratio * k / (k + math.exp(min(step / k, 700.0)))
        case _:
            raise ValueError(f"unknown teacher-forcing decay {decay!r}")
    return max(min_ratio, eps)
