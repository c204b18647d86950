"""Fluent methods: ``x.sum(axis=1)``, ``x.exp()``, ``x.take(idx)`` ... as in MXNet's NDArray.

Each method calls the registry op of the same name with ``self`` as the first input, exactly like
MXNet's ``def sum(self, *args, **kwargs): return op.sum(self, *args, **kwargs)``; positional
arguments follow the op's own order (further array inputs first, then parameters). A method is
attached only when its op is registered, so ops added later gain their method automatically.
"""

import inspect

from .._ferrograd import _op_info
from ..base import DTypeError

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
        "tanh", "arcsinh", "arccosh", "arctanh", "sigmoid", "relu", "softsign", "log_sigmoid",
        "mish", "sign", "abs", "floor", "ceil", "round", "rint", "fix", "trunc", "degrees",
        "radians", "zeros_like", "ones_like", "shape_array", "size_array", "argmax_channel")},
    "clip": ("clip", {"a_min": _REQUIRED, "a_max": _REQUIRED}),
    "broadcast_to": ("broadcast_to", {"shape": _REQUIRED}),
    "broadcast_like": ("broadcast_like", {}),
    "broadcast_axes": ("broadcast_axes", {"axis": (), "size": ()}),
    "reshape_like": ("reshape_like", {}),
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
    "depth_to_space": ("depth_to_space", {"block_size": _REQUIRED}),
    "space_to_depth": ("space_to_depth", {"block_size": _REQUIRED}),
}


def _signature(names, defaults):
    params = [_P("self", _P.POSITIONAL_OR_KEYWORD)]
    params += [_P(n, _P.POSITIONAL_OR_KEYWORD, default=defaults.get(n, None)) for n in names]
    try:
        return inspect.Signature(params)
    except ValueError:  # a required parameter after an optional one: show all as optional
        return inspect.Signature(
            [params[0]] + [_P(n, _P.POSITIONAL_OR_KEYWORD, default=None) for n in names])


def _make(meth, opname, op, names, defaults, doc, owner):
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
    method.__signature__ = _signature(names, defaults)
    method.__doc__ = f"Fluent form of ``{opname}(self, ...)``: {doc}"
    return method


def as_nd_ndarray(self):
    """This array itself (it already is a legacy ``nd.NDArray``)."""
    return self


def attach(cls, ops=None, owner="NDArray"):
    """Adds the fluent methods whose op is registered to ``cls`` (NDArray, or Symbol with the
    ``sym.<op>`` functions as ``ops``)."""
    if ops is None:
        from . import _registry  # the wrappers, with their argument checks

        ops = _registry.make_ops()
    info = {}
    for name, aliases, inputs, params, doc in _op_info():
        for n in (name, *aliases):
            info[n] = (inputs, params, doc)
    for meth, (opname, defaults) in _METHODS.items():
        if opname not in info or meth in cls.__dict__:
            continue  # the op does not exist (yet), or the class defines the method natively
        inputs, params, doc = info[opname]
        names = list(inputs[1:]) + list(params)
        defaults = {**{i: _REQUIRED for i in inputs[1:]}, **defaults}
        setattr(cls, meth, _make(meth, opname, ops[opname], names, defaults, doc, owner))
    if owner == "NDArray":
        cls.as_nd_ndarray = as_nd_ndarray
    return cls
