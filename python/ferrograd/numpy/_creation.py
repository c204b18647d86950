"""Array creation for ``ferrograd.np`` (NumPy names and signatures, MXNet's float32 default)."""

import numpy as _onp

from .. import _ferrograd
from .. import ndarray as _nd
from .._ferrograd import NDArray
from ..base import ValueError_
from ..context import _check_context
from ._ndarray import _FLOAT, _reject_legacy, _wrap, ndarray


def _ctx(ctx):
    if ctx is not None:
        _check_context(ctx)


def _dtype_name(dtype):
    """The canonical name (``'float32'``) of anything NumPy accepts as a dtype."""
    return _onp.dtype(dtype).name


def _finish(res, out):
    """Writes ``res`` into ``out`` when given (and returns ``out``), else returns ``res``."""
    if out is None:
        return res
    if not isinstance(out, ndarray):
        raise TypeError(f"out must be a ferrograd.np.ndarray, got {type(out)}")
    out[:] = res
    return out


def array(object, dtype=None, ctx=None):  # noqa: A002 - NumPy's parameter name
    """Creates an np array from any array-like (always a copy).

    With ``dtype=None``: a NumPy array or a ferrograd array keeps its dtype; Python scalars and
    (nested) lists give float32 (MXNet's default, where NumPy would pick int64 or float64).
    """
    _ctx(ctx)
    if dtype is None:
        keeps = isinstance(object, (NDArray, _onp.ndarray))
        dtype = object.dtype if keeps else _FLOAT
    return _wrap(_nd.array(object, dtype=_dtype_name(dtype)))


def asarray(a, dtype=None, ctx=None):
    """``a`` itself when it already is an np array of ``dtype``; otherwise ``array(a, dtype)``."""
    if isinstance(a, ndarray) and (dtype is None or _onp.dtype(dtype) == a.dtype):
        return a
    return array(a, dtype=dtype, ctx=ctx)


def _as_array(x):
    """An np array from an np array (as is) or an array-like; legacy nd arrays are refused."""
    _reject_legacy(x)
    return x if isinstance(x, ndarray) else array(x)


def zeros(shape, dtype=None, order="C", ctx=None):
    """An array of zeros (float32 unless ``dtype`` is given)."""
    _ctx(ctx)
    return _wrap(_nd.zeros(shape, dtype=_dtype_name(dtype or _FLOAT)))


def ones(shape, dtype=None, order="C", ctx=None):
    """An array of ones (float32 unless ``dtype`` is given)."""
    _ctx(ctx)
    return _wrap(_nd.ones(shape, dtype=_dtype_name(dtype or _FLOAT)))


def empty(shape, dtype=None, order="C", ctx=None):
    """An array of ``shape`` (zero-filled: ferrograd never hands out uninitialised memory)."""
    return zeros(shape, dtype=dtype, order=order, ctx=ctx)


def full(shape, fill_value, dtype=None, order="C", ctx=None, out=None):
    """An array of ``shape`` filled with ``fill_value`` (a number, or an array broadcast to it).

    ``dtype=None`` gives float32 for a number and the fill array's dtype for an array.
    """
    _ctx(ctx)
    if isinstance(fill_value, NDArray):
        fill = _as_array(fill_value)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        res = _wrap(_nd.broadcast_to(fill, shape=shape)).copy()
        return _finish(res if dtype is None else res.astype(_dtype_name(dtype)), out)
    res = _nd.full(shape, fill_value, dtype=_dtype_name(dtype or _FLOAT))
    return _finish(_wrap(res), out)


def _like(a, value, dtype):
    a = _as_array(a)
    return _wrap(_ferrograd._full(a.shape, float(value), _dtype_name(dtype or a.dtype)))


def zeros_like(a, dtype=None, order="C", ctx=None, out=None):
    """Zeros with the shape (and, unless ``dtype`` is given, the dtype) of ``a``."""
    return _finish(_like(a, 0.0, dtype), out)


def ones_like(a, dtype=None, order="C", ctx=None, out=None):
    """Ones with the shape (and, unless ``dtype`` is given, the dtype) of ``a``."""
    return _finish(_like(a, 1.0, dtype), out)


def full_like(a, fill_value, dtype=None, order="C", ctx=None, out=None):
    """``fill_value`` with the shape (and, unless ``dtype`` is given, the dtype) of ``a``."""
    return _finish(_like(a, fill_value, dtype), out)


def empty_like(prototype, dtype=None, order="C", ctx=None):
    """An array like ``prototype`` (zero-filled)."""
    return _like(prototype, 0.0, dtype)


def arange(start, stop=None, step=1, dtype=None, ctx=None):
    """Values ``start, start+step, ...`` below ``stop`` (float32 by default, as in MXNet).

    An empty range gives an empty array, as in NumPy; ``step=0`` raises ``ValueError``.
    """
    _ctx(ctx)
    if step == 0:
        raise ValueError_("arange: step cannot be 0")
    vals = _onp.arange(start, stop, step, dtype=_onp.float64)
    return _wrap(_ferrograd._array(vals, _dtype_name(dtype or _FLOAT)))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, ctx=None):
    """``num`` evenly spaced numbers from ``start`` to ``stop`` (float32 by default).

    ``start`` and ``stop`` are numbers; with ``retstep=True`` returns ``(samples, step)``.
    """
    _ctx(ctx)
    if axis != 0:
        raise NotImplementedError("linspace: only axis=0 is supported")
    if not isinstance(num, int | _onp.integer) or num < 0:
        raise ValueError_(f"linspace: number of samples must be a non-negative integer, got "
                          f"{num!r}")
    vals, step = _onp.linspace(start, stop, num, endpoint=endpoint, retstep=True)
    res = _wrap(_ferrograd._array(vals, _dtype_name(dtype or _FLOAT)))
    return (res, step) if retstep else res


def eye(N, M=None, k=0, dtype=None, ctx=None):  # noqa: N803 - NumPy's parameter names
    """A 2-D ``N x M`` array (``M=None`` means ``N``) with ones on diagonal ``k``."""
    _ctx(ctx)
    if M == 0:  # nd.eye reads M=0 as "M = N"; NumPy means zero columns
        return zeros((N, 0), dtype=dtype)
    return _wrap(_nd.eye(N, M or 0, k, dtype=_dtype_name(dtype or _FLOAT)))


def identity(n, dtype=None, ctx=None):
    """The ``n x n`` identity matrix."""
    return eye(n, dtype=dtype, ctx=ctx)


__all__ = ["array", "asarray", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
           "full_like", "empty_like", "arange", "linspace", "eye", "identity"]
