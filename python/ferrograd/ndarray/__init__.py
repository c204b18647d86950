"""``ferrograd.nd``: MXNet 1.x NDArray API (``mx.nd``).

Arrays are float32 by default, arithmetic broadcasts, reductions without an axis return shape
``(1,)``, and execution is synchronous (``waitall``/``wait_to_read`` are no-ops). Without NumPy
shape semantics (MXNet 1.x's default), creating a zero-dimensional array with ``zeros(())`` and
friends raises :class:`~ferrograd.base.MXNetError`; ``array(3.0)`` is still 0-d, as in MXNet.
"""

import numbers as _numbers
import operator as _operator

import numpy as _np

from .. import _ferrograd
from .._ferrograd import NDArray
from ..base import DTypeError, MXNetError, ShapeError, ValueError_
from ..cached_op import CachedOp  # noqa: F401 - mx.nd.CachedOp
from ..context import Context, _check_context, current_context
from . import _fluent, random
from ._interop import from_dlpack, from_numpy, to_dlpack_for_read, to_dlpack_for_write
from ._io import load, load_frombuffer, save
from ._registry import make_ops

_OPS = make_ops()
globals().update({k: v for k, v in _OPS.items() if k.isidentifier()})
_fluent.attach(NDArray)

# These use the ops above.
from . import _internal, _methods, contrib, image, linalg, ndarray, sparse  # noqa: E402, F401
from .ndarray import (  # noqa: E402
    concatenate,
    fill_element_0index,
    moveaxis,
    onehot_encode,
    reset_arrays,  # noqa: F401 - mx.nd.reset_arrays
    split_v2,
)

_methods.attach(NDArray)
_dense_dot = dot  # noqa: F821 - from the registry


def dot(lhs, rhs, transpose_a=False, transpose_b=False, forward_stype=None, *, out=None,
        name=None):
    """Matrix product (see ``nd.sparse.dot`` for csr/row_sparse operands and their result
    storage); dense operands go straight to the native op."""
    if isinstance(lhs, sparse.BaseSparseNDArray) or isinstance(rhs, sparse.BaseSparseNDArray):
        res = sparse.dot(lhs, rhs, transpose_a, transpose_b, forward_stype)
        return _into(out, res, "dot") if out is not None else res
    return _dense_dot(lhs, rhs, transpose_a, transpose_b, forward_stype, out=out, name=name)


dot.__doc__ = _dense_dot.__doc__


def _dtype(dtype, default="float32"):
    return default if dtype is None else dtype


def _ctx(ctx):
    if ctx is not None:
        _check_context(ctx)


def _placed(res, ctx):
    """``res`` remembering a non-default ``ctx`` (``cpu(1)``, ``cpu_shared(0)``...) as its
    ``context`` (MXNet treats each cpu(i) as its own device)."""
    if ctx is not None and (ctx.device_type != "cpu" or ctx.device_id != 0):
        res._set_context(ctx)
    return res


