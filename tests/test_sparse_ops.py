"""Operators on sparse arrays: storage types of elementwise results, retain, dot, gradients,
lazy optimizer updates and kvstore.row_sparse_pull."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, nd

A = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0], [0.0, 0.0, 0.0], [4.0, 0.0, 0.0]],
             dtype=np.float32)


def _csr():
    return nd.array(A).tostype("csr")


def _rsp():
    return nd.array(A).tostype("row_sparse")


@pytest.mark.parametrize("make", [_csr, _rsp])
def test_elementwise_result_storage_types(make):
    x = make()
    st = x.stype
    cases = [
        (x + x, st, A + A), (x - x, st, A - A), (x * x, st, A * A), (x * 2.5, st, A * 2.5),
        (2.5 * x, st, A * 2.5), (x / 4, st, A / 4), (-x, st, -A),
        (x * nd.array(A), st, A * A), (x + 1, "default", A + 1),
        (x + nd.array(A), "default", 2 * A),
    ]
    for res, want_stype, want in cases:
        assert res.stype == want_stype
        np.testing.assert_allclose(res.asnumpy(), want, rtol=0, atol=0)
    assert nd.exp(x).stype == "default"
    np.testing.assert_allclose(nd.exp(x).asnumpy(), np.exp(A), rtol=1e-6)


@pytest.mark.parametrize("make", [_csr, _rsp])
def test_zero_preserving_unary_ops_stay_sparse(make):
    x = make()
    for name, ref in [("sqrt", np.sqrt), ("square", np.square), ("abs", np.abs),
                      ("sign", np.sign), ("negative", np.negative)]:
        res = getattr(nd.sparse, name)(x)
        assert res.stype == x.stype, name
        np.testing.assert_allclose(res.asnumpy(), ref(A), rtol=1e-6)
        np.testing.assert_array_equal(res.indices.asnumpy(), x.indices.asnumpy())
    res = nd.sparse.exp(x)
    assert res.stype == "default"


def test_inplace_ops_keep_components_in_step():
    r = _rsp()
    r *= 2
    assert r.stype == "row_sparse"
    np.testing.assert_array_equal(r.data.asnumpy(), (2 * A)[[0, 1, 3]])
    r += r
    np.testing.assert_array_equal(r.asnumpy(), 4 * A)


def test_retain_keeps_the_asked_rows():
    r = _rsp()
    kept = nd.sparse.retain(r, nd.array([1, 2, 3]))
    assert kept.stype == "row_sparse"
    assert kept.indices.asnumpy().tolist() == [1, 3]
    want = A.copy()
    want[0] = 0
    np.testing.assert_array_equal(kept.asnumpy(), want)
    assert r.retain(nd.array([0])).indices.asnumpy().tolist() == [0]
    with pytest.raises(TypeError, match="row_sparse"):
        nd.sparse.retain(_csr(), nd.array([0]))
    with pytest.raises(mx.base.ShapeError, match=r"\[0, 4\)"):
        nd.sparse.retain(r, nd.array([7]))


def test_sparse_dot_values_and_result_storage():
    rng = np.random.RandomState(0)
    dense = rng.randn(3, 5).astype(np.float32)
    c = _csr()
    out = nd.sparse.dot(c, nd.array(dense))
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), A @ dense, rtol=1e-6)
    rhs = rng.randn(4, 2).astype(np.float32)
    out_t = nd.sparse.dot(c, nd.array(rhs), transpose_a=True)
    assert out_t.stype == "row_sparse"
    np.testing.assert_allclose(out_t.asnumpy(), A.T @ rhs, rtol=1e-6)
    lhs = rng.randn(2, 4).astype(np.float32)
    out_d = nd.sparse.dot(nd.array(lhs), c)
    assert out_d.stype == "csr"
    np.testing.assert_allclose(out_d.asnumpy(), lhs @ A, rtol=1e-6)
    np.testing.assert_allclose(nd.dot(c, nd.array(dense)).asnumpy(), A @ dense, rtol=1e-6)


def test_gradients_through_sparse_arrays_and_grad_stype():
    x = _csr()
    x.attach_grad()
    with autograd.record():
        y = x * 3
    y.backward()
    assert x.grad.stype == "csr"
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full(A.shape, 3.0))
    w = nd.ones((3, 2))
    w.attach_grad(stype="row_sparse")
    with autograd.record():
        z = nd.dot(_csr(), w)
    z.backward()
    assert w.grad.stype == "row_sparse"
    np.testing.assert_allclose(w.grad.asnumpy(), A.T @ np.ones((4, 2)))
    assert w.grad.indices.asnumpy().tolist() == [0, 1, 2]


def test_lazy_sgd_updates_only_the_gradient_rows():
    w = nd.ones((4, 2))
    g = nd.sparse.row_sparse_array(([[1.0, 2.0]], [2]), shape=(4, 2))
    sgd = mx.optimizer.SGD(learning_rate=0.5, wd=0.1)
    sgd.update_multi_precision(0, w, g, sgd.create_state(0, w))
    want = np.ones((4, 2))
    want[2] = 1 - 0.5 * (np.array([1.0, 2.0]) + 0.1)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-6)
    dense_w = nd.ones((4, 2))
    std = mx.optimizer.SGD(learning_rate=0.5, wd=0.1, lazy_update=False)
    std.update_multi_precision(0, dense_w, g, None)
    want_std = 1 - 0.5 * (g.asnumpy() + 0.1)
    np.testing.assert_allclose(dense_w.asnumpy(), want_std, rtol=1e-6, atol=1e-7)


def test_lazy_adam_leaves_other_rows_and_states_alone():
    w = nd.ones((3, 2)).tostype("row_sparse")
    g = nd.sparse.row_sparse_array(([[0.5, -0.5]], [1]), shape=(3, 2))
    adam = mx.optimizer.Adam(learning_rate=0.1)
    state = adam.create_state(0, w)
    adam.update_multi_precision(0, w, g, state)
    got = w.asnumpy()
    np.testing.assert_array_equal(got[[0, 2]], np.ones((2, 2)))
    # the first Adam step moves each coordinate by lr * sign(grad) (bias-corrected)
    np.testing.assert_allclose(got[1], [0.9, 1.1], rtol=1e-5)
    mean = state[0].asnumpy()
    np.testing.assert_array_equal(mean[[0, 2]], 0)
    assert w.stype == "row_sparse" and w.indices.asnumpy().tolist() == [0, 1, 2]


def test_kvstore_row_sparse_pull_and_ignored_pull():
    kv = mx.kv.create("local")
    kv.init("w", (nd.arange(1, 5).reshape((4, 1)) * nd.ones((4, 2))).tostype("row_sparse"))
    out = nd.sparse.zeros("row_sparse", (4, 2))
    kv.row_sparse_pull("w", out=out, row_ids=nd.array([3, 1, 3]))
    assert out.indices.asnumpy().tolist() == [1, 3]
    np.testing.assert_array_equal(out.asnumpy(), [[0, 0], [2, 2], [0, 0], [4, 4]])
    untouched = (nd.ones((4, 2)) * 7).tostype("row_sparse")
    kv.pull("w", out=untouched)
    np.testing.assert_array_equal(untouched.asnumpy(), np.full((4, 2), 7))
    with pytest.raises(mx.base.MXNetError, match="row_sparse"):
        kv.row_sparse_pull("w", out=nd.zeros((4, 2)), row_ids=nd.array([1]))
