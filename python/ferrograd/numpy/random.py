"""``ferrograd.np.random``: NumPy-style samplers on ferrograd's counter-based generator.

The samplers share the stream of :mod:`ferrograd.nd.random` (``seed`` restarts both). Results are
float32 unless ``dtype`` is given. ``size=None`` gives a 0-d array for number parameters, or the
broadcast shape of array parameters (one draw per element, NumPy semantics).
"""

import operator as _operator

import numpy as _onp

from .. import _ferrograd
from ..base import DTypeError
from ..ndarray import random as _ndrandom
from ._creation import _ctx, _dtype_name, _finish
from ._ndarray import _reject_legacy, _wrap, ndarray


def _size(size, params, out):
    """The output shape: ``size``, else ``out``'s shape, else the parameters' broadcast shape."""
    if size is None:
        if out is not None:
            return out.shape
        return _onp.broadcast_shapes(*(p.shape for p in params if isinstance(p, ndarray)))
    if isinstance(size, int | _onp.integer):
        return (int(size),)
    try:
        return tuple(_operator.index(d) for d in size)
    except TypeError:
        raise DTypeError(f"random: size must be an int or a tuple of ints, got {size!r}") from None


def _draw(native, a, b, size, dtype, ctx, out):
    """``a + b * native(0, 1)`` (``native(a, b)`` directly when both parameters are numbers)."""
    _ctx(ctx)
    for p in (a, b):
        _reject_legacy(p)
    shape = _size(size, (a, b), out)
    dtype = _dtype_name(dtype or (out.dtype if out is not None else "float32"))
    if isinstance(a, ndarray) or isinstance(b, ndarray):
        return _finish(a + b * _wrap(native(0.0, 1.0, shape, dtype)), out)
    return _finish(_wrap(native(float(a), float(b), shape, dtype)), out)


def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, out=None):
    """Samples from the uniform distribution on ``[low, high)`` (float32 by default)."""
    if isinstance(low, ndarray) or isinstance(high, ndarray):
        return _draw(_ferrograd._random_uniform, low, high - low, size, dtype, ctx, out)
    return _draw(_ferrograd._random_uniform, low, high, size, dtype, ctx, out)


def normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, out=None):
    """Samples from the normal distribution N(``loc``, ``scale``²) (float32 by default)."""
    return _draw(_ferrograd._random_normal, loc, scale, size, dtype, ctx, out)


def randint(low, high=None, size=None, dtype=None, ctx=None, out=None):
    """Integers drawn uniformly from ``[low, high)`` (``[0, low)`` when ``high`` is None).

    The dtype is int64 unless ``dtype`` (int32 or int64) is given.
    """
    if high is None:
        low, high = 0, low
    res = _ndrandom.randint(low, high, shape=_size(size, (), out),
                            dtype=_dtype_name(dtype or "int64"), ctx=ctx)
    return _finish(_wrap(res), out)


def choice(a, size=None, replace=True, p=None, ctx=None, out=None):
    """Draws from ``range(a)`` (an int) or the elements of a 1-D array ``a``, with replacement
    or not, uniformly or with probabilities ``p``. Indices are int64."""
    _ctx(ctx)
    n = int(a) if isinstance(a, int | _onp.integer) else None
    if n is None and not (isinstance(a, ndarray) and a.ndim == 1):
        raise DTypeError(f"choice: a must be an int or a 1-D ndarray, got {a!r}")
    n = a.shape[0] if n is None else n
    shape = _size(size, (), out) if size is not None or out is not None else ()
    k = int(_onp.prod(shape))
    if n <= 0 or (not replace and k > n):
        raise ValueError(f"choice: cannot take {k} samples from a population of {n} "
                         f"{'with' if replace else 'without'} replacement")
    if p is not None:
        probs = p.asnumpy() if isinstance(p, ndarray) else _onp.asarray(p, dtype=float)
        if probs.shape != (n,) or (probs < 0).any() or not _onp.isclose(probs.sum(), 1.0):
            raise ValueError(f"choice: p must be {n} non-negative probabilities summing to 1")
    from .. import ndarray as _nd
    if replace and p is None:
        idx = _ndrandom.randint(0, n, shape=(k,), dtype="int64").asnumpy()
    elif replace:
        idx = _nd._sample_multinomial(_nd.array(probs, dtype="float64"), shape=(k,),
                                      dtype="int32").asnumpy()
    else:
        # The k largest of log(p) + Gumbel noise are a draw without replacement (uniform p:
        # a random permutation's first k).
        u = _ferrograd._random_uniform(0.0, 1.0, (n,), "float64").asnumpy()
        keys = -_onp.log(-_onp.log1p(-u))
        if p is not None:
            with _onp.errstate(divide="ignore"):
                keys = keys + _onp.log(probs)
        idx = _onp.argsort(-keys, kind="stable")[:k]
    idx = idx.astype(_onp.int64).reshape(shape)
    if isinstance(a, ndarray):
        res = a.asnumpy()[idx]
        return _finish(_wrap(_ferrograd._array(res, _dtype_name(a.dtype))), out)
    return _finish(_wrap(_ferrograd._array(idx, "int64")), out)


def seed(seed, ctx="all"):  # noqa: A002 - NumPy's parameter name
    """Seeds the global generator (shared with ``nd.random``); ``seed`` is an int."""
    _ndrandom.seed(seed, ctx)


__all__ = ["uniform", "normal", "randint", "choice", "seed"]
