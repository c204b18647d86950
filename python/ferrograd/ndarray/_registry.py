"""Builds ``nd.<op>`` functions from the native op registry's metadata.

Each function gets a real signature (``inspect.signature`` works, IDEs see the parameters) and a
docstring; no source text is generated or ``exec``-ed. A call with only positional arrays takes a
fast path straight into the native op. Bad calls (wrong number of inputs, non-array inputs,
unknown keywords) raise :class:`~ferrograd.base.DTypeError`, an ``MXNetError`` that is also a
``TypeError``, naming the op.
"""

import inspect

from .._ferrograd import NDArray, _invoke, _op_info
from ..base import DTypeError, MXNetError

_P = inspect.Parameter


def _bad_call(name, sig, why):
    return DTypeError(f"{name}(): {why} (signature: {name}{sig})")


def _param(v):
    """A tuple with ``None`` entries (``slice`` ends) in MXNet's string form ``(1, None)``."""
    if isinstance(v, (tuple, list)) and any(e is None for e in v):
        return "(" + ", ".join("None" if e is None else str(int(e)) for e in v) + \
            ("," if len(v) == 1 else "") + ")"
    return v


def _make_variadic(name, inputs, params, doc):
    """``op(*data, **params)`` for ops taking any number of arrays (``Concat``, ``add_n``);
    ``num_args`` is filled in from the number of arrays, as MXNet's front end does."""
    sig = inspect.Signature(
        [_P(inputs[0].lstrip("*"), _P.VAR_POSITIONAL)]
        + [_P(p, _P.KEYWORD_ONLY, default=None) for p in params]
        + [_P("out", _P.KEYWORD_ONLY, default=None), _P("name", _P.KEYWORD_ONLY, default=None)]
    )

    def op(*arrays, **kwargs):
        try:
            sig.bind(*arrays, **kwargs)
        except TypeError as e:
            raise _bad_call(name, sig, str(e)) from None
        out = kwargs.pop("out", None)
        kwargs.pop("name", None)
        for i, v in enumerate(arrays):
            if not isinstance(v, NDArray):
                raise _bad_call(name, sig, f"input {i} must be an NDArray, got {type(v).__name__}")
        if "num_args" in params and kwargs.get("num_args") is None:
            kwargs["num_args"] = len(arrays)
        params_given = {k: _param(v) for k, v in kwargs.items() if v is not None}
        res = _invoke(name, list(arrays), params_given)
        res = res[0] if len(res) == 1 else res
        if out is not None:
            out[:] = res
            return out
        return res

    op.__name__ = op.__qualname__ = name
    op.__signature__ = sig
    op.__doc__ = f"{doc}\n\nTakes any number of NDArrays as positional arguments.\n"
    return op


def _make(name, inputs, params, doc):
    if inputs and inputs[0].startswith("*"):
        return _make_variadic(name, inputs, params, doc)
    # A trailing "?" marks an input that may be omitted (FullyConnected's bias with no_bias).
    optional = {a.rstrip("?") for a in inputs if a.endswith("?")}
    inputs = [a.rstrip("?") for a in inputs]
    n_in = len(inputs)
    sig = inspect.Signature(
        [_P(a, _P.POSITIONAL_OR_KEYWORD, default=None) for a in inputs]
        + [_P(p, _P.POSITIONAL_OR_KEYWORD, default=None) for p in params]
        + [_P("out", _P.KEYWORD_ONLY, default=None), _P("name", _P.KEYWORD_ONLY, default=None)]
    )

    def op(*args, **kwargs):
        if not kwargs and len(args) == n_in:
            try:
                res = _invoke(name, list(args))
            except MXNetError:
                raise
            except TypeError:
                pass  # a non-array input: the checks below name it
            else:
                return res[0] if len(res) == 1 else res
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise _bad_call(name, sig, str(e)) from None
        out = bound.arguments.pop("out", None)
        bound.arguments.pop("name", None)
        arrays = [bound.arguments.pop(a, None) for a in inputs]
        # Omitted optional inputs are dropped from the end; the op checks its own arity.
        while arrays and arrays[-1] is None and inputs[len(arrays) - 1] in optional:
            arrays.pop()
        missing = [a for a, v in zip(inputs, arrays, strict=False) if v is None]
        if missing:
            raise _bad_call(name, sig, f"missing required input(s): {', '.join(missing)}")
        for a, v in zip(inputs, arrays, strict=False):
            if not isinstance(v, NDArray):
                raise _bad_call(name, sig, f"argument '{a}' must be an NDArray, "
                                           f"got {type(v).__name__}")
        try:
            res = _invoke(name, arrays, {k: _param(v) for k, v in bound.arguments.items()})
        except MXNetError:
            raise
        except TypeError as e:  # a parameter value the native side cannot convert
            raise _bad_call(name, sig, str(e)) from None
        res = res[0] if len(res) == 1 else res
        if out is not None:
            out[:] = res
            return out
        return res

    op.__name__ = op.__qualname__ = name
    op.__signature__ = sig
    args_doc = "\n".join(f"{a} : NDArray" + (", optional" if a in optional else "")
                         for a in inputs)
    params_doc = "\n".join(f"{p} : optional" for p in params)
    op.__doc__ = (
        f"{doc}\n\nParameters\n----------\n{args_doc}\n{params_doc}\n"
        "out : NDArray, optional\n    The output array to write the result into.\n\n"
        "Returns\n-------\nNDArray\n"
    )
    return op


def make_ops(make=None):
    """{name: function} for every registered op and alias; ``make(name, inputs, params, doc)``
    builds each function (``nd.<op>`` by default; ``sym.<op>`` passes its own)."""
    make = make or _make
    ops = {}
    for name, aliases, inputs, params, doc in _op_info():
        f = make(name, inputs, params, doc)
        ops[name] = f
        for a in aliases:
            ops[a] = f
    return ops
