"""``sym.random``: the symbolic twins of ``nd.random``'s samplers.

Numbers as distribution parameters give a ``_random_<name>`` node of the given ``shape``
(without one, the node's shape is inferred from where its output is used, as in MXNet);
Symbols give a ``_sample_<name>`` node drawing ``shape`` samples per element of the parameter
arrays (output ``param.shape + shape``). The draws come from the global stream of
``mx.random.seed`` at each forward, as in MXNet.
"""

from .. import symbol as _sym
from ..base import DTypeError, ValueError_
from ..ndarray.random import _log_prob
from .symbol import Symbol

__all__ = ["uniform", "normal", "randn", "randint", "gamma", "exponential", "poisson",
           "negative_binomial", "generalized_negative_binomial", "multinomial", "shuffle",
           "uniform_like", "normal_like", "gamma_like", "exponential_like", "poisson_like",
           "negative_binomial_like", "generalized_negative_binomial_like"]


def _shape(shape):
    if shape is None:
        return None
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _no_inputs(kwargs):
    """The keyword arguments of an input-less sampler node: ``ctx`` is accepted (ferrograd
    computes on the CPU) and Symbols (``randn(data=x)``) are ignored, as MXNet ignores them."""
    kwargs.pop("ctx", None)
    return {k: v for k, v in kwargs.items() if not isinstance(v, Symbol)}


def _sampler(name, params, shape, dtype, kwargs):
    symbols = [isinstance(v, Symbol) for _, v in params]
    if all(symbols):
        kwargs.pop("ctx", None)
        return getattr(_sym, "_sample_" + name)(*[v for _, v in params],
                                                shape=_shape(shape) or (),
                                                dtype="float32" if dtype is None else dtype,
                                                **kwargs)
    if any(symbols):
        raise DTypeError(f"{name}: the distribution parameters must all be numbers or all be "
                         f"Symbols, got {[type(v).__name__ for _, v in params]}")
    # No shape: () is "unknown" in a symbol, inferred from the consumers (MXNet's default).
    return getattr(_sym, "_random_" + name)(shape=_shape(shape) or (), dtype=dtype,
                                            **{k: v for k, v in params}, **_no_inputs(kwargs))


def uniform(low=0, high=1, shape=None, dtype=None, **kwargs):
    """Uniform samples in ``[low, high)``."""
    return _sampler("uniform", [("low", low), ("high", high)], shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, **kwargs):
    """Normal samples with mean ``loc`` and standard deviation ``scale``."""
    names = ("mu", "sigma") if isinstance(loc, Symbol) else ("loc", "scale")
    return _sampler("normal", [(names[0], loc), (names[1], scale)], shape, dtype, kwargs)


def randn(*shape, loc=0, scale=1, dtype=None, **kwargs):
    """Normal samples of the given shape, ``randn(2, 3)``."""
    return normal(loc, scale, shape or None, dtype, **kwargs)


def randint(low, high, shape=None, dtype=None, **kwargs):
    """Integers uniform in ``[low, high)`` (int32 by default)."""
    return _sym._random_randint(low=low, high=high, shape=_shape(shape) or (), dtype=dtype,
                                **_no_inputs(kwargs))


def gamma(alpha=1, beta=1, shape=None, dtype=None, **kwargs):
    """Gamma samples with shape ``alpha`` and scale ``beta``."""
    return _sampler("gamma", [("alpha", alpha), ("beta", beta)], shape, dtype, kwargs)


def exponential(scale=1, shape=None, dtype=None, **kwargs):
    """Exponential samples with mean ``scale``."""
    if not isinstance(scale, Symbol) and not scale > 0:
        raise ValueError_(f"exponential: scale must be positive, got scale={scale}")
    return _sampler("exponential", [("lam", 1.0 / scale)], shape, dtype, kwargs)


def poisson(lam=1, shape=None, dtype=None, **kwargs):
    """Poisson samples with mean ``lam``."""
    return _sampler("poisson", [("lam", lam)], shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, **kwargs):
    """Failures before the ``k``-th success of probability ``p``."""
    return _sampler("negative_binomial", [("k", k), ("p", p)], shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, **kwargs):
    """Counts with mean ``mu`` and variance ``mu + alpha mu²``."""
    return _sampler("generalized_negative_binomial", [("mu", mu), ("alpha", alpha)], shape,
                    dtype, kwargs)


def multinomial(data, shape=None, get_prob=False, dtype="int32", **kwargs):
    """Category indices drawn from the probabilities in ``data``'s last axis."""
    extra = _shape(shape) or ()
    samples = _sym._sample_multinomial(data, shape=extra, dtype=dtype, **kwargs)
    if get_prob:
        return _sym.Group([samples, _log_prob(_sym, data, samples, len(extra))])
    return samples


def shuffle(data, **kwargs):
    """``data`` with its first axis randomly permuted."""
    return _sym._shuffle(data, **kwargs)


def _like(name, data, params, dtype, kwargs):
    # One distribution per element of data: the parameters broadcast to data's shape, which is
    # only known when the graph is bound.
    zeros = _sym.zeros_like(data)
    arrays = [zeros + v for v in params]
    kwargs.pop("ctx", None)
    return getattr(_sym, "_sample_" + name)(*arrays, shape=(), dtype=dtype, **kwargs)


def uniform_like(data=None, low=0, high=1, dtype=None, **kwargs):
    """Uniform samples of ``data``'s shape."""
    return _like("uniform", data, (low, high), dtype, kwargs)


def normal_like(data=None, loc=0, scale=1, dtype=None, **kwargs):
    """Normal samples of ``data``'s shape."""
    return _like("normal", data, (loc, scale), dtype, kwargs)


def gamma_like(data=None, alpha=1, beta=1, dtype=None, **kwargs):
    """Gamma samples of ``data``'s shape."""
    return _like("gamma", data, (alpha, beta), dtype, kwargs)


def exponential_like(data=None, lam=1, dtype=None, **kwargs):
    """Exponential samples (rate ``lam``) of ``data``'s shape."""
    return _like("exponential", data, (lam,), dtype, kwargs)


def poisson_like(data=None, lam=1, dtype=None, **kwargs):
    """Poisson samples of ``data``'s shape."""
    return _like("poisson", data, (lam,), dtype, kwargs)


def negative_binomial_like(data=None, k=1, p=1, dtype=None, **kwargs):
    """Negative binomial samples of ``data``'s shape."""
    return _like("negative_binomial", data, (k, p), dtype, kwargs)


def generalized_negative_binomial_like(data=None, mu=1, alpha=1, dtype=None, **kwargs):
    """Generalized negative binomial samples of ``data``'s shape."""
    return _like("generalized_negative_binomial", data, (mu, alpha), dtype, kwargs)
