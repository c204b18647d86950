"""Operators with sparse rules: the elementwise ops whose result stays sparse, ``retain`` and
``dot``. They compute from the components (work and memory follow the stored values), and a
result holds the nonzeros of its values (stored zeros are dropped, as MXNet's fallback does).
Under ``autograd.record()`` they compute on the dense values with recorded native ops instead,
so the tape sees every sparse result."""

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
    """The dense values of any array (a plain NDArray: a temporary for a sparse array holding
    only components, else sharing its storage)."""
    return x._dense() if isinstance(x, BaseSparseNDArray) else x


def _recording():
    from .. import autograd
    return autograd.is_recording()


def wrap_structure_of(dense, stype):
    """``dense`` (a native result) as a ``stype`` array whose components are its nonzeros (csr)
    or nonzero rows (row_sparse); it stays the storage and autograd entry while recording."""
    values = dense.asnumpy()
    if stype == "csr":
        data, indices, indptr = csr_components(values)
        aux = [_nd(indptr, _np.int64), _nd(indices, _np.int64)]
    else:
        data, indices = rsp_components(values)
        aux = [_nd(indices, _np.int64)]
    cls = CSRNDArray if stype == "csr" else RowSparseNDArray
    if _recording():
        return cls._wrap(dense, _nd(data, values.dtype), aux)
    return cls._lazy(_nd(data, values.dtype), aux, values.shape)


# ---------------------------------------------------------------------------------------------
# components <-> coordinates (NumPy, work ~ stored values)


def _rsp_rows(x, rows):
    """``x``'s stored rows at the sorted row numbers ``rows`` (zeros where it stores none)."""
    own = x.indices.asnumpy()
    out = _np.zeros((rows.size, *x.shape[1:]), dtype=_np.dtype(x.dtype))
    mask = _np.isin(own, rows)
    out[_np.searchsorted(rows, own[mask])] = x.data.asnumpy()[mask]
    return out


def _rsp_result(values, rows, shape):
    """A row_sparse array from rows of values (all-zero rows dropped)."""
    flat = values.reshape(values.shape[0], int(_np.prod(values.shape[1:], dtype=_np.int64)))
    keep = (flat != 0).any(axis=1)
    return RowSparseNDArray._lazy(_nd(values[keep], values.dtype),
                                  [_nd(rows[keep].astype(_np.int64), _np.int64)], shape)


def _csr_keys(x):
    """The flat positions ``row * cols + col`` of ``x``'s stored values (sorted)."""
    indptr = x.indptr.asnumpy()
    rows = _np.repeat(_np.arange(x.shape[0], dtype=_np.int64), _np.diff(indptr))
    return rows * x.shape[1] + x.indices.asnumpy()


def _csr_at(x, keys):
    """``x``'s values at the sorted flat positions ``keys`` (zero where it stores none)."""
    own = _csr_keys(x)
    out = _np.zeros(keys.size, dtype=_np.dtype(x.dtype))
    mask = _np.isin(own, keys)
    out[_np.searchsorted(keys, own[mask])] = x.data.asnumpy()[mask]
    return out


def _csr_result(values, keys, shape):
    """A csr array from values at sorted flat positions (zeros dropped)."""
    keep = values != 0
    values, keys = values[keep], keys[keep]
    rows, cols = _np.divmod(keys, shape[1]) if shape[1] else (keys, keys)
    indptr = _np.concatenate([[0], _np.cumsum(_np.bincount(rows, minlength=shape[0]))])
    return CSRNDArray._lazy(_nd(values, values.dtype), [_nd(indptr, _np.int64),
                                                        _nd(cols, _np.int64)], shape)


# ---------------------------------------------------------------------------------------------
# the rules


def unary(name, x):
    """``name`` applied to ``x``: sparse with the same structure for zero-preserving ops."""
    fn = _op(name)
    if not isinstance(x, BaseSparseNDArray) or name not in ZERO_PRESERVING:
        return fn(dense_of(x))
    if _recording() or not x._pending:
        return type(x)._wrap(fn(x._dense()), fn(x.data), x._sp_aux)
    return type(x)._lazy(fn(x.data), x._sp_aux, x.shape)


_NATIVE = {"add": NDArray.__add__, "sub": NDArray.__sub__, "mul": NDArray.__mul__,
           "div": NDArray.__truediv__}
_NUMPY = {"add": _np.add, "sub": _np.subtract, "mul": _np.multiply}


def _is_scalar(v):
    return isinstance(v, (int, float, _np.number)) and not isinstance(v, bool)


