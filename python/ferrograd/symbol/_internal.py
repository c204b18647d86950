"""``mx.sym._internal``: the registered ops whose names start with ``_`` (``_plus``,
``_mul_scalar``, ...), as MXNet exposes them to its own Python code."""

from . import _OPS

globals().update({k: v for k, v in _OPS.items() if k.startswith("_") and k.isidentifier()})
