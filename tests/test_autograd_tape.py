"""Regression tests for the tape internals: what a node saves, and graph release."""

import ferrograd as mx
import numpy as np
from conftest import check

nd, ag = mx.nd, mx.autograd


def test_nansum_gradient_masks_nan_through_the_tape():
    # nansum's rule reads its input (the NaN mask), so the tape must save it.
    x = nd.array([1.0, np.nan, 3.0])
    x.attach_grad()
    with ag.record():
        y = nd.nansum(x * 2)
    y.backward()
    check(x.grad, [2.0, 0.0, 2.0])


def test_rsqrt_gradient_through_the_tape():
    x = nd.array([1.0, 4.0], dtype="float64")
    x.attach_grad()
    with ag.record():
        y = nd.rsqrt(x)
    y.backward()
    check(x.grad, -0.5 * np.array([1.0, 4.0]) ** -1.5)
