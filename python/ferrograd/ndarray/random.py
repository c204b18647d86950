"""``nd.random``: samplers on a counter-based generator (results do not depend on threads).

Each sampler draws from one global stream; ``seed(s)`` restarts it, so a seeded program gives the
same numbers on every run and for any ``RAYON_NUM_THREADS``. As in MXNet, the parameters of
``uniform`` and ``normal`` may be NDArrays (one distribution per element; the output has shape
``param.shape + shape``), and ``shape=None`` means ``(1,)``.
"""

import operator as _operator

import numpy as _np

from .. import _ferrograd
from .._ferrograd import NDArray
from ..base import DTypeError, ShapeError, ValueError_


def _shape(shape):
    if shape is None:
        return (1,)
    if isinstance(shape, (int, _np.integer)):
        shape = (shape,)
    try:
        shape = tuple(_operator.index(d) for d in shape)
    except TypeError:
        raise DTypeError(
            f"random: shape must be an int or a tuple of ints, got {shape!r}") from None
    return shape if shape or _ferrograd._np_shape() else (1,)


def _finish(res, out):
    if out is not None:
        out[:] = res
        return out
    return res


def _defaults(shape, dtype, out, default_dtype):
    if out is not None:
        shape = out.shape if shape is None else shape
        dtype = out.dtype if dtype is None else dtype
    return shape, (default_dtype if dtype is None else dtype)


def seed(seed_state, ctx="all"):
    """Seeds the global generator (MXNet ``mx.random.seed``); ``seed_state`` must be an int."""
    if isinstance(seed_state, bool) or not isinstance(seed_state, (int, _np.integer)):
        raise ValueError_(f"seed_state must be int, got {type(seed_state).__name__}")
    _ferrograd._random_seed(int(seed_state) & 0xFFFFFFFFFFFFFFFF)


def _per_element(name, a, b, shape, dtype, draw):
    """``draw(full_shape, dtype)`` reshaped against per-element parameters ``a``, ``b``."""
    if not (isinstance(a, NDArray) and isinstance(b, NDArray)):
        raise DTypeError(f"{name}: the two distribution parameters must both be numbers or both "
                         f"be NDArrays, got {type(a).__name__} and {type(b).__name__}")
    if a.shape != b.shape:
        raise ShapeError(f"{name}: parameter arrays must have the same shape, got {a.shape} and "
                         f"{b.shape}")
    extra = () if shape is None else _shape(shape)
    dtype = a.dtype if dtype is None else dtype
    keep = a.shape + (1,) * len(extra)
    return draw(a.shape + extra, dtype), a.reshape(keep), b.reshape(keep)


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U[low, high) (float32 by default)."""
    if isinstance(low, NDArray) or isinstance(high, NDArray):
        u, lo, hi = _per_element("uniform", low, high, shape, dtype,
                                 lambda s, d: _ferrograd._random_uniform(0.0, 1.0, s, d))
        return _finish(lo + (hi - lo) * u, out)
    shape, dtype = _defaults(shape, dtype, out, "float32")
    return _finish(_ferrograd._random_uniform(float(low), float(high), _shape(shape), dtype), out)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale²) (float32 by default)."""
    if isinstance(loc, NDArray) or isinstance(scale, NDArray):
        z, mu, sd = _per_element("normal", loc, scale, shape, dtype,
                                 lambda s, d: _ferrograd._random_normal(0.0, 1.0, s, d))
        return _finish(mu + sd * z, out)
    shape, dtype = _defaults(shape, dtype, out, "float32")
    return _finish(_ferrograd._random_normal(float(loc), float(scale), _shape(shape), dtype), out)


def randn(*shape, loc=0, scale=1, dtype=None, ctx=None, out=None, **kwargs):
    """Normal samples of the given shape, ``randn(2, 3)``."""
    return normal(loc, scale, shape or None, dtype=dtype, out=out)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Integers drawn uniformly from [low, high) (int32 by default; int32 or int64)."""
    shape, dtype = _defaults(shape, dtype, out, "int32")
    if _np.dtype(dtype).name not in ("int32", "int64"):
        raise DTypeError(f"randint: dtype must be int32 or int64, got {_np.dtype(dtype).name}")
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, (int, _np.integer)):
            raise DTypeError(f"randint: {name} must be an integer, got {v!r}")
    return _finish(_ferrograd._random_randint(int(low), int(high), _shape(shape), dtype), out)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the exponential distribution with mean ``scale`` (inverse-CDF method)."""
    if not scale > 0:
        raise ValueError_(f"exponential: scale must be positive, got {scale}")
    shape, dtype = _defaults(shape, dtype, out, "float32")
    u = _ferrograd._random_uniform(0.0, 1.0, _shape(shape), dtype)
    return _finish((1.0 - u).log() * (-float(scale)), out)


def shuffle(data, **kwargs):
    """A copy of ``data`` with its first axis randomly permuted."""
    if not isinstance(data, NDArray):
        raise DTypeError(f"shuffle: data must be an NDArray, got {type(data).__name__}")
    if data.ndim == 0 or data.shape[0] <= 1:
        return data.copy()
    keys = _ferrograd._random_uniform(0.0, 1.0, (data.shape[0],), "float64").asnumpy()
    perm = _ferrograd._array(_np.argsort(keys, kind="stable"), "int64")
    return data.take(perm)


__all__ = ["seed", "uniform", "normal", "randn", "randint", "exponential", "shuffle"]
