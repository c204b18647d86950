"""Sparse storage (csr, row_sparse): creation, conversion, indexing, copies, bad input."""

import pickle

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import nd
from ferrograd.base import MXNetError

DENSE = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0], [0.0, 0.0, 0.0]], dtype=np.float32)


def test_tostype_gives_classes_components_and_values():
    x = nd.array(DENSE)
    c = x.tostype("csr")
    assert isinstance(c, nd.sparse.CSRNDArray) and isinstance(c, nd.NDArray)
    assert c.stype == "csr" and c.shape == (3, 3) and c.dtype == np.float32
    assert c.data.asnumpy().tolist() == [1, 2, 3]
    assert c.indices.asnumpy().tolist() == [1, 0, 2]
    assert c.indptr.asnumpy().tolist() == [0, 1, 3, 3]
    assert c.indices.dtype == np.int64 and c.indptr.dtype == np.int64
    np.testing.assert_array_equal(c.asnumpy(), DENSE)
    r = x.tostype("row_sparse")
    assert isinstance(r, nd.sparse.RowSparseNDArray) and r.stype == "row_sparse"
    assert r.indices.asnumpy().tolist() == [0, 1]
    np.testing.assert_array_equal(r.data.asnumpy(), DENSE[:2])
    d = c.tostype("default")
    assert type(d) is nd.NDArray and d.stype == "default"
    np.testing.assert_array_equal(r.tostype("default").asnumpy(), DENSE)


def test_tostype_bad_requests():
    x = nd.array(DENSE)
    with pytest.raises(MXNetError, match="unknown storage type 'foo'"):
        x.tostype("foo")
    with pytest.raises(ValueError, match="csr to row_sparse"):
        x.tostype("csr").tostype("row_sparse")
    with pytest.raises(ValueError, match="must be 2-D"):
        nd.ones((2, 2, 2)).tostype("csr")
    r = nd.ones((2, 2, 2)).tostype("row_sparse")
    assert r.indices.asnumpy().tolist() == [0, 1] and r.data.shape == (2, 2, 2)


def test_repr_names_class_shape_and_context():
    assert repr(nd.array(DENSE).tostype("csr")) == "\n<CSRNDArray 3x3 @cpu(0)>"
    assert str(nd.zeros((2, 4), stype="row_sparse")) == "\n<RowSparseNDArray 2x4 @cpu(0)>"


def test_csr_matrix_constructor_forms():
    by_parts = nd.sparse.csr_matrix(([1, 2, 3], [1, 0, 2], [0, 1, 3, 3]), shape=(3, 3))
    np.testing.assert_array_equal(by_parts.asnumpy(), DENSE)
    assert by_parts.dtype == np.float32
    inferred = nd.sparse.csr_matrix(([1, 2, 3], [1, 0, 2], [0, 1, 3]))
    assert inferred.shape == (2, 3)
    coo = nd.sparse.csr_matrix(([1, 2, 3], ([0, 1, 1], [1, 0, 2])), shape=(3, 3))
    np.testing.assert_array_equal(coo.asnumpy(), DENSE)
    assert nd.sparse.csr_matrix((4, 5)).asnumpy().sum() == 0
    assert nd.sparse.csr_matrix((4, 5)).indptr.asnumpy().tolist() == [0] * 5
    np.testing.assert_array_equal(nd.sparse.csr_matrix(DENSE).asnumpy(), DENSE)
    np.testing.assert_array_equal(nd.sparse.csr_matrix(nd.array(DENSE)).asnumpy(), DENSE)
    assert nd.sparse.csr_matrix(DENSE.astype(np.float64)).dtype == np.float64
    assert nd.sparse.csr_matrix(([1.0], [0], [0, 1]), dtype="float64").dtype == np.float64


