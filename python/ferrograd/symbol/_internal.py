"""``mx.sym._internal``: the registered ops whose names start with ``_`` (``_plus``,
``_mul_scalar``, ...), as MXNet exposes them to its own Python code."""

from . import _OPS

globals().update({k: v for k, v in _OPS.items() if k.startswith("_") and k.isidentifier()})


def _square_sum(data=None, axis=None, keepdims=False, exclude=False, name=None, attr=None):
    """``sum(square(data), axis)`` in a graph (MXNet's ``_square_sum``; graphs compute dense
    values, so it is the two ops, the sum named ``_square_sum<N>`` as MXNet names the node)."""
    from .. import name as _name
    from .symbol import Symbol
    if not isinstance(data, Symbol):
        raise TypeError(f"_square_sum: data must be a Symbol, got {type(data).__name__}")
    name = _name.current().get(name, "_square_sum")
    sq = _OPS["square"](data, name=f"{name}_square", attr=attr)
    return _OPS["sum"](sq, axis=axis, keepdims=keepdims, exclude=exclude, name=name, attr=attr)
