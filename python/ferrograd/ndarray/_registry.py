"""Builds ``nd.<op>`` functions from the native op registry's metadata.

Each function gets a real signature (``inspect.signature`` works, IDEs see the parameters) and a
docstring; no source text is generated or ``exec``-ed. A call with only positional arrays takes a
fast path straight into the native op.
"""

import inspect

from .._ferrograd import NDArray, _invoke, _op_info

_P = inspect.Parameter


def _make(name, inputs, params, doc):
    n_in = len(inputs)
    sig = inspect.Signature(
        [_P(a, _P.POSITIONAL_OR_KEYWORD, default=None) for a in inputs]
        + [_P(p, _P.POSITIONAL_OR_KEYWORD, default=None) for p in params]
        + [_P("out", _P.KEYWORD_ONLY, default=None), _P("name", _P.KEYWORD_ONLY, default=None)]
    )

    def op(*args, **kwargs):
        if not kwargs and len(args) == n_in:
            res = _invoke(name, list(args))
            return res[0] if len(res) == 1 else res
        bound = sig.bind(*args, **kwargs)
        out = bound.arguments.pop("out", None)
        bound.arguments.pop("name", None)
        arrays = [bound.arguments.pop(a, None) for a in inputs]
        missing = [a for a, v in zip(inputs, arrays) if v is None]
        if missing:
            raise TypeError(f"{name}() missing required input(s): {', '.join(missing)}")
        for a, v in zip(inputs, arrays):
            if not isinstance(v, NDArray):
                raise TypeError(f"{name}(): argument '{a}' must be an NDArray, got {type(v).__name__}")
        res = _invoke(name, arrays, bound.arguments)
        res = res[0] if len(res) == 1 else res
        if out is not None:
            out[:] = res
            return out
        return res

    op.__name__ = op.__qualname__ = name
    op.__signature__ = sig
    args_doc = "\n".join(f"{a} : NDArray" for a in inputs)
    params_doc = "\n".join(f"{p} : optional" for p in params)
    op.__doc__ = (
        f"{doc}\n\nParameters\n----------\n{args_doc}\n{params_doc}\n"
        "out : NDArray, optional\n    The output array to write the result into.\n\n"
        "Returns\n-------\nNDArray\n"
    )
    return op


def make_ops():
    """{name: function} for every registered op and alias."""
    ops = {}
    for name, aliases, inputs, params, doc in _op_info():
        f = _make(name, inputs, params, doc)
        ops[name] = f
        for a in aliases:
            ops[a] = f
    return ops
