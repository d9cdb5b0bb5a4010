"""Learning-rate schedules: values at chosen steps worked out by hand."""

from __future__ import annotations

import math

import pytest

from attnkit.train.schedules import constant, cosine, inverse_sqrt, make_schedule, noam


def test_noam_by_hand() -> None:
    # Vaswani et al. eq. 3 with d_model = 512, warmup = 4000:
    # 512^-0.5 = 0.0441942; 4000^-1.5 = 1 / (4000 · 63.245553) = 3.9528471e-6; 4000^-0.5 = 0.0158114.
    assert noam(1, d_model=512, warmup=4000) == pytest.approx(0.0441942 * 3.9528471e-6, rel=1e-6)  # 1.746928e-7
    assert noam(4000, d_model=512, warmup=4000) == pytest.approx(0.0441942 * 0.0158114, rel=1e-5)  # 6.987712e-4
    # After warmup the rate falls as step^-0.5: four times the steps, half the rate.
    assert noam(16000, d_model=512, warmup=4000) == pytest.approx(6.987712e-4 / 2, rel=1e-6)
    assert noam(100, d_model=512, warmup=4000, scale=2.0) == pytest.approx(2 * 100 * 1.746928e-7, rel=1e-6)


def test_noam_peaks_at_warmup() -> None:
    values = [noam(s, d_model=256, warmup=50) for s in range(1, 200)]
    assert max(range(len(values)), key=values.__getitem__) + 1 == 50
    assert values[49] == pytest.approx((256 * 50) ** -0.5)  # the peak is (d_model · warmup)^-0.5


def test_inverse_sqrt_by_hand() -> None:
    assert inverse_sqrt(4000, peak_lr=5e-4, warmup=4000) == 5e-4  # min(1, 1) · peak
    assert inverse_sqrt(1000, peak_lr=5e-4, warmup=4000) == pytest.approx(1.25e-4)  # linear: 1000/4000
    assert inverse_sqrt(16000, peak_lr=5e-4, warmup=4000) == pytest.approx(2.5e-4)  # sqrt(4000/16000) = 1/2
    values = [inverse_sqrt(s, peak_lr=1.0, warmup=10) for s in range(1, 40)]
    assert max(values) == values[9] == 1.0


def test_cosine() -> None:
    # warmup 10, total 110: linear to the peak, half the peak half-way down, 0 at total and after
    assert cosine(5, peak_lr=2e-3, warmup=10, total=110) == pytest.approx(1e-3)
    assert cosine(10, peak_lr=2e-3, warmup=10, total=110) == pytest.approx(2e-3)
    assert cosine(60, peak_lr=2e-3, warmup=10, total=110) == pytest.approx(1e-3)
    assert cosine(35, peak_lr=2e-3, warmup=10, total=110) == pytest.approx(1e-3 * (1 + math.cos(math.pi / 4)))
    assert cosine(110, peak_lr=2e-3, warmup=10, total=110) == pytest.approx(0.0, abs=1e-15)
    assert cosine(500, peak_lr=2e-3, warmup=10, total=110) == pytest.approx(0.0, abs=1e-15)
    values = [cosine(s, peak_lr=1.0, warmup=10, total=110) for s in range(10, 111)]
    assert all(a >= b for a, b in zip(values, values[1:], strict=False))  # never rises after the warmup
    assert make_schedule("cosine", peak_lr=1.0, warmup=10, total=110)(60) == pytest.approx(0.5)


def test_constant_and_make_schedule() -> None:
    assert constant(123, lr=3e-4) == 3e-4
    assert make_schedule("noam", d_model=512, warmup=4000)(4000) == noam(4000, d_model=512, warmup=4000)
    assert make_schedule("inverse_sqrt", peak_lr=1e-3, warmup=10)(40) == pytest.approx(1e-3 * math.sqrt(10 / 40))
    assert make_schedule("constant", lr=0.1)(7) == 0.1


def test_bad_arguments_fail_early() -> None:
    with pytest.raises(ValueError, match="unknown learning-rate schedule 'linear'"):
        make_schedule("linear", lr=1.0)
    with pytest.raises(ValueError, match="1 <= warmup < total"):
        cosine(1, peak_lr=1.0, warmup=10, total=10)
    with pytest.raises(TypeError, match="schedule 'noam'.*warmup"):
        make_schedule("noam", d_model=512)
    with pytest.raises(TypeError, match="schedule 'constant'"):
        make_schedule("constant", lr=1.0, warmup=3)
    with pytest.raises(ValueError, match="from 1, got step=0"):
        noam(0, d_model=512, warmup=4000)
