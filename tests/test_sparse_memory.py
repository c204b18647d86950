"""Sparse arrays hold only their components: huge shapes are cheap, dense values are made only
for what needs them (``asnumpy``, ``tostype('default')``, operators without a sparse rule), and
the results match NumPy exactly. The huge arrays here would need 10+ GB as dense arrays."""

import pickle
import tracemalloc

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import nd
from ferrograd._ferrograd import _sparse_pending
from ferrograd.base import MXNetError

BIG = 10 ** 7  # rows of a 10^7 x 64 float32 array: 2.56 GB dense
HUGE = (10 ** 6, 10 ** 6)  # a 10^12-element csr array: 4 TB dense


def _big_rsp():
    data = np.arange(3 * 64, dtype=np.float32).reshape(3, 64) + 1
    return nd.sparse.row_sparse_array((data, [5, 1000, BIG - 1]), shape=(BIG, 64)), data


def test_huge_row_sparse_is_built_from_components_only():
    tracemalloc.start()
    x, data = _big_rsp()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10 ** 6  # NumPy side: no dense buffer
    assert _sparse_pending(x)
    assert x.shape == (BIG, 64) and x.dtype == np.float32 and x.stype == "row_sparse"
    assert x.size == BIG * 64 and x.ndim == 2 and len(x) == BIG
    assert x.indices.asnumpy().tolist() == [5, 1000, BIG - 1]
    assert "RowSparseNDArray 10000000x64" in repr(x)
    x.wait_to_read()
    assert _sparse_pending(x)


def test_huge_csr_zeros_and_components():
    z = nd.sparse.zeros("csr", HUGE)
    assert z.shape == HUGE and z.data.shape == (0,) and z.indptr.shape == (HUGE[0] + 1,)
    c = nd.sparse.csr_matrix(([1.5, -2.0, 4.0], [7, HUGE[1] - 1, 0], [0, 2] + [3] * (HUGE[0] - 1)),
                             shape=HUGE)
    assert _sparse_pending(c) and c.shape == HUGE
    row = c[0]
    assert row.shape == (1, HUGE[1]) and row.indices.asnumpy().tolist() == [7, HUGE[1] - 1]
    assert _sparse_pending(row)


def test_huge_retain_elementwise_and_copies_stay_sparse():
    x, data = _big_rsp()
    kept = nd.sparse.retain(x, nd.array([1000, BIG - 1, 3], dtype="int64"))
    assert kept.indices.asnumpy().tolist() == [1000, BIG - 1]
    np.testing.assert_array_equal(kept.data.asnumpy(), data[1:])
    doubled = x * 2
    assert doubled.stype == "row_sparse" and _sparse_pending(doubled)
    np.testing.assert_array_equal(doubled.data.asnumpy(), data * 2)
    total = x + kept
    assert total.indices.asnumpy().tolist() == [5, 1000, BIG - 1]
    np.testing.assert_array_equal(total.data.asnumpy(), data + np.vstack([0 * data[:1], data[1:]]))
    diff = x - x
    assert diff.indices.asnumpy().size == 0 and diff.shape == (BIG, 64)
    neg = -x
    np.testing.assert_array_equal(neg.data.asnumpy(), -data)
    y = nd.sparse.sqrt(x)
    np.testing.assert_array_equal(y.data.asnumpy(), np.sqrt(data))
    for copied in (x.copy(), x.detach(), x.astype("float64"), pickle.loads(pickle.dumps(x))):
        assert copied.shape == (BIG, 64) and _sparse_pending(copied)
        np.testing.assert_array_equal(copied.data.asnumpy().astype(np.float32), data)
    assert x.astype("float64").dtype == np.float64
    x[:] = kept  # assignment of components
    assert x.indices.asnumpy().tolist() == [1000, BIG - 1] and _sparse_pending(x)


def test_huge_dot_products_follow_stored_values():
    n = HUGE[0]
    c = nd.sparse.csr_matrix(([2.0, 3.0, -1.0], [4, 9, 4], [0, 2, 2, 3] + [3] * (n - 3)),
                             shape=HUGE)
    w = np.random.RandomState(0).randn(10, 8).astype(np.float32)
    # csr.T · dense: rows of the result only for the csr's stored columns (4 and 9).
    lhs_rows = np.zeros((n, 8), np.float32)
    small = nd.sparse.csr_matrix(([2.0, 3.0, -1.0], [4, 9, 4], [0, 2, 2, 3]), shape=(3, 10))
    rhs = np.random.RandomState(1).randn(3, 8).astype(np.float32)
    got = nd.sparse.dot(small, nd.array(rhs), transpose_a=True)
    assert got.stype == "row_sparse" and got.indices.asnumpy().tolist() == [4, 9]
    np.testing.assert_array_equal(got.asnumpy(), small.asnumpy().T @ rhs)
    del lhs_rows
    # csr · dense over a huge (10^6 x 10^6) csr: a dense result of 10^6 x 8 only.
    wide = nd.sparse.csr_matrix(([2.0, 3.0, -1.0], [4, 9, 4], [0, 2, 2, 3] + [3] * (n - 3)),
                                shape=(n, 10))
    out = nd.sparse.dot(wide, nd.array(w))
    assert out.shape == (n, 8)
    np.testing.assert_array_equal(out[0].asnumpy(), 2 * w[4] + 3 * w[9])
    np.testing.assert_array_equal(out[2].asnumpy(), -w[4])
    assert out[1].asnumpy().tolist() == [0.0] * 8 and _sparse_pending(wide)
    t = nd.sparse.dot(c, nd.array(np.ones((n, 2), np.float32)), transpose_a=True)
    assert t.shape == (HUGE[1], 2) and t.indices.asnumpy().tolist() == [4, 9]
    np.testing.assert_array_equal(t.data.asnumpy(), [[1, 1], [3, 3]])