def test_csr_from_and_to_scipy():
    sps = pytest.importorskip("scipy.sparse")
    m = sps.csr_matrix(DENSE)
    c = nd.sparse.csr_matrix(m)
    np.testing.assert_array_equal(c.asnumpy(), DENSE)
    back = c.asscipy()
    assert sps.isspmatrix_csr(back)
    np.testing.assert_array_equal(back.toarray(), DENSE)
    assert nd.array(m).stype == "csr"


def test_row_sparse_array_constructor_forms():
    r = nd.sparse.row_sparse_array(([[1, 2, 3]], [1]), shape=(3, 3))
    np.testing.assert_array_equal(r.asnumpy(), [[0, 0, 0], [1, 2, 3], [0, 0, 0]])
    assert nd.sparse.row_sparse_array(([[1, 2, 3]], [1])).shape == (2, 3)
    assert nd.sparse.row_sparse_array((4, 2)).indices.shape == (0,)
    np.testing.assert_array_equal(nd.sparse.row_sparse_array(DENSE).asnumpy(), DENSE)
    r64 = nd.sparse.row_sparse_array(([[1, 2]], [0]), shape=(2, 2), dtype="float64")
    assert r64.dtype == np.float64 and r64.data.dtype == np.float64


def test_bad_components_raise_clear_errors():
    with pytest.raises(ValueError, match="sorted"):
        nd.sparse.csr_matrix(([1, 2], [2, 0], [0, 2]), shape=(1, 3))
    with pytest.raises(ValueError, match=r"column indices must lie in \[0, 3\)"):
        nd.sparse.csr_matrix(([1, 2, 3], [1, 0, 5], [0, 1, 3]), shape=(2, 3))
    with pytest.raises(ValueError, match="indptr"):
        nd.sparse.csr_matrix(([1, 2, 3], [1, 0, 2], [0, 1, 2]), shape=(2, 3))
    with pytest.raises(mx.base.ShapeError, match="indptr must have 3 entries"):
        nd.sparse.csr_matrix(([1], [1], [0, 1]), shape=(2, 3))
    with pytest.raises(ValueError, match="sorted and unique"):
        nd.sparse.row_sparse_array(([[1, 2], [3, 4]], [1, 0]), shape=(2, 2))
    with pytest.raises(ValueError, match=r"row indices must lie in \[0, 2\)"):
        nd.sparse.row_sparse_array(([[1, 2]], [5]), shape=(2, 2))
    with pytest.raises(mx.base.ShapeError, match="does not hold"):
        nd.sparse.row_sparse_array(([[1, 2, 3]], [0]), shape=(2, 2))
    with pytest.raises(MXNetError, match="unknown storage type 'foo'"):
        nd.sparse.zeros("foo", (2, 2))
    with pytest.raises(MXNetError, match="unknown storage type"):
        nd.zeros((2, 2), stype="dense")


def test_zeros_and_empty_with_stype():
    for st in ("csr", "row_sparse"):
        for z in (nd.zeros((2, 3), stype=st), nd.empty((2, 3), stype=st),
                  nd.sparse.zeros(st, (2, 3), dtype="float64")):
            assert z.stype == st and z.shape == (2, 3)
            assert z.data.shape[0] == 0
            np.testing.assert_array_equal(z.asnumpy(), np.zeros((2, 3)))
    assert nd.sparse.zeros("row_sparse", (2, 3), dtype="float64").dtype == np.float64
    assert nd.zeros((2, 3), stype="default").stype == "default"


def test_csr_row_indexing():
    c = nd.array(DENSE).tostype("csr")
    row = c[1]
    assert row.stype == "csr" and row.shape == (1, 3)
    np.testing.assert_array_equal(row.asnumpy(), DENSE[1:2])
    np.testing.assert_array_equal(c[-1].asnumpy(), DENSE[2:3])
    part = c[0:2]
    np.testing.assert_array_equal(part.asnumpy(), DENSE[:2])
    assert part.indptr.asnumpy().tolist() == [0, 1, 3]
    assert c[1:].indptr.asnumpy().tolist() == [0, 2, 2]
    assert c[(slice(0, 2),)].indptr.asnumpy().tolist() == [0, 1, 3]
    with pytest.raises(ValueError, match="continuous slicing"):
        c[::2]
    with pytest.raises(ValueError, match="multi-dimension"):
        c[0, 1]
    with pytest.raises(IndexError, match="out of bounds"):
        c[3]