def _shape_arg(shape, op):
    """A validated shape tuple: ints >= 0; ``()`` only with NumPy shape semantics (MXNet 1.x)."""
    if isinstance(shape, (int, _np.integer)):
        shape = (shape,)
    try:
        shape = tuple(_operator.index(d) for d in shape)
    except TypeError:
        raise DTypeError(f"{op}: shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError_(f"{op}: negative dimension in shape {shape}")
    if not shape and not _ferrograd._np_shape():
        raise ShapeError(
            f"{op}: shape () (a zero-dimensional array) is not supported with MXNet 1.x shape "
            "semantics; use shape (1,), or turn NumPy shape semantics on"
        )
    return shape


def array(source_array, ctx=None, dtype=None):
    """Creates an array from any array-like (always a copy).

    ``dtype=None`` gives float32 for scalars, lists and NumPy arrays alike (MXNet 1.x: an int64
    or float64 NumPy array becomes float32), and keeps the dtype of a source NDArray.
    """
    _ctx(ctx)
    if isinstance(source_array, sparse.BaseSparseNDArray) or sparse._is_scipy_sparse(source_array):
        return sparse.array(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, NDArray) and dtype is None:
        dtype = source_array.dtype
    try:
        return _placed(_ferrograd._array(source_array, _dtype(dtype)), ctx)
    except MXNetError:
        raise
    except ValueError as e:
        raise ValueError_(
            f"array: source_array must be a scalar or a (nested) sequence of equal-length "
            f"sequences; got {type(source_array).__name__} ({e})"
        ) from None
    except TypeError as e:
        raise DTypeError(f"array: source_array must be array-like, got "
                         f"{type(source_array).__name__} ({e})") from None


def _sparse_check(stype, op):
    """Whether ``stype`` asks for sparse storage (an unknown one raises MXNetError)."""
    from .sparse_storage import check_stype
    return stype is not None and check_stype(stype, op) != "default"


def empty(shape, ctx=None, dtype=None, stype=None):
    """An array of ``shape`` (filled with zeros: ferrograd never hands out uninitialised memory)."""
    _ctx(ctx)
    if _sparse_check(stype, "empty"):
        return sparse.zeros(stype, shape, ctx=ctx, dtype=dtype)
    return _placed(_ferrograd._full(_shape_arg(shape, "empty"), 0.0, _dtype(dtype)), ctx)


def _known_shape(shape, op):
    """``shape`` for ``zeros``/``ones``: outside NumPy shape semantics MXNet 1.x reads a 0
    dimension as "unknown", so the shape cannot be inferred (``empty``, ``full`` and ``array``
    accept it, as in MXNet)."""
    shape = _shape_arg(shape, op)
    if 0 in shape and not _ferrograd._np_shape():
        raise ShapeError(
            f"{op}: shape {shape} has a 0 dimension, which MXNet 1.x shape semantics reads as "
            "unknown (inferring the shape failed); turn NumPy shape semantics on "
            "(mx.util.set_np_shape(True)) for zero-size arrays, or use nd.empty")
    return shape


def _into(out, res, op):
    """``res`` written into ``out`` (MXNet's ``out=`` of the creation functions), or ``res``.
    ``out`` must have exactly ``res``'s shape, as for every op's ``out=``."""
    if out is None:
        return res
    if tuple(out.shape) != tuple(res.shape):
        raise ShapeError(f"{op}: out= has shape {tuple(out.shape)}, but the result has shape "
                         f"{tuple(res.shape)}")
    out[:] = res
    return out


def zeros(shape, ctx=None, dtype=None, stype=None, out=None, **kwargs):
    """An array of zeros (float32 unless ``dtype`` is given); written into ``out`` when given."""
    _ctx(ctx)
    if _sparse_check(stype, "zeros"):
        return _into(out, sparse.zeros(stype, shape, ctx=ctx, dtype=dtype), "zeros")
    res = _ferrograd._full(_known_shape(shape, "zeros"), 0.0, _dtype(dtype))
    return _into(out, _placed(res, ctx), "zeros")


def ones(shape, ctx=None, dtype=None, out=None, **kwargs):
    """An array of ones (float32 unless ``dtype`` is given); written into ``out`` when given."""
    _ctx(ctx)
    res = _ferrograd._full(_known_shape(shape, "ones"), 1.0, _dtype(dtype))
    return _into(out, _placed(res, ctx), "ones")


def full(shape, val, ctx=None, dtype=None, out=None):
    """An array of ``shape`` filled with ``val``; written into ``out`` when given."""
    _ctx(ctx)
    res = _ferrograd._full(_shape_arg(shape, "full"), float(val), _dtype(dtype))
    return _into(out, _placed(res, ctx), "full")


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=None):
    """Values ``start, start+step, ...`` below ``stop``, each repeated ``repeat`` times.

    As in MXNet the range must be non-empty (``start < stop`` for a positive step, ``start > stop``
    for a negative one), ``step`` non-zero and ``repeat`` positive.
    """
    _ctx(ctx)
    for arg, v in (("start", start), ("stop", stop), ("step", step)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, _numbers.Real)):
            raise DTypeError(f"arange: {arg} must be a number, got {type(v).__name__}")
    if start is None:
        raise DTypeError("arange: start must be a number, got NoneType")
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError_(f"arange: step cannot be 0 (start={start}, stop={stop})")
    if not isinstance(repeat, (int, _np.integer)) or repeat <= 0:
        raise ValueError_(f"arange: repeat must be a positive integer, got {repeat!r}")
    if (step > 0 and not start < stop) or (step < 0 and not start > stop):
        raise ValueError_(
            f"arange: (start, stop, step) = ({start}, {stop}, {step}) gives an empty or "
            "negative-size range"
        )
    vals = _np.arange(start, stop, step, dtype=_np.float64)
    if repeat != 1:
        vals = _np.repeat(vals, int(repeat))
    return _placed(_ferrograd._array(vals, _dtype(dtype)), ctx)


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (included when ``endpoint``)."""
    _ctx(ctx)
    if not isinstance(num, (int, _np.integer)) or num < 0:
        raise ValueError_(
            f"linspace: number of samples must be a non-negative integer, got {num!r}")
    return _ferrograd._array(_np.linspace(start, stop, num, endpoint=endpoint), _dtype(dtype))


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):  # noqa: N803 - MXNet's parameter names
    """A 2-D ``N x M`` array (``M=0`` means ``N``) with ones on diagonal ``k``."""
    _ctx(ctx)
    for name, v in (("N", N), ("M", M), ("k", k)):
        if not isinstance(v, (int, _np.integer)):
            raise DTypeError(f"eye: {name} must be an integer, got {v!r}")
    if N < 0 or M < 0:
        raise ValueError_(f"eye: negative dimensions N={N}, M={M}")
    return _ferrograd._array(_np.eye(N, M or None, k), _dtype(dtype))


def _filled_like(name, data, value, out):
    if not isinstance(data, NDArray):
        raise DTypeError(f"{name}: data must be an NDArray, got {type(data).__name__}")
    if out is None and _ferrograd._ag_is_recording():
        # Recorded, as MXNet records it: a backward from the result gives zero gradients.
        return _OPS[name](data)
    res = _ferrograd._full(data.shape, value, data.dtype)
    if out is None:
        return res
    if not isinstance(out, NDArray) or out.shape != res.shape or out.dtype != res.dtype:
        got = (f"shape {out.shape}, dtype {_np.dtype(out.dtype).name}" if isinstance(out, NDArray)
               else type(out).__name__)
        raise ShapeError(f"{name}: out= must have shape {res.shape} and dtype "
                         f"{_np.dtype(res.dtype).name}, got {got}")
    out[:] = res
    return out


def zeros_like(data, out=None, **kwargs):  # noqa: F811 - the registry op is shadowed on purpose
    """Zeros with the shape and dtype of ``data``."""
    return _filled_like("zeros_like", data, 0.0, out)


def ones_like(data, out=None, **kwargs):  # noqa: F811
    """Ones with the shape and dtype of ``data``."""
    return _filled_like("ones_like", data, 1.0, out)


def waitall():
    """No-op: ferrograd executes synchronously."""


def _binary_or_scalar(lhs, rhs, op):
    if isinstance(lhs, NDArray) or isinstance(rhs, NDArray):
        return op(lhs, rhs)
    return op(_np.float64(lhs), _np.float64(rhs))


def add(lhs, rhs):
    """``lhs + rhs`` with broadcasting; either side may be a scalar."""
    return _binary_or_scalar(lhs, rhs, _operator.add)


def subtract(lhs, rhs):
    """``lhs - rhs`` with broadcasting."""
    return _binary_or_scalar(lhs, rhs, _operator.sub)


def multiply(lhs, rhs):
    """``lhs * rhs`` with broadcasting."""
    return _binary_or_scalar(lhs, rhs, _operator.mul)


def divide(lhs, rhs):
    """``lhs / rhs`` with broadcasting (integer arrays truncate, as in MXNet)."""
    return _binary_or_scalar(lhs, rhs, _operator.truediv)


true_divide = divide


def modulo(lhs, rhs):
    """``lhs % rhs`` with broadcasting (the result takes the divisor's sign)."""
    return _binary_or_scalar(lhs, rhs, _operator.mod)


def power(base, exp):
    """``base ** exp`` with broadcasting."""
    return _binary_or_scalar(base, exp, _operator.pow)


def maximum(lhs, rhs):
    """Elementwise maximum with broadcasting; either side may be a scalar."""
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        return broadcast_maximum(lhs, rhs)  # noqa: F821 - from the registry
    if isinstance(lhs, NDArray):
        return _maximum_scalar(lhs, scalar=float(rhs))  # noqa: F821
    if isinstance(rhs, NDArray):
        return _maximum_scalar(rhs, scalar=float(lhs))  # noqa: F821
    return max(lhs, rhs)


def minimum(lhs, rhs):
    """Elementwise minimum with broadcasting; either side may be a scalar."""
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        return broadcast_minimum(lhs, rhs)  # noqa: F821
    if isinstance(lhs, NDArray):
        return _minimum_scalar(lhs, scalar=float(rhs))  # noqa: F821
    if isinstance(rhs, NDArray):
        return _minimum_scalar(rhs, scalar=float(lhs))  # noqa: F821
    return min(lhs, rhs)


def equal(lhs, rhs):
    """``lhs == rhs`` (0/1 in the operands' dtype)."""
    return _binary_or_scalar(lhs, rhs, _operator.eq)


def not_equal(lhs, rhs):
    """``lhs != rhs`` (0/1)."""
    return _binary_or_scalar(lhs, rhs, _operator.ne)


def greater(lhs, rhs):
    """``lhs > rhs`` (0/1)."""
    return _binary_or_scalar(lhs, rhs, _operator.gt)


def greater_equal(lhs, rhs):
    """``lhs >= rhs`` (0/1)."""
    return _binary_or_scalar(lhs, rhs, _operator.ge)


def lesser(lhs, rhs):
    """``lhs < rhs`` (0/1)."""
    return _binary_or_scalar(lhs, rhs, _operator.lt)


def lesser_equal(lhs, rhs):
    """``lhs <= rhs`` (0/1)."""
    return _binary_or_scalar(lhs, rhs, _operator.le)


__all__ = ["NDArray", "Context", "current_context", "array", "zeros", "ones", "full", "empty",
           "arange", "linspace", "eye", "zeros_like", "ones_like", "waitall", "random", "add",
           "subtract", "multiply", "divide", "true_divide", "modulo", "power", "maximum",
           "minimum", "equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal"]
__all__ += ["from_numpy", "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write",
            "argmax_channel", "shape_array", "size_array", "reshape_like", "split_v2",
            "concatenate", "moveaxis", "onehot_encode", "fill_element_0index", "CachedOp",
            "contrib"]


def Custom(*inputs, op_type=None, **kwargs):  # noqa: N802 - MXNet's name
    """Runs the Python custom operator registered as ``op_type`` (see ``mx.operator``)."""
    from ..operator import _custom_nd
    return _custom_nd(*inputs, op_type=op_type, **kwargs)


__all__ += ["Custom"]
__all__ += ["save", "load", "load_frombuffer"]

from ._histogram import histogram  # noqa: E402
from ._logical import logical_and, logical_or, logical_xor  # noqa: E402

__all__ += ["logical_and", "logical_or", "logical_xor", "histogram"]
