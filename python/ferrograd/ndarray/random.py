"""``nd.random``: samplers on a counter-based generator (results do not depend on threads)."""

from .. import _ferrograd


def _shape(shape):
    if shape is None:
        return (1,)
    return (shape,) if isinstance(shape, int) else tuple(shape)


def seed(seed_state, ctx="all"):
    """Seeds the global generator (MXNet ``mx.random.seed``)."""
    _ferrograd._random_seed(int(seed_state) & 0xFFFFFFFFFFFFFFFF)


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from U[low, high)."""
    res = _ferrograd._random_uniform(float(low), float(high), _shape(shape), dtype or "float32")
    if out is not None:
        out[:] = res
        return out
    return res


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Samples from N(loc, scale²)."""
    res = _ferrograd._random_normal(float(loc), float(scale), _shape(shape), dtype or "float32")
    if out is not None:
        out[:] = res
        return out
    return res


def randn(*shape, loc=0, scale=1, dtype=None, ctx=None, **kwargs):
    """Standard normal samples of the given shape (``randn(2, 3)``)."""
    return normal(loc, scale, shape or (1,), dtype=dtype)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Integers sampled uniformly from [low, high) (int32 by default)."""
    res = _ferrograd._random_randint(int(low), int(high), _shape(shape), dtype or "int32")
    if out is not None:
        out[:] = res
        return out
    return res


__all__ = ["seed", "uniform", "normal", "randn", "randint"]
