"""``nd.random``: samplers on a counter-based generator (results do not depend on threads).

Each sampler draws from one global stream; ``seed(s)`` restarts it, so a seeded program gives the
same numbers on every run and for any ``RAYON_NUM_THREADS``. As in MXNet, the distribution
parameters may be NDArrays (one distribution per element; the output has shape
``param.shape + shape``), and ``shape=None`` means ``(1,)``. Invalid parameters raise
``MXNetError`` at the call (MXNet raises at the first read of the result).
"""

import operator as _operator

import numpy as _np

from .. import _ferrograd
from .. import ndarray as _nd  # the registered ops, looked up at call time
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
    dtype = "float32" if dtype is None else dtype  # MXNet: float32 whatever the parameters
    keep = a.shape + (1,) * len(extra)
    return (draw(a.shape + extra, dtype), a.astype(dtype).reshape(keep),
            b.astype(dtype).reshape(keep))


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U[low, high) (float32 by default)."""
    if isinstance(low, NDArray) or isinstance(high, NDArray):
        u, lo, hi = _per_element("uniform", low, high, shape, dtype,
                                 lambda s, d: _ferrograd._random_uniform(0.0, 1.0, s, d))
        return _finish(lo + (hi - lo) * u, out)
    shape, dtype = _defaults(shape, dtype, out, "float32")
    return _finish(_ferrograd._random_uniform(_number("uniform", "low", low),
                                                 _number("uniform", "high", high),
                                                 _shape(shape), dtype), out)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale²) (float32 by default)."""
    if isinstance(loc, NDArray) or isinstance(scale, NDArray):
        z, mu, sd = _per_element("normal", loc, scale, shape, dtype,
                                 lambda s, d: _ferrograd._random_normal(0.0, 1.0, s, d))
        return _finish(mu + sd * z, out)
    shape, dtype = _defaults(shape, dtype, out, "float32")
    return _finish(_ferrograd._random_normal(_number("normal", "loc", loc),
                                                _number("normal", "scale", scale),
                                                _shape(shape), dtype), out)


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


def _number(name, param, v):
    if isinstance(v, bool) or not isinstance(v, (int, float, _np.integer, _np.floating)):
        raise DTypeError(f"{name}: {param} must be a number or an NDArray, got {type(v).__name__}")
    return float(v)


def _sampler(name, params, shape, dtype, out):
    """Draws with scalar ``params`` through ``_random_<name>``, or per element of NDArray
    ``params`` through ``_sample_<name>`` (all NDArrays of one shape, or all numbers)."""
    arrays = [isinstance(v, NDArray) for _, v in params]
    if all(arrays):
        extra = () if shape is None else _shape(shape)
        res = getattr(_nd, "_sample_" + name)(*[v for _, v in params], shape=extra,
                                              dtype="float32" if dtype is None else dtype)
        return _finish(res, out)
    if any(arrays):
        raise DTypeError(f"{name}: the distribution parameters must all be numbers or all be "
                         f"NDArrays, got {[type(v).__name__ for _, v in params]}")
    shape, dtype = _defaults(shape, dtype, out, "float32")
    kwargs = {k: _number(name, k, v) for k, v in params}
    res = getattr(_nd, "_random_" + name)(shape=_shape(shape), dtype=dtype, **kwargs)
    return _finish(res, out)


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the gamma distribution with shape ``alpha`` and scale ``beta``."""
    return _sampler("gamma", [("alpha", alpha), ("beta", beta)], shape, dtype, out)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the exponential distribution with mean ``scale`` (rate ``1 / scale``)."""
    if not isinstance(scale, NDArray):
        scale = _number("exponential", "scale", scale)
        if not scale > 0:
            raise ValueError_(f"exponential: scale must be positive, got scale={scale}")
    return _sampler("exponential", [("lam", 1.0 / scale)], shape, dtype, out)


def poisson(lam=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from the Poisson distribution with mean ``lam`` (as floats)."""
    return _sampler("poisson", [("lam", lam)], shape, dtype, out)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Failures before the ``k``-th success of probability ``p`` (mean ``k (1 - p) / p``)."""
    return _sampler("negative_binomial", [("k", k), ("p", p)], shape, dtype, out)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, ctx=None, out=None,
                                  **kwargs):
    """Counts with mean ``mu`` and variance ``mu + alpha mu²`` (Poisson for ``alpha = 0``)."""
    return _sampler("generalized_negative_binomial", [("mu", mu), ("alpha", alpha)], shape,
                    dtype, out)


