"""Fluent methods: ``x.sum(axis=1)``, ``x.exp()``, ``x.take(idx)`` ... as in MXNet's NDArray.

Each method calls the registry op of the same name with ``self`` as the first input, exactly like
MXNet's ``def sum(self, *args, **kwargs): return op.sum(self, *args, **kwargs)``; positional
arguments follow the op's own order (further array inputs first, then parameters). A method is
attached only when its op is registered, so ops added later gain their method automatically.
"""

from ..base import DTypeError
from . import _registry

# Method name -> op name. Signatures and defaults come from the op's declaration.
_METHODS = {
    **{m: m for m in (
        "sum", "mean", "prod", "max", "min", "nansum", "nanprod", "norm", "argmax", "argmin",
        "exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "cbrt", "rcbrt",
        "square", "reciprocal", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
        "tanh", "arcsinh", "arccosh", "arctanh", "sigmoid", "relu", "softsign", "sign", "abs",
        "floor", "ceil", "round", "rint", "fix", "trunc", "degrees", "radians", "zeros_like",
        "ones_like", "clip", "broadcast_to", "broadcast_like", "broadcast_axes", "take", "pick",
        "one_hot", "slice", "slice_axis", "slice_like", "tile", "repeat", "flip", "swapaxes",
        "split", "pad", "softmax", "log_softmax", "softmin", "sort", "argsort", "topk", "diag",
        "argmax_channel", "shape_array", "size_array", "reshape_like")},
}


def _signature(spec):
    """self, the op's further inputs, then its parameters with their declared defaults."""
    return _registry.signature(spec._replace(inputs=spec.inputs[1:]), (), leading=("self",))


def _make(meth, spec, op, sig, owner):
    names = spec.inputs[1:] + [p.name for p in spec.params]
    n = len(names)

    def method(self, *args, **kwargs):
        if not args and not kwargs:
            return op(self)
        if len(args) > n:
            raise DTypeError(f"{owner}.{meth}() takes at most {n} positional argument(s) "
                             f"({', '.join(names)}), got {len(args)}")
        kw = dict(zip(names, args, strict=False))
        for k, v in kwargs.items():
            if k in kw:
                raise DTypeError(f"{owner}.{meth}() got multiple values for argument '{k}'")
            kw[k] = v
        return op(self, **kw)

    method.__name__ = method.__qualname__ = meth
    method.__signature__ = sig
    method._spec = spec
    method.__doc__ = f"Fluent form of ``{spec.name}(self, ...)``: {spec.doc}"
    return method


def as_nd_ndarray(self):
    """This array itself (it already is a legacy ``nd.NDArray``)."""
    return self


def attach(cls, ops=None, owner="NDArray"):
    """Adds the fluent methods whose op is registered to ``cls`` (NDArray, or Symbol with the
    ``sym.<op>`` functions as ``ops``)."""
    if ops is None:
        ops = _registry.make_ops()
    by_name = {n: s for s in _registry.specs() for n in (s.name, *s.aliases)}
    for meth, opname in _METHODS.items():
        spec = by_name.get(opname)
        if spec is None or meth in cls.__dict__:
            continue  # the op does not exist (yet), or the class defines the method natively
        setattr(cls, meth, _make(meth, spec, ops[opname], _signature(spec), owner))
    if owner == "NDArray":
        cls.as_nd_ndarray = as_nd_ndarray
    return cls
