"""The native csr product kernels (``_sparse_dot_csr``, ``_sparse_dot_dense_csr``) against
NumPy, their use by ``nd.dot`` outside autograd, and their bad-input errors."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import nd

pytestmark = pytest.mark.skipif(not hasattr(nd, "_sparse_dot_csr"),
                                reason="extension built without the sparse kernels")


def _random_csr(rows, cols, density, dtype, seed):
    rng = np.random.RandomState(seed)
    dense = (rng.rand(rows, cols) < density) * rng.randn(rows, cols)
    dense[rows // 2] = 0  # an empty row
    return dense.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_match_numpy(dtype):
    a = _random_csr(37, 23, 0.2, dtype, 0)
    c = nd.array(a, dtype=dtype).tostype("csr")
    rhs = np.random.RandomState(1).randn(23, 5).astype(dtype)
    rhs_t = np.random.RandomState(2).randn(37, 5).astype(dtype)
    lhs = np.random.RandomState(3).randn(4, 37).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    got = nd._sparse_dot_csr(c.data, c.indices, c.indptr, nd.array(rhs, dtype=dtype),
                             num_cols=23)
    np.testing.assert_allclose(got.asnumpy(), a @ rhs, rtol=tol, atol=tol)
    got_t = nd._sparse_dot_csr(c.data, c.indices, c.indptr, nd.array(rhs_t, dtype=dtype),
                               num_cols=23, transpose_a=True)
    np.testing.assert_allclose(got_t.asnumpy(), a.T @ rhs_t, rtol=tol, atol=tol)
    got_d = nd._sparse_dot_dense_csr(nd.array(lhs, dtype=dtype), c.data, c.indices, c.indptr,
                                     num_cols=23)
    np.testing.assert_allclose(got_d.asnumpy(), lhs @ a, rtol=tol, atol=tol)
    assert got.dtype == dtype


def test_large_product_is_the_same_for_any_chunking():
    a = _random_csr(3000, 2000, 0.01, np.float32, 4)
    c = nd.array(a).tostype("csr")
    rhs = np.random.RandomState(5).randn(2000, 64).astype(np.float32)
    got = nd.sparse.dot(c, nd.array(rhs)).asnumpy()
    np.testing.assert_allclose(got, a @ rhs, rtol=1e-4, atol=1e-4)
    # summation order per row is fixed: a second run is bitwise identical
    np.testing.assert_array_equal(nd.sparse.dot(c, nd.array(rhs)).asnumpy(), got)


def test_bad_components_and_shapes_raise():
    data, idx = nd.array([1.0, 2.0]), nd.array([0, 5], dtype="int64")
    ptr = nd.array([0, 1, 2], dtype="int64")
    with pytest.raises(mx.MXNetError, match=r"outside \[0, 3\)"):
        nd._sparse_dot_csr(data, idx, ptr, nd.ones((3, 2)), num_cols=3)
    with pytest.raises(mx.MXNetError, match="does not fit rhs"):
        nd._sparse_dot_csr(data, nd.array([0, 1], dtype="int64"), ptr, nd.ones((4, 2)),
                           num_cols=3)
    with pytest.raises(mx.MXNetError, match="indptr"):
        nd._sparse_dot_csr(data, nd.array([0, 1], dtype="int64"),
                           nd.array([0, 2, 1], dtype="int64"), nd.ones((3, 2)), num_cols=3)