def multinomial(data, shape=None, get_prob=False, out=None, dtype="int32", **kwargs):
    """Category indices drawn from the probabilities in ``data``'s last axis: ``shape`` samples
    per row (output ``data.shape[:-1] + shape``). With ``get_prob=True`` also returns the log of
    each sample's probability, differentiable with respect to ``data``."""
    if not isinstance(data, NDArray):
        raise DTypeError(f"multinomial: data must be an NDArray, got {type(data).__name__}")
    extra = () if shape is None else _shape(shape)
    samples = _nd._sample_multinomial(data, shape=extra, dtype=dtype)
    prob = _log_prob(_nd, data, samples, len(extra)) if get_prob else None
    if samples.ndim == 0 and not _ferrograd._np_shape():  # MXNet 1.x: no 0-d arrays
        samples = samples.reshape((1,))
        prob = None if prob is None else prob.reshape((1,))
    res = [samples, prob] if get_prob else samples
    if out is not None:
        for o, r in zip(out if isinstance(out, (list, tuple)) else [out],
                        res if get_prob else [res], strict=False):
            o[:] = r
        return out
    return res


def _log_prob(F, data, samples, n_extra):
    """``log data[..., y]`` for each sample ``y``, differentiable with respect to ``data``: the
    rows of ``data`` broadcast over the ``n_extra`` sample axes, then picked (shared by ``nd``
    and ``sym``, where ``F`` is the op namespace)."""
    rows = data
    for _ in range(n_extra):
        rows = F.expand_dims(rows, axis=-2)
    if n_extra:
        rows = F.broadcast_like(rows, samples, lhs_axes=tuple(range(-n_extra - 1, -1)),
                                rhs_axes=tuple(range(-n_extra, 0)))
    return F.log(F.pick(rows, samples, axis=-1))


def _like(sampler, data, params, dtype):
    if not isinstance(data, NDArray):
        raise DTypeError(f"random *_like: data must be an NDArray, got {type(data).__name__}")
    return sampler(*params, shape=data.shape, dtype=data.dtype if dtype is None else dtype)


def uniform_like(data=None, low=0, high=1, out=None, dtype=None, **kwargs):
    """Uniform samples of ``data``'s shape and dtype."""
    return _finish(_like(uniform, data, (low, high), dtype), out)


def normal_like(data=None, loc=0, scale=1, out=None, dtype=None, **kwargs):
    """Normal samples of ``data``'s shape and dtype."""
    return _finish(_like(normal, data, (loc, scale), dtype), out)


def gamma_like(data=None, alpha=1, beta=1, out=None, dtype=None, **kwargs):
    """Gamma samples of ``data``'s shape and dtype."""
    return _finish(_like(gamma, data, (alpha, beta), dtype), out)


def exponential_like(data=None, lam=1, out=None, dtype=None, **kwargs):
    """Exponential samples (rate ``lam``) of ``data``'s shape and dtype."""
    return _finish(_like(exponential, data, (1.0 / lam,), dtype), out)


def poisson_like(data=None, lam=1, out=None, dtype=None, **kwargs):
    """Poisson samples of ``data``'s shape and dtype."""
    return _finish(_like(poisson, data, (lam,), dtype), out)


def negative_binomial_like(data=None, k=1, p=1, out=None, dtype=None, **kwargs):
    """Negative binomial samples of ``data``'s shape and dtype."""
    return _finish(_like(negative_binomial, data, (k, p), dtype), out)


def generalized_negative_binomial_like(data=None, mu=1, alpha=1, out=None, dtype=None,
                                       **kwargs):
    """Generalized negative binomial samples of ``data``'s shape and dtype."""
    return _finish(_like(generalized_negative_binomial, data, (mu, alpha), dtype), out)


def shuffle(data, out=None, **kwargs):
    """A copy of ``data`` with its first axis randomly permuted."""
    if not isinstance(data, NDArray):
        raise DTypeError(f"shuffle: data must be an NDArray, got {type(data).__name__}")
    return _finish(_nd._shuffle(data), out)


__all__ = ["seed", "uniform", "normal", "randn", "randint", "exponential", "shuffle", "gamma",
           "poisson", "negative_binomial", "generalized_negative_binomial", "multinomial",
           "uniform_like", "normal_like", "gamma_like", "exponential_like", "poisson_like",
           "negative_binomial_like", "generalized_negative_binomial_like"]
