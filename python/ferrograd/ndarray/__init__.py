"""``ferrograd.nd``: MXNet 1.x NDArray API (``mx.nd``).

Arrays are float32 by default, arithmetic broadcasts, reductions without an axis return shape
``(1,)``, and execution is synchronous (``waitall``/``wait_to_read`` are no-ops).
"""

import numpy as _np

from .. import _ferrograd
from .._ferrograd import NDArray
from ..context import Context, current_context
from . import random
from ._registry import make_ops

globals().update({k: v for k, v in make_ops().items() if k.isidentifier()})


def _dtype(dtype, default="float32"):
    return default if dtype is None else dtype


def array(source_array, ctx=None, dtype=None):
    """Creates an array from any array-like (copy). Default dtype float32, as in MXNet.

    ``dtype=None`` gives float32 for lists and for NumPy arrays alike (MXNet 1.x), and keeps the
    dtype of a source NDArray.
    """
    if isinstance(source_array, NDArray) and dtype is None:
        dtype = source_array.dtype
    return _ferrograd._array(source_array, _dtype(dtype))


def empty(shape, ctx=None, dtype=None):
    """An uninitialised array (here: zeros)."""
    return zeros(shape, ctx, dtype)


def zeros(shape, ctx=None, dtype=None, **kwargs):
    """An array of zeros."""
    return _ferrograd._full(shape, 0.0, _dtype(dtype))


def ones(shape, ctx=None, dtype=None, **kwargs):
    """An array of ones."""
    return _ferrograd._full(shape, 1.0, _dtype(dtype))


def full(shape, val, ctx=None, dtype=None, out=None):
    """An array filled with ``val``."""
    res = _ferrograd._full(shape, float(val), _dtype(dtype))
    if out is not None:
        out[:] = res
        return out
    return res


def arange(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, dtype=None):
    """Evenly spaced values in ``[start, stop)``; each value repeated ``repeat`` times."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step cannot be 0")
    vals = _np.arange(start, stop, step, dtype=_np.float64)
    if repeat != 1:
        vals = _np.repeat(vals, int(repeat))
    return _ferrograd._array(vals, _dtype(dtype))


def linspace(start, stop, num, endpoint=True, ctx=None, dtype=None):
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    if num < 0:
        raise ValueError(f"linspace: number of samples must be non-negative, got {num}")
    return _ferrograd._array(_np.linspace(start, stop, num, endpoint=endpoint), _dtype(dtype))


def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """A 2-D array with ones on diagonal ``k``."""
    if N < 0 or M < 0:
        raise ValueError(f"eye: negative dimensions N={N}, M={M}")
    return _ferrograd._array(_np.eye(N, M or None, k), _dtype(dtype))


def zeros_like(data, out=None, **kwargs):  # noqa: F811 - the registry op is shadowed on purpose
    """Zeros with the shape and dtype of ``data``."""
    return _ferrograd._full(data.shape, 0.0, data.dtype)


def ones_like(data, out=None, **kwargs):  # noqa: F811
    """Ones with the shape and dtype of ``data``."""
    return _ferrograd._full(data.shape, 1.0, data.dtype)


def waitall():
    """No-op: ferrograd executes synchronously."""


def _binary_or_scalar(lhs, rhs, op):
    if isinstance(lhs, NDArray) or isinstance(rhs, NDArray):
        return op(lhs, rhs)
    return op(_np.float64(lhs), _np.float64(rhs))


def add(lhs, rhs):
    """``lhs + rhs`` with broadcasting; either side may be a scalar."""
    return _binary_or_scalar(lhs, rhs, lambda a, b: a + b)


def subtract(lhs, rhs):
    """``lhs - rhs`` with broadcasting."""
    return _binary_or_scalar(lhs, rhs, lambda a, b: a - b)


def multiply(lhs, rhs):
    """``lhs * rhs`` with broadcasting."""
    return _binary_or_scalar(lhs, rhs, lambda a, b: a * b)


def divide(lhs, rhs):
    """``lhs / rhs`` with broadcasting."""
    return _binary_or_scalar(lhs, rhs, lambda a, b: a / b)


def modulo(lhs, rhs):
    """``lhs % rhs`` with broadcasting."""
    return _binary_or_scalar(lhs, rhs, lambda a, b: a % b)


def power(base, exp):
    """``base ** exp`` with broadcasting."""
    return _binary_or_scalar(base, exp, lambda a, b: a**b)


def maximum(lhs, rhs):
    """Elementwise maximum with broadcasting; either side may be a scalar."""
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        return broadcast_maximum(lhs, rhs)  # noqa: F821 - from the registry
    if isinstance(lhs, NDArray):
        return _maximum_scalar(lhs, scalar=float(rhs))  # noqa: F821
    return _maximum_scalar(rhs, scalar=float(lhs))  # noqa: F821


def minimum(lhs, rhs):
    """Elementwise minimum with broadcasting; either side may be a scalar."""
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        return broadcast_minimum(lhs, rhs)  # noqa: F821
    if isinstance(lhs, NDArray):
        return _minimum_scalar(lhs, scalar=float(rhs))  # noqa: F821
    return _minimum_scalar(rhs, scalar=float(lhs))  # noqa: F821


def equal(lhs, rhs):
    """``lhs == rhs`` (0/1)."""
    return _binary_or_scalar(lhs, rhs, lambda a, b: a == b)


def not_equal(lhs, rhs):
    """``lhs != rhs`` (0/1)."""
    return _binary_or_scalar(lhs, rhs, lambda a, b: a != b)


def greater(lhs, rhs):
    """``lhs > rhs`` (0/1)."""
    return _binary_or_scalar(lhs, rhs, lambda a, b: a > b)


def greater_equal(lhs, rhs):
    """``lhs >= rhs`` (0/1)."""
    return _binary_or_scalar(lhs, rhs, lambda a, b: a >= b)


def lesser(lhs, rhs):
    """``lhs < rhs`` (0/1)."""
    return _binary_or_scalar(lhs, rhs, lambda a, b: a < b)


def lesser_equal(lhs, rhs):
    """``lhs <= rhs`` (0/1)."""
    return _binary_or_scalar(lhs, rhs, lambda a, b: a <= b)


__all__ = ["NDArray", "Context", "current_context", "array", "zeros", "ones", "full", "empty",
           "arange", "linspace", "eye", "zeros_like", "ones_like", "waitall", "random"]