def _sparse_binary(kind, lhs, rhs):
    """``lhs <kind> rhs`` from the components, for (+|-|*) of two sparse arrays of one stype and
    shape, or sparse * dense of one shape; None when these do not apply."""
    if tuple(rhs.shape) != tuple(lhs.shape) or _np.dtype(rhs.dtype) != _np.dtype(lhs.dtype):
        return None
    fn = _NUMPY[kind]
    if rhs.stype == "default":  # only mul reaches here
        other = rhs.asnumpy()
        if lhs.stype == "csr":
            keys = _csr_keys(lhs)
            rows, cols = _np.divmod(keys, lhs.shape[1])
            return _csr_result(fn(lhs.data.asnumpy(), other[rows, cols]), keys, lhs.shape)
        rows = lhs.indices.asnumpy()
        return _rsp_result(fn(lhs.data.asnumpy(), other[rows]), rows, lhs.shape)
    union = _np.union1d if kind != "mul" else _np.intersect1d
    if lhs.stype == "csr":
        keys = union(_csr_keys(lhs), _csr_keys(rhs))
        return _csr_result(fn(_csr_at(lhs, keys), _csr_at(rhs, keys)), keys, lhs.shape)
    rows = union(lhs.indices.asnumpy(), rhs.indices.asnumpy())
    return _rsp_result(fn(_rsp_rows(lhs, rows), _rsp_rows(rhs, rows)), rows, lhs.shape)


def binary(kind, lhs, rhs):
    """``lhs <kind> rhs`` for a sparse ``lhs``, with MXNet's result storage types:
    sparse (+|-|*) sparse of one stype stays sparse; sparse * dense and sparse (*|/) scalar keep
    the sparse one's stype; everything else is dense."""
    native = _NATIVE[kind]
    if _is_scalar(rhs):
        if kind in ("mul", "div"):
            if _recording() or not lhs._pending:
                return type(lhs)._wrap(native(lhs._dense(), rhs), native(lhs.data, rhs),
                                       lhs._sp_aux)
            return type(lhs)._lazy(native(lhs.data, rhs), lhs._sp_aux, lhs.shape)
        return native(lhs._dense(), rhs)
    if not isinstance(rhs, NDArray):
        return NotImplemented
    same = isinstance(rhs, BaseSparseNDArray) and rhs.stype == lhs.stype
    keeps = (same and kind in ("add", "sub", "mul")) or (kind == "mul" and rhs.stype == "default")
    # Components are the truth only of arrays without dense values (see _assign).
    from_components = lhs._pending and (rhs.stype == "default" or rhs._pending)
    if keeps and from_components and not _recording():
        res = _sparse_binary(kind, lhs, rhs)
        if res is not None:
            return res
    res = native(lhs._dense(), dense_of(rhs))
    if keeps and tuple(res.shape) == tuple(lhs.shape):
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
    return RowSparseNDArray._lazy(_nd(values, values.dtype), [_nd(rows[keep], _np.int64)],
                                  data.shape)


def _csr_t_dot(lhs, rhs):
    """csrᵀ · rhs as a row_sparse array: only the rows for columns the csr stores are computed
    (the columns are renumbered 0..k-1 first), so work and memory follow the stored values."""
    cols = lhs.indices.asnumpy()
    present = _np.zeros(lhs.shape[1], dtype=bool)
    present[cols] = True
    rows = _np.flatnonzero(present)
    renumbered = (_np.cumsum(present) - 1)[cols]
    vals = _op("_sparse_dot_csr")(lhs.data, _nd(renumbered, _np.int64), lhs.indptr, rhs,
                                  num_cols=int(rows.size), transpose_a=True)
    return _rsp_result(vals.asnumpy(), rows, (lhs.shape[1], rhs.shape[1]))


def _native_kernel(lhs, rhs, transpose_a, transpose_b):
    """The product through the native sparse kernels (work ~ stored values), or None when they
    do not apply: autograd recording (the dense path records the product), other dtypes or
    layouts."""
    from .. import ndarray
    if _recording() or transpose_b or not hasattr(ndarray, "_sparse_dot_csr"):
        return None
    if lhs.dtype not in (_np.float32, _np.float64) or rhs.dtype != lhs.dtype:
        return None
    if isinstance(lhs, CSRNDArray) and rhs.stype == "default" and rhs.ndim == 2:
        if transpose_a:
            if rhs.shape[0] != lhs.shape[0]:
                return None  # the dense path names the shapes
            return _csr_t_dot(lhs, rhs)
        return _op("_sparse_dot_csr")(lhs.data, lhs.indices, lhs.indptr, rhs,
                                      num_cols=lhs.shape[1])
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
        if res.stype == forward_stype:
            return res
        return wrap_structure_of(dense_of(res), forward_stype)
    if res.stype != "default":
        return res if forward_stype is None else res.tostype("default")
    lst, rst = lhs.stype, rhs.stype
    if forward_stype is None and lst == "csr" and rst == "default" and transpose_a \
            and not transpose_b:
        return wrap_structure_of(res, "row_sparse")
    if forward_stype is None and lst == "default" and rst == "csr" and not transpose_a \
            and not transpose_b:
        return wrap_structure_of(res, "csr")
    return res
