"""``nd.linalg.gelqf`` / ``sym.linalg.gelqf``: the LQ factorisation, its LAPACK sign convention
(MXNet's values) and its gradient against finite differences."""

import ferrograd as mx
import numpy as np
import pytest


def test_factors_reproduce_the_matrix_with_mxnet_signs():
    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, -6.0]])
    q, l = mx.nd.linalg.gelqf(mx.nd.array(a, dtype="float64"))
    # MXNet 1.9.1's (LAPACK's) result for this matrix.
    np.testing.assert_allclose(l.asnumpy(), [[-3.74165739, 0.0], [1.06904497, -8.70960061]],
                               rtol=1e-8)
    np.testing.assert_allclose(q.asnumpy()[0], [-0.26726124, -0.53452248, -0.80178373], rtol=1e-7)
    batch = np.random.default_rng(1).normal(size=(3, 2, 4))
    q, l = mx.nd.linalg.gelqf(mx.nd.array(batch, dtype="float64"))
    q, l = q.asnumpy(), l.asnumpy()
    np.testing.assert_allclose(l @ q, batch, atol=1e-12)
    np.testing.assert_allclose(q @ q.transpose(0, 2, 1), np.broadcast_to(np.eye(2), (3, 2, 2)),
                               atol=1e-12)
    assert np.all(np.triu(l, 1) == 0)


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(2, 3))
    wq, wl = rng.normal(size=(2, 3)), rng.normal(size=(2, 2))

    def f(m):
        q, l = mx.nd.linalg.gelqf(mx.nd.array(m, dtype="float64"))
        return float((q.asnumpy() * wq).sum() + (l.asnumpy() * wl).sum())

    x = mx.nd.array(a, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        q, l = mx.nd.linalg.gelqf(x)
        wq_nd, wl_nd = mx.nd.array(wq, dtype="float64"), mx.nd.array(wl, dtype="float64")
        y = (q * wq_nd).sum() + (l * wl_nd).sum()
    y.backward()
    eps, fd = 1e-6, np.zeros_like(a)
    for i in np.ndindex(a.shape):
        hi, lo = a.copy(), a.copy()
        hi[i] += eps
        lo[i] -= eps
        fd[i] = (f(hi) - f(lo)) / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), fd, rtol=1e-6, atol=1e-8)


def test_symbolic_form_and_bad_shapes():
    s = mx.sym.linalg.gelqf(mx.sym.var("a"))
    assert len(s.list_outputs()) == 2
    _, outs, _ = s.infer_shape(a=(2, 5))
    assert outs == [(2, 5), (2, 2)]
    with pytest.raises(mx.base.MXNetError, match="gelqf"):
        mx.nd.linalg.gelqf(mx.nd.ones((3, 2)))
