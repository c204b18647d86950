"""Fluent methods: ``x.sum(axis=1)``, ``x.exp()``, ``x.take(idx)`` ... as in MXNet's NDArray.

Each method calls the registry op of the same name with ``self`` as the first input, exactly like
MXNet's ``def sum(self, *args, **kwargs): return op.sum(self, *args, **kwargs)``; positional
arguments follow the op's own order (further array inputs first, then parameters). A method is
attached only when its op is registered, so ops added later gain their method automatically.
"""

import inspect

from ..base import DTypeError
from . import _registry

_P = inspect.Parameter
_REQUIRED = _P.empty

_REDUCE = {"axis": None, "keepdims": False, "exclude": False}

# Method name -> (op name, MXNet's documented defaults; parameters absent here are required
# unless the registry lists them, in which case their default is None = the op's own default).
_METHODS = {
    **{m: (m, _REDUCE) for m in ("sum", "mean", "prod", "max", "min", "nansum", "nanprod")},
    "norm": ("norm", {"ord": 2, "axis": None, "keepdims": False}),
    "argmax": ("argmax", {"axis": None, "keepdims": False}),
    "argmin": ("argmin", {"axis": None, "keepdims": False}),
    **{m: (m, {}) for m in (
        "exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "cbrt", "rcbrt",
        "square", "reciprocal", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
        "tanh", "arcsinh", "arccosh", "arctanh", "sigmoid", "relu", "softsign", "sign", "abs",
        "floor", "ceil", "round", "rint", "fix", "trunc", "degrees", "radians", "zeros_like",
        "ones_like")},
    "clip": ("clip", {"a_min": _REQUIRED, "a_max": _REQUIRED}),
    "broadcast_to": ("broadcast_to", {"shape": _REQUIRED}),
    "broadcast_like": ("broadcast_like", {}),
    "broadcast_axes": ("broadcast_axes", {"axis": (), "size": ()}),
    "take": ("take", {"axis": 0, "mode": "clip"}),
    "pick": ("pick", {"axis": -1, "keepdims": False, "mode": "clip"}),
    "one_hot": ("one_hot", {"depth": _REQUIRED, "on_value": 1.0, "off_value": 0.0,
                            "dtype": "float32"}),
    "slice": ("slice", {"begin": _REQUIRED, "end": _REQUIRED, "step": ()}),
    "slice_axis": ("slice_axis", {"axis": _REQUIRED, "begin": _REQUIRED, "end": _REQUIRED}),
    "slice_like": ("slice_like", {"axes": ()}),
    "tile": ("tile", {"reps": _REQUIRED}),
    "repeat": ("repeat", {"repeats": _REQUIRED, "axis": None}),
    "flip": ("flip", {"axis": _REQUIRED}),
    "swapaxes": ("swapaxes", {"dim1": 0, "dim2": 0}),
    "split": ("split", {"num_outputs": _REQUIRED, "axis": 1, "squeeze_axis": False}),
    "pad": ("pad", {"mode": _REQUIRED, "pad_width": _REQUIRED, "constant_value": 0.0}),
    "softmax": ("softmax", {"axis": -1, "temperature": None}),
    "log_softmax": ("log_softmax", {"axis": -1, "temperature": None}),
    "softmin": ("softmin", {"axis": -1, "temperature": None}),
    "sort": ("sort", {"axis": -1, "is_ascend": True}),
    "argsort": ("argsort", {"axis": -1, "is_ascend": True}),
    "topk": ("topk", {"axis": -1, "k": 1, "ret_typ": "indices", "is_ascend": False}),
    "diag": ("diag", {"k": 0}),
}


def _signature(spec, legacy_defaults):
    """self, the op's further inputs, then its parameters with their declared defaults."""
    rest = spec._replace(inputs=spec.inputs[1:])
    if not spec.typed:  # parameters known by name only: MXNet's documented defaults from the table
        rest = rest._replace(params=[p._replace(
            required=legacy_defaults.get(p.name, None) is _REQUIRED,
            default=legacy_defaults.get(p.name, None)) for p in spec.params])
    params = _registry.parameters(rest, leading=("self",))
    return inspect.Signature(_registry._sorted_keyword_only(params))


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
    for meth, (opname, defaults) in _METHODS.items():
        spec = by_name.get(opname)
        if spec is None or meth in cls.__dict__:
            continue  # the op does not exist (yet), or the class defines the method natively
        setattr(cls, meth, _make(meth, spec, ops[opname], _signature(spec, defaults), owner))
    if owner == "NDArray":
        cls.as_nd_ndarray = as_nd_ndarray
    return cls
