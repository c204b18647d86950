"""``mx.nd.sparse``: sparse storage (``csr``, ``row_sparse``), MXNet's API.

The classes live in ``sparse_storage`` (see its note on how sparse arrays are held), the sparse
operator rules in ``sparse_ops``. The other operator names MXNet lists here compute on the dense
values and return dense arrays (MXNet's storage fallback gives the same values).
"""

import numpy as _np

from .._ferrograd import NDArray
from ..base import DTypeError, ShapeError
from . import sparse_ops as _sops
from .sparse_storage import (
    BaseSparseNDArray,
    CSRNDArray,
    RowSparseNDArray,
    check_stype,
    from_dense,
    make_csr,
    make_rsp,
)
from .sparse_storage import zeros as _zeros

_CREATORS = ("csr_matrix", "row_sparse_array", "zeros", "empty", "array")

# MXNet's sparse operator names (the dense ones are in mx.nd; these take sparse inputs).
_OPS = (
    "add", "subtract", "multiply", "divide", "ElementWiseSum", "Embedding", "FullyConnected",
    "LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput", "abs",
    "adagrad_update", "adam_update", "add_n", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
    "arctanh", "broadcast_add", "broadcast_div", "broadcast_minus", "broadcast_mul",
    "broadcast_plus", "broadcast_sub", "cast_storage", "cbrt", "ceil", "clip", "concat", "cos",
    "cosh", "degrees", "dot", "elemwise_add", "elemwise_div", "elemwise_mul", "elemwise_sub",
    "exp", "expm1", "fix", "floor", "ftrl_update", "gamma", "gammaln", "log", "log10", "log1p",
    "log2", "make_loss", "mean", "negative", "norm", "radians", "relu", "retain", "rint", "round",
    "rsqrt", "sgd_mom_update", "sgd_update", "sigmoid", "sign", "sin", "sinh", "slice", "sqrt",
    "square", "stop_gradient", "sum", "tan", "tanh", "trunc", "where", "zeros_like",
)


def _is_scipy_sparse(x):
    try:
        import scipy.sparse as sps
    except ImportError:
        return False
    return sps.issparse(x)


def _shape(shape):
    if shape is None:
        return None
    return (shape,) if isinstance(shape, (int, _np.integer)) else tuple(int(d) for d in shape)


def _is_shape(x):
    return isinstance(x, tuple) and all(isinstance(d, (int, _np.integer)) for d in x)


