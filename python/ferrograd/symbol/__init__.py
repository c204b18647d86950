"""``ferrograd.symbol`` (``mx.sym``): MXNet 1.x's static graph API.

Build a graph from variables and ops (``sym.var('data')``, ``sym.FullyConnected(...)``, symbol
arithmetic), inspect it (``list_arguments``, ``infer_shape``, ``tojson``), and run it with
``bind``/``simple_bind`` (:mod:`ferrograd.executor`). Every registered op is ``sym.<op>``.
"""

from ..ndarray import _fluent
from . import _ops, contrib, random  # noqa: F401 - mx.sym.contrib
from .symbol import Group, Symbol, Variable, _create, load, load_json, var

__all__ = ["Symbol", "var", "Variable", "Group", "load", "load_json", "pow", "power", "maximum",
           "minimum", "hypot"]

_OPS = _ops.make_ops()
globals().update({k: v for k, v in _OPS.items() if k.isidentifier()})
__all__ += sorted(k for k in _OPS if k.isidentifier() and not k.startswith("_"))

_fluent.attach(Symbol, _OPS, owner="Symbol")


def _shape_method(opname, doc):
    def method(self, *args, **kwargs):
        return _OPS[opname](self, *args, **kwargs)
    method.__name__ = method.__qualname__ = opname.lower()
    method.__doc__ = f"Fluent form of ``sym.{opname}(self, ...)``: {doc}"
    return method


# Methods NDArray defines natively (so the shared fluent table does not list them).
for _m, _op in [("reshape", "Reshape"), ("flatten", "Flatten"), ("transpose", "transpose"),
                ("expand_dims", "expand_dims"), ("squeeze", "squeeze")]:
    if _op in _OPS:
        setattr(Symbol, _m, _shape_method(_op, _OPS[_op].__doc__.split("\n")[0]))


def _pair(name, lhs, rhs):
    """MXNet's ``sym.power/maximum/minimum/hypot``: a symbol op for two symbols, the scalar op
    when one side is a number."""
    if isinstance(lhs, Symbol) and isinstance(rhs, Symbol):
        return _create(f"_{name}", {}, [lhs, rhs], [], None, None)
    if isinstance(lhs, Symbol):
        return _create(f"_{name}_scalar", {"scalar": float(rhs)}, [lhs], [], None, None)
    if isinstance(rhs, Symbol):
        op = "_rpower_scalar" if name == "power" else f"_{name}_scalar"
        return _create(op, {"scalar": float(lhs)}, [rhs], [], None, None)
    raise TypeError(f"{name}: at least one argument must be a Symbol")


def power(base, exp):
    """``base ** exp`` elementwise (either may be a number)."""
    return _pair("power", base, exp)


pow = power  # noqa: A001 - MXNet's name


def maximum(left, right):
    """Elementwise maximum (either may be a number)."""
    return _pair("maximum", left, right)


def minimum(left, right):
    """Elementwise minimum (either may be a number)."""
    return _pair("minimum", left, right)


def hypot(left, right):
    """Elementwise ``sqrt(left**2 + right**2)`` (either may be a number)."""
    return _pair("hypot", left, right)


def Custom(*inputs, op_type=None, **kwargs):  # noqa: N802 - MXNet's name
    """A Python custom operator in a graph: not supported yet (raises NotImplementedError)."""
    from ..operator import _custom_sym
    return _custom_sym(*inputs, op_type=op_type, **kwargs)


__all__ += ["Custom", "random"]


def _dtype_name(dtype):
    import numpy as np
    return "float32" if dtype is None else np.dtype(dtype).name


def zeros(shape, dtype=None, **kwargs):
    """A graph constant of zeros (``_zeros``; float32 unless ``dtype`` is given)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _OPS["_zeros"](shape=shape, dtype=_dtype_name(dtype), **kwargs)


def ones(shape, dtype=None, **kwargs):
    """A graph constant of ones (``_ones``; float32 unless ``dtype`` is given)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _OPS["_ones"](shape=shape, dtype=_dtype_name(dtype), **kwargs)


def full(shape, val, dtype=None, **kwargs):
    """A graph constant filled with ``val`` (``_full``; float32 unless ``dtype`` is given)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return _OPS["_full"](shape=shape, value=float(val), dtype=_dtype_name(dtype), **kwargs)


__all__ += ["zeros", "ones", "full"]

from ._fronts import histogram, split_v2  # noqa: E402 - they need _OPS

__all__ += ["split_v2", "histogram"]
from . import _internal, image, linalg, sparse  # noqa: E402, F401 - mx.sym._internal; needs _OPS

# MXNet's contrib names of ops registered under their plain names.
contrib.CTCLoss, contrib.ctc_loss = _OPS["CTCLoss"], _OPS["ctc_loss"]
contrib.__all__ += ["CTCLoss", "ctc_loss"]
contrib._export_registered(_OPS)
