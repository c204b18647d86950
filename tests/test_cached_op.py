"""nd.CachedOp: a Symbol called on arrays, recorded by autograd like the same nd calls."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.base import MXNetError


def _graph():
    x, w = mx.sym.var("x"), mx.sym.var("w")
    return mx.sym.dot(x, w) * 2 + 1


def test_forward_matches_numpy_and_out():
    op = mx.nd.CachedOp(_graph())
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 2), dtype=np.float32)
    got = op(mx.nd.array(a), mx.nd.array(b))
    np.testing.assert_allclose(got.asnumpy(), a @ b * 2 + 1)
    out = mx.nd.zeros((2, 2))
    assert op(mx.nd.array(a), mx.nd.array(b), out=out) is out
    np.testing.assert_allclose(out.asnumpy(), a @ b * 2 + 1)


def test_gradient_through_cached_op():
    op = mx.nd.CachedOp(_graph())
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x, w = mx.nd.array(a), mx.nd.ones((3, 2))
    w.attach_grad()
    with mx.autograd.record():
        y = op(x, w)
    y.backward()
    # d(sum(2 x w + 1))/dw = 2 x^T 1
    np.testing.assert_allclose(w.grad.asnumpy(), 2 * a.T @ np.ones((2, 2)))


def test_multiple_outputs_and_wrong_arity():
    a = mx.sym.var("a")
    s = mx.sym.Group([a + 1, a * 3])
    outs = mx.nd.CachedOp(s)(mx.nd.array([1.0, 2.0]))
    np.testing.assert_array_equal(outs[0].asnumpy(), [2, 3])
    np.testing.assert_array_equal(outs[1].asnumpy(), [3, 6])
    with pytest.raises(MXNetError, match="2 inputs given, the symbol takes 1"):
        mx.nd.CachedOp(s)(mx.nd.ones(2), mx.nd.ones(2))
