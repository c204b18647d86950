"""``ferrograd.np``: NumPy-compatible arrays and functions (MXNet's ``mx.np``).

``import ferrograd as mx; from ferrograd import np, npx; npx.set_np()`` gives arrays that behave
like NumPy's: 0-d results from reductions and scalar indexing, bool comparisons, float results
from integer division, a NumPy repr and ``dtype``. They are Python views of the native NDArray, so
``autograd`` works on them unchanged (``x.attach_grad()``, ``autograd.record()``,
``y.backward()``, ``x.grad`` is an np array). Call ``npx.set_np()`` first, as in MXNet: without
it arrays keep MXNet 1.x shape rules (no 0-d shapes).

Mixing an np array with a legacy ``nd.NDArray`` in one operation raises ``TypeError``; convert
with ``x.as_nd_ndarray()`` / ``y.as_np_ndarray()`` (views: no copy, same autograd history).
"""

import numpy as _onp

from .._ferrograd import NDArray as _NDArray
from . import _math, random
from ._creation import (
    arange,
    array,
    asarray,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    identity,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from ._math import (
    amax,
    amin,
    argmax,
    argmin,
    broadcast_to,
    cumsum,
    dot,
    expand_dims,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    prod,
    ravel,
    reshape,
    squeeze,
    sum,
    transpose,
)
from ._ndarray import ndarray

# Generated elementwise functions (exp, add, equal, ...) and the optional ones (concatenate,
# stack, where, clip) that exist once their native op is registered.
_OPTIONAL = ["concatenate", "stack", "where", "clip"]
_EXTRA = [n for n in [*_math._GENERATED, *_OPTIONAL] if hasattr(_math, n)]
globals().update({n: getattr(_math, n) for n in _EXTRA})

# NumPy's scalar types and constants, so ``np.float32`` and ``np.pi`` work as in NumPy.
float16, float32, float64 = _onp.float16, _onp.float32, _onp.float64
int32, int64, uint8, bool_ = _onp.int32, _onp.int64, _onp.uint8, _onp.bool_
dtype = _onp.dtype
pi, e, inf, nan, newaxis = _onp.pi, _onp.e, _onp.inf, _onp.nan, None


def _cumsum_method(self, axis=None, dtype=None, out=None):
    """Running sums along ``axis`` (see :func:`cumsum`)."""
    return cumsum(self, axis=axis, dtype=dtype, out=out)


ndarray.cumsum = _cumsum_method


def _host(x):
    """A NumPy copy of a ferrograd array; anything else unchanged."""
    return x.asnumpy() if isinstance(x, _NDArray) else x


def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` have equal values after broadcasting (official NumPy's
    ``array_equiv``; ferrograd arrays, NumPy arrays and lists are all accepted)."""
    return _onp.array_equiv(_host(a1), _host(a2))


def array_equal(a1, a2):
    """Whether ``a1`` and ``a2`` have the same shape and values (official NumPy's
    ``array_equal``; ferrograd arrays, NumPy arrays and lists are all accepted)."""
    return _onp.array_equal(_host(a1), _host(a2))


__all__ = ["ndarray", "random", "array", "asarray", "zeros", "ones", "empty", "full",
           "zeros_like", "ones_like", "full_like", "empty_like", "arange", "linspace", "eye",
           "identity", "sum", "cumsum", "mean", "prod", "max", "min", "amax", "amin", "argmax",
           "argmin",
           "maximum", "minimum", "dot", "matmul", "reshape", "ravel", "transpose", "expand_dims",
           "squeeze", "broadcast_to", "array_equiv", "array_equal", "float16", "float32",
           "float64", "int32", "int64", "uint8", "bool_", "dtype", "pi", "e", "inf", "nan",
           "newaxis"]
__all__ += _EXTRA