def _placed(arr, ctx):
    if ctx is not None and ctx.device_type != "cpu":
        arr._set_context(ctx)
    return arr


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """A csr array from ``(data, indices, indptr)``, ``(data, (row, col))``, a shape tuple (all
    zeros), a dense array (NDArray or NumPy), a csr array or a SciPy sparse matrix."""
    shape = _shape(shape)
    if isinstance(arg1, tuple) and _is_shape(arg1):
        if len(arg1) != 2:
            raise ShapeError(f"csr_matrix: a csr array must be 2-D, got shape {arg1}")
        return _placed(_zeros("csr", arg1, dtype), ctx)
    if isinstance(arg1, tuple) and len(arg1) == 3:
        return _placed(make_csr(*arg1, shape, dtype), ctx)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        data, (row, col) = arg1[0], arg1[1]
        rows = _np.asarray(row.asnumpy() if isinstance(row, NDArray) else row).astype(_np.int64)
        cols = _np.asarray(col.asnumpy() if isinstance(col, NDArray) else col).astype(_np.int64)
        vals = _np.asarray(data.asnumpy() if isinstance(data, NDArray) else data)
        if shape is None:
            shape = (int(rows.max()) + 1 if rows.size else 0,
                     int(cols.max()) + 1 if cols.size else 0)
        if rows.shape != cols.shape or rows.shape != vals.shape:
            raise ShapeError(f"csr_matrix: data, row and col must have one shape, got "
                             f"{vals.shape}, {rows.shape}, {cols.shape}")
        if rows.size and (rows.min() < 0 or rows.max() >= shape[0] or cols.min() < 0
                          or cols.max() >= shape[1]):
            raise ShapeError(f"csr_matrix: (row, col) coordinates outside shape {shape}")
        dense = _np.zeros(shape, dtype=_np.dtype(dtype or "float32"))
        _np.add.at(dense, (rows, cols), vals)
        return _placed(from_dense(dense, "csr", "csr_matrix"), ctx)
    if _is_scipy_sparse(arg1):
        m = arg1.tocsr()
        m.sort_indices()
        dt = dtype if dtype is not None else m.dtype
        return _placed(make_csr(m.data, m.indices, m.indptr, shape or m.shape, dt), ctx)
    if isinstance(arg1, CSRNDArray):
        res = arg1.astype(dtype) if dtype is not None else arg1.copy()
        return _placed(res, ctx)
    if isinstance(arg1, BaseSparseNDArray):
        raise DTypeError(f"csr_matrix: cannot make a csr array from a {arg1.stype} array")
    dense = _np.asarray(arg1.asnumpy() if isinstance(arg1, NDArray) else arg1)
    if dtype is not None:
        dense = dense.astype(dtype)
    elif not isinstance(arg1, (NDArray, _np.ndarray)):
        dense = dense.astype(_np.float32)
    return _placed(from_dense(dense, "csr", "csr_matrix"), ctx)


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A row_sparse array from ``(data, indices)``, a shape tuple (all zeros), a dense array
    (NDArray or NumPy) or a row_sparse array."""
    shape = _shape(shape)
    if isinstance(arg1, tuple) and _is_shape(arg1):
        return _placed(_zeros("row_sparse", arg1, dtype), ctx)
    if isinstance(arg1, tuple) and len(arg1) == 2:
        return _placed(make_rsp(arg1[0], arg1[1], shape, dtype), ctx)
    if isinstance(arg1, RowSparseNDArray):
        res = arg1.astype(dtype) if dtype is not None else arg1.copy()
        return _placed(res, ctx)
    if isinstance(arg1, BaseSparseNDArray):
        raise DTypeError(f"row_sparse_array: cannot make a row_sparse array from a "
                         f"{arg1.stype} array")
    dense = _np.asarray(arg1.asnumpy() if isinstance(arg1, NDArray) else arg1)
    if dtype is not None:
        dense = dense.astype(dtype)
    elif not isinstance(arg1, (NDArray, _np.ndarray)):
        dense = dense.astype(_np.float32)
    return _placed(from_dense(dense, "row_sparse", "row_sparse_array"), ctx)


def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """An all-zero array of storage ``stype`` ('csr', 'row_sparse' or 'default')."""
    return _placed(_zeros(stype, shape, dtype), ctx)


def empty(stype, shape, ctx=None, dtype=None):
    """An all-zero array of storage ``stype`` (as ``zeros``: no uninitialised memory)."""
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def array(source_array, ctx=None, dtype=None):
    """A sparse array copied from a sparse array or a SciPy sparse matrix (as csr)."""
    if isinstance(source_array, BaseSparseNDArray):
        res = source_array.astype(dtype) if dtype is not None else source_array.copy()
        return _placed(res, ctx)
    if _is_scipy_sparse(source_array):
        return csr_matrix(source_array, ctx=ctx, dtype=dtype)
    raise DTypeError(f"sparse.array: source_array must be a sparse NDArray or a "
                     f"scipy.sparse matrix, got {type(source_array).__name__}")


def cast_storage(data, stype):
    """``data`` converted to storage ``stype`` (as ``data.tostype(stype)``)."""
    check_stype(stype, "cast_storage")
    if isinstance(data, BaseSparseNDArray):
        return data.tostype(stype)
    return from_dense(data, stype, "cast_storage")


def retain(data, indices):
    """The rows of a row_sparse array whose numbers are in ``indices``."""
    return _sops.retain(data, indices)


def dot(lhs, rhs, transpose_a=False, transpose_b=False, forward_stype=None):
    """Matrix product with sparse operands (see ``nd.dot``); exact values, MXNet's stypes."""
    return _sops.dot(lhs, rhs, transpose_a, transpose_b, forward_stype)


def _elementwise(kind):
    def fn(lhs, rhs):
        if isinstance(lhs, BaseSparseNDArray):
            return _sops.binary(kind, lhs, rhs)
        from . import _methods  # noqa: F401 - the dense operators are on NDArray
        return {"add": NDArray.__add__, "sub": NDArray.__sub__, "mul": NDArray.__mul__,
                "div": NDArray.__truediv__}[kind](lhs, _sops.dense_of(rhs))
    return fn


add = elemwise_add = _elementwise("add")
subtract = elemwise_sub = _elementwise("sub")
multiply = elemwise_mul = _elementwise("mul")
divide = elemwise_div = _elementwise("div")


def _unary(name):
    def fn(data, **kwargs):
        return _sops.unary(name, data) if not kwargs else _dense_op(name)(data, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``nd.{name}``: a sparse result for a sparse input (f(0) = 0)."
    return fn


def _dense_op(name):
    def fn(*args, **kwargs):
        from .. import ndarray
        args = [_sops.dense_of(a) for a in args]
        kwargs = {k: _sops.dense_of(v) for k, v in kwargs.items()}
        return getattr(ndarray, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``nd.{name}`` on the dense values (MXNet's storage fallback)."
    return fn


def zeros_like(data, **kwargs):
    """Zeros of ``data``'s shape, dtype and storage type."""
    return zeros(data.stype, data.shape, dtype=data.dtype)


_DEFINED = {"add", "subtract", "multiply", "divide", "elemwise_add", "elemwise_sub",
            "elemwise_mul", "elemwise_div", "cast_storage", "retain", "dot", "zeros_like"}
globals().update({n: _unary(n) for n in _sops.ZERO_PRESERVING if n in _OPS})
_DEFINED |= set(_sops.ZERO_PRESERVING)
globals().update({n: _dense_op(n) for n in _OPS if n not in _DEFINED})


__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", *_CREATORS, *_OPS]  # noqa: F822
