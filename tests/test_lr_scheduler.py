"""mx.lr_scheduler: the schedules' values, hand-derived, with warmup and bad arguments."""

import math

import ferrograd as mx
import pytest
from ferrograd import lr_scheduler as ls


def test_factor_scheduler_steps_and_floor():
    s = ls.FactorScheduler(step=3, factor=0.5, stop_factor_lr=0.2, base_lr=1.0)
    got = [s(t) for t in range(1, 12)]
    # lr halves once num_update passes 3, 6, 9 (never below stop_factor_lr)
    assert got == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.2, 0.2]


def test_multifactor_scheduler():
    s = ls.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    got = [s(t) for t in range(1, 8)]
    assert got == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.1, 0.01, 0.01])


def test_poly_scheduler_with_linear_warmup():
    s = ls.PolyScheduler(
        max_update=12, base_lr=1.0, pwr=2, final_lr=0.1, warmup_steps=2, warmup_begin_lr=0.2
    )
    assert s(0) == pytest.approx(0.2)
    assert s(1) == pytest.approx(0.6)
    assert s(2) == pytest.approx(1.0)
    assert s(7) == pytest.approx(0.1 + 0.9 * 0.5**2)
    assert s(12) == pytest.approx(0.1)
    assert s(20) == pytest.approx(0.1)


def test_cosine_scheduler_with_constant_warmup():
    s = ls.CosineScheduler(
        max_update=10,
        base_lr=2.0,
        final_lr=0.0,
        warmup_steps=2,
        warmup_begin_lr=0.5,
        warmup_mode="constant",
    )
    assert s(1) == 0.5
    assert s(2) == pytest.approx(2.0)
    assert s(6) == pytest.approx(2.0 * (1 + math.cos(math.pi * 4 / 8)) / 2)
    assert s(10) == pytest.approx(0.0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="step"):
        ls.FactorScheduler(step=0)
    with pytest.raises(ValueError, match="Factor"):
        ls.FactorScheduler(step=2, factor=1.5)
    with pytest.raises(ValueError, match="increasing"):
        ls.MultiFactorScheduler(step=[3, 2])
    with pytest.raises(ValueError, match="warmup"):
        ls.PolyScheduler(max_update=5, warmup_mode="cubic")
    with pytest.raises(ValueError, match="warmup_begin_lr"):
        ls.CosineScheduler(max_update=5, base_lr=0.1, warmup_begin_lr=0.5)
    with pytest.raises(ValueError, match="strictly positive"):
        ls.CosineScheduler(max_update=0)


def test_scheduler_drives_optimizer_rate():
    s = ls.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    o = mx.optimizer.SGD(lr_scheduler=s)
    w = mx.nd.zeros((1,))
    for _ in range(3):
        o.update(0, w, mx.nd.ones((1,)), None)
    # lrs used: 1.0 (update 1), 0.5 (update 2), 0.25 (update 3)
    assert float(w.asnumpy()[0]) == pytest.approx(-1.75)