def test_tostype_both_ways_and_fallback_are_numpy_exact():
    rng = np.random.RandomState(3)
    dense = (rng.rand(6, 5) < 0.4) * rng.randn(6, 5).astype(np.float32)
    for stype in ("csr", "row_sparse"):
        s = nd.array(dense).tostype(stype)
        assert _sparse_pending(s)
        back = s.tostype("default")
        assert type(back) is nd.NDArray
        np.testing.assert_array_equal(back.asnumpy(), dense)
        np.testing.assert_array_equal(s.asnumpy(), dense)
        # Operators without a sparse rule read a temporary dense copy; s stays sparse.
        np.testing.assert_array_equal(nd.exp(s).asnumpy(), nd.exp(nd.array(dense)).asnumpy())
        np.testing.assert_allclose(nd.exp(s).asnumpy(), np.exp(dense), rtol=1e-6)
        np.testing.assert_array_equal(nd.sum(s, axis=0).asnumpy(),
                                      nd.array(dense).sum(axis=0).asnumpy())
        np.testing.assert_array_equal(nd.broadcast_add(s, nd.ones((1, 5))).asnumpy(),
                                      dense + 1)
        assert _sparse_pending(s)
        # A native method on the array itself gives it dense values; all stays consistent.
        np.testing.assert_array_equal(s.sum().asnumpy(), nd.array(dense).sum().asnumpy())
        np.testing.assert_array_equal(s.T.asnumpy(), dense.T)
        assert not _sparse_pending(s)
        np.testing.assert_array_equal(s.asnumpy(), dense)
        np.testing.assert_array_equal((s * 3).asnumpy(), dense * 3)


def test_empty_sparse_arrays_combine():
    for stype in ("row_sparse", "csr"):
        a = nd.sparse.zeros(stype, (4, 3))
        total = a + nd.sparse.zeros(stype, (4, 3))
        assert total.stype == stype and total.data.shape[0] == 0
        total += nd.array(np.eye(4, 3, dtype=np.float32)).tostype(stype)
        np.testing.assert_array_equal(total.asnumpy(), np.eye(4, 3))
        np.testing.assert_array_equal((a * nd.ones((4, 3))).asnumpy(), np.zeros((4, 3)))
    one_d = nd.sparse.row_sparse_array((np.zeros(0, np.float32), []), shape=(5,))
    assert (one_d + one_d).shape == (5,)


def test_dense_values_written_natively_are_what_assignment_copies():
    # An array with dense values (e.g. an optimizer's float32 master weight after a fused
    # update) is read through them, not through components taken earlier.
    master = nd.array(np.eye(3, dtype=np.float32)).tostype("row_sparse")
    assert master.T.shape == (3, 3) and not _sparse_pending(master)
    nd.NDArray.__setitem__(master, slice(None), nd.full((3, 3), 2.0))
    weight = nd.sparse.zeros("row_sparse", (3, 3), dtype="float16")
    weight[:] = master.astype("float16")
    np.testing.assert_array_equal(weight.asnumpy(), np.full((3, 3), 2.0))
    assert _sparse_pending(weight) and weight.indices.asnumpy().tolist() == [0, 1, 2]
    np.testing.assert_array_equal((master * master).asnumpy(), np.full((3, 3), 4.0))


def test_autograd_through_a_sparse_input():
    a = np.array([[0, 2, 0], [1, 0, 3]], np.float32)
    c = nd.array(a).tostype("csr")
    w = nd.array(np.arange(6, dtype=np.float32).reshape(3, 2))
    w.attach_grad()
    with mx.autograd.record():
        y = nd.dot(c, w)
        loss = (y * y).sum()
    loss.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), a.T @ (2 * (a @ w.asnumpy())), rtol=1e-6)
    assert _sparse_pending(c)


def test_bad_components_raise_clear_errors():
    with pytest.raises(ValueError, match=r"csr_matrix: column indices of row 1 must be sorted"):
        nd.sparse.csr_matrix(([1, 2, 3], [0, 2, 1], [0, 1, 3]), shape=(2, 3))
    with pytest.raises(ValueError, match=r"csr_matrix: column indices must lie in \[0, 3\)"):
        nd.sparse.csr_matrix(([1, 2], [0, 5], [0, 1, 2]), shape=(2, 3))
    with pytest.raises(ValueError, match="row_sparse_array: row indices must be sorted"):
        nd.sparse.row_sparse_array((np.ones((2, 2)), [3, 1]), shape=(BIG, 2))
    with pytest.raises(ValueError, match=r"row_sparse_array: row indices must lie in"):
        nd.sparse.row_sparse_array((np.ones((1, 2)), [BIG]), shape=(BIG, 2))
    with pytest.raises(MXNetError, match="zeros: unknown storage type 'coo'"):
        nd.sparse.zeros("coo", (2, 2))
    x, _ = _big_rsp()
    with pytest.raises(MXNetError, match="tostype: unknown storage type 'dense'"):
        x.tostype("dense")


def test_native_use_that_needs_unallocatable_dense_values_is_a_clear_error():
    # A native method on the sparse array itself needs its dense values (4 TB here): the failed
    # allocation is an MXNetError naming what was built, never a PanicException, and the array
    # stays usable through its components.
    x = nd.sparse.zeros("csr", HUGE)
    for use in (lambda: x.T, lambda: x.attach_grad(), lambda: x == 0,
                lambda: mx.autograd.backward([x])):
        with pytest.raises(MXNetError, match="csr to dense") as info:
            use()
        assert type(info.value).__name__ != "PanicException"
    assert _sparse_pending(x) and x.shape == HUGE and x.data.shape == (0,)