def test_row_sparse_indexing():
    r = nd.array(DENSE).tostype("row_sparse")
    assert r[:] is r
    with pytest.raises(ValueError, match="retain"):
        r[0]


def test_copy_copyto_astype_detach_and_assignment():
    c = nd.array(DENSE).tostype("csr")
    cc = c.copy()
    assert cc.stype == "csr" and cc is not c
    np.testing.assert_array_equal(cc.asnumpy(), DENSE)
    dense_out = nd.zeros((3, 3))
    assert c.copyto(dense_out) is dense_out
    np.testing.assert_array_equal(dense_out.asnumpy(), DENSE)
    r = nd.array(DENSE).tostype("row_sparse")
    target = nd.sparse.zeros("row_sparse", (3, 3))
    r.copyto(target)
    assert target.indices.asnumpy().tolist() == [0, 1]
    np.testing.assert_array_equal(target.asnumpy(), DENSE)
    with pytest.raises(TypeError, match="row_sparse array into a csr"):
        r.copyto(nd.sparse.zeros("csr", (3, 3)))
    on_ctx = c.copyto(mx.cpu(0))
    assert on_ctx.stype == "csr" and on_ctx.context == mx.cpu(0)
    c64 = c.astype("float64")
    assert c64.stype == "csr" and c64.dtype == np.float64 and c64.data.dtype == np.float64
    assert c.detach().stype == "csr"
    target[:] = nd.ones((3, 3))
    assert target.indices.asnumpy().tolist() == [0, 1, 2]
    np.testing.assert_array_equal(target.asnumpy(), np.ones((3, 3)))
    with pytest.raises(ValueError, match="whole array"):
        target[0:1] = 1


def test_check_format_and_pickle():
    c = nd.array(DENSE).tostype("csr")
    c.check_format()
    back = pickle.loads(pickle.dumps(c))
    assert back.stype == "csr"
    np.testing.assert_array_equal(back.indices.asnumpy(), [1, 0, 2])
    np.testing.assert_array_equal(back.asnumpy(), DENSE)


def test_cast_storage():
    x = nd.array(DENSE)
    assert nd.sparse.cast_storage(x, "csr").stype == "csr"
    assert nd.sparse.cast_storage(x.tostype("csr"), "default").stype == "default"


def test_rand_sparse_ndarray_parts_and_density():
    from ferrograd import test_utils as tu
    np.random.seed(0)
    arr, (values, rows) = tu.rand_sparse_ndarray((20, 4), "row_sparse", density=0.5)
    np.testing.assert_array_equal(arr.indices.asnumpy(), rows)
    np.testing.assert_array_equal(arr.data.asnumpy(), values)
    arr, (indptr, indices, data) = tu.rand_sparse_ndarray((30, 30), "csr", density=0.2)
    assert 0.1 < data.shape[0] / 900 < 0.3
    assert indptr.asnumpy()[-1] == data.shape[0]
    full, _ = tu.rand_sparse_ndarray((4, 8), "csr", density=0.5, distribution="powerlaw")
    counts = np.diff(full.indptr.asnumpy())
    assert counts.tolist() == [1, 2, 4, 8]
    empty, (vals, idx) = tu.rand_sparse_ndarray((3, 2), "row_sparse", rsp_indices=[])
    assert empty.stype == "row_sparse" and vals.size == 0


def test_fractional_indices_are_refused():
    with pytest.raises(ValueError, match="indices must be integers"):
        nd.sparse.csr_matrix(([1.0], [0.5], [0, 1]), shape=(1, 2))
