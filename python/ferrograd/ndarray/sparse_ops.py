"""Operators with sparse rules: the elementwise ops whose result stays sparse, ``retain`` and
``dot``. Values always come from recorded native ops on the dense values, so autograd sees
every sparse result; the components of a result are derived from its structure."""

import numpy as _np

from .._ferrograd import NDArray
from ..base import DTypeError, ShapeError
from .sparse_storage import (
    BaseSparseNDArray,
    CSRNDArray,
    RowSparseNDArray,
    _nd,
    csr_components,
    rsp_components,
)

# Unary ops with f(0) == 0: on a sparse array they apply to the stored values only (MXNet keeps
# the storage type for these; others, such as exp, give a dense array).
ZERO_PRESERVING = (
    "abs", "sign", "rint", "round", "ceil", "floor", "trunc", "fix", "sqrt", "square", "sin",
    "tan", "arcsin", "arctan", "sinh", "tanh", "arcsinh", "arctanh", "expm1", "log1p", "relu",
    "negative", "degrees", "radians", "cbrt",
)


def _op(name):
    """``nd.<name>`` (looked up at call time: this module loads before ``nd`` is complete)."""
    from .. import ndarray
    return getattr(ndarray, name)


def dense_of(x):
    """The dense values of any array (a plain NDArray; shares storage for sparse arrays)."""
    return x._dense() if isinstance(x, BaseSparseNDArray) else x


def wrap_structure_of(dense, stype):
    """``dense`` (a native result, kept as the storage and autograd entry) as a ``stype`` array
    whose components are its nonzeros (csr) or nonzero rows (row_sparse)."""
    values = dense.asnumpy()
    if stype == "csr":
        data, indices, indptr = csr_components(values)
        return CSRNDArray._wrap(dense, _nd(data, values.dtype),
                                [_nd(indptr, _np.int64), _nd(indices, _np.int64)])
    data, indices = rsp_components(values)
    return RowSparseNDArray._wrap(dense, _nd(data, values.dtype), [_nd(indices, _np.int64)])


def unary(name, x):
    """``name`` applied to ``x``: sparse with the same structure for zero-preserving ops."""
    fn = _op(name)
    if not isinstance(x, BaseSparseNDArray) or name not in ZERO_PRESERVING:
        return fn(dense_of(x))
    return type(x)._wrap(fn(x._dense()), fn(x.data), x._sp_aux)


_NATIVE = {"add": NDArray.__add__, "sub": NDArray.__sub__, "mul": NDArray.__mul__,
           "div": NDArray.__truediv__}


def _is_scalar(v):
    return isinstance(v, (int, float, _np.number)) and not isinstance(v, bool)


def binary(kind, lhs, rhs):
    """``lhs <kind> rhs`` for a sparse ``lhs``, with MXNet's result storage types:
    sparse (+|-|*) sparse of one stype stays sparse; sparse * dense and sparse (*|/) scalar keep
    the sparse one's stype; everything else is dense."""
    native = _NATIVE[kind]
    if _is_scalar(rhs):
        res = native(lhs._dense(), rhs)
        if kind in ("mul", "div"):
            return type(lhs)._wrap(res, native(lhs.data, rhs), lhs._sp_aux)
        return res
    if not isinstance(rhs, NDArray):
        return NotImplemented
    res = native(lhs._dense(), dense_of(rhs))
    same = isinstance(rhs, BaseSparseNDArray) and rhs.stype == lhs.stype
    if tuple(res.shape) == tuple(lhs.shape) and (
            (same and kind in ("add", "sub", "mul")) or (kind == "mul" and rhs.stype == "default")):
        return wrap_structure_of(res, lhs.stype)
    return res


def retain(data, indices):
    """The rows of the row_sparse ``data`` whose numbers are in ``indices`` (others dropped)."""
    if not isinstance(data, RowSparseNDArray):
        raise DTypeError(f"sparse.retain: data must be a row_sparse array, got "
                         f"{getattr(data, 'stype', type(data).__name__)}")
    want = _np.asarray(indices.asnumpy() if isinstance(indices, NDArray) else indices)
    want = want.astype(_np.int64).reshape(-1)
    if want.size and (want.min() < 0 or want.max() >= data.shape[0]):
        raise ShapeError(f"sparse.retain: indices must lie in [0, {data.shape[0]}), got "
                         f"{want.min()}..{want.max()}")
    rows = data.indices.asnumpy()
    keep = _np.flatnonzero(_np.isin(rows, want))
    values = data.data.asnumpy()[keep]
    dense = _np.zeros(data.shape, dtype=values.dtype)
    dense[rows[keep]] = values
    return RowSparseNDArray._wrap(_nd(dense, values.dtype), _nd(values, values.dtype),
                                  [_nd(rows[keep], _np.int64)])


def _native_kernel(lhs, rhs, transpose_a, transpose_b):
    """The product through the native sparse kernels (work ~ stored values), or None when they
    do not apply: autograd recording (the dense path records the product), other dtypes or
    layouts."""
    from .. import autograd, ndarray
    if autograd.is_recording() or transpose_b or not hasattr(ndarray, "_sparse_dot_csr"):
        return None
    if lhs.dtype not in (_np.float32, _np.float64) or rhs.dtype != lhs.dtype:
        return None
    if isinstance(lhs, CSRNDArray) and rhs.stype == "default" and rhs.ndim == 2:
        return _op("_sparse_dot_csr")(lhs.data, lhs.indices, lhs.indptr, rhs,
                                      num_cols=lhs.shape[1], transpose_a=bool(transpose_a))
    if isinstance(rhs, CSRNDArray) and lhs.stype == "default" and lhs.ndim == 2 \
            and not transpose_a:
        return _op("_sparse_dot_dense_csr")(lhs, rhs.data, rhs.indices, rhs.indptr,
                                            num_cols=rhs.shape[1])
    return None


def dot(lhs, rhs, transpose_a=False, transpose_b=False, forward_stype=None):
    """``dot`` with MXNet's result storage: csr·dense and dense·rsp are dense, csr.T·dense is
    row_sparse, dense·csr is csr; the values are exactly those of the dense product (csr
    products run in native kernels whose work is proportional to the stored values)."""
    res = _native_kernel(lhs, rhs, transpose_a, transpose_b)
    if res is None:
        res = _op("dot")(dense_of(lhs), dense_of(rhs), transpose_a=transpose_a,
                         transpose_b=transpose_b)
    if forward_stype not in (None, "default"):
        return wrap_structure_of(res, forward_stype)
    lst, rst = lhs.stype, rhs.stype
    if forward_stype is None and lst == "csr" and rst == "default" and transpose_a \
            and not transpose_b:
        return wrap_structure_of(res, "row_sparse")
    if forward_stype is None and lst == "default" and rst == "csr" and not transpose_a \
            and not transpose_b:
        return wrap_structure_of(res, "csr")
    return res
