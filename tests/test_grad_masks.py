"""Gradients of masking ops (relu, clip, Cast to integers) and their second order, against
hand-derived values: relu' = 1 where x > 0, 0 elsewhere, NaN at NaN (MXNet's value); clip' = 1
inside [a_min, a_max]; both are piecewise constant, so their second derivative is zero."""

import ferrograd as mx
import numpy as np
from ferrograd import autograd


def test_relu_gradient_including_nan():
    x = mx.nd.array([np.nan, 2.0, -1.0, 0.0])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.relu(x)
    y.backward(mx.nd.array([1.0, 3.0, 5.0, 7.0]))
    np.testing.assert_array_equal(x.grad.asnumpy(), [np.nan, 3.0, 0.0, 0.0])


def _second_order(f, values):
    x = mx.nd.array(values)
    x.attach_grad()
    with autograd.record():
        y = f(x)
        (dx,) = autograd.grad(y, [x], head_grads=mx.nd.ones_like(y), create_graph=True,
                              retain_graph=True)
    dx.backward(mx.nd.full(x.shape, 2.0))
    return dx.asnumpy(), x.grad.asnumpy()


def test_relu_second_order_is_zero():
    first, second = _second_order(mx.nd.relu, [1.5, -2.0, 3.0])
    np.testing.assert_array_equal(first, [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(second, [0.0, 0.0, 0.0])


def test_clip_second_order_is_zero():
    first, second = _second_order(lambda x: mx.nd.clip(x, -1.0, 1.0), [-3.0, -1.0, 0.5, 1.0, 2.0])
    np.testing.assert_array_equal(first, [0.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(second, np.zeros(5))


def test_clip_second_order_with_autograd_grad():
    x = mx.nd.array([0.2, 4.0])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.clip(x, 0.0, 1.0)
        (dx,) = autograd.grad(y, [x], create_graph=True, retain_graph=True)
    (ddx,) = autograd.grad(dx, [x], retain_graph=True)
    np.testing.assert_array_equal(ddx.asnumpy(), [0.0, 0.0])


def test_cast_to_integer_passes_the_gradient():
    x = mx.nd.array([1.5, -2.7, 3.0])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.Cast(x, dtype="int32")
    assert y.dtype == np.int32
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [1.0, 1.0, 1.0])
    with autograd.record():
        z = x.astype("int8") * 3
    z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [3.0, 3.0, 3.0])
