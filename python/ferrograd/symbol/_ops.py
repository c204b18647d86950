"""``sym.<op>`` functions built from the native op registry (the same metadata as ``nd.<op>``).

``sym.FullyConnected(data=x, num_hidden=8, name='fc1')``: inputs are Symbols given by position or
by input name; inputs left out become variables ``<name>_<input>`` (``fc1_weight``); every other
keyword is an op parameter. ``name=`` and ``attr=`` follow MXNet's ``NameManager``/``AttrScope``.
"""

import inspect

from .. import name as _name
from ..base import DTypeError
from ..ndarray import _registry
from .symbol import Symbol, _create, var

_P = inspect.Parameter


def _make(opname, inputs, params, doc):
    variadic = bool(inputs) and inputs[0].startswith("*")
    names = [a.lstrip("*").rstrip("?") for a in inputs]
    input_set = set(names)
    sig = inspect.Signature(
        ([_P(names[0], _P.VAR_POSITIONAL)] if variadic else
         [_P(a, _P.POSITIONAL_OR_KEYWORD, default=None) for a in names])
        + [_P(p, _P.KEYWORD_ONLY, default=None) for p in params]
        + [_P("name", _P.KEYWORD_ONLY, default=None), _P("attr", _P.KEYWORD_ONLY, default=None)]
    )

    all_names = names + list(params)

    def op(*args, name=None, attr=None, **kwargs):
        if not variadic and args:
            # MXNet's generated functions take inputs, then parameters, by position.
            if len(args) > len(all_names):
                raise DTypeError(f"{opname}: {len(args)} positional arguments given, it takes "
                                 f"at most {len(all_names)} ({', '.join(all_names)})")
            for k, v in zip(all_names, args, strict=False):
                if k in kwargs:
                    raise DTypeError(f"{opname}: got multiple values for argument '{k}'")
                kwargs[k] = v
            args = ()
        for i, a in enumerate(args):
            if not isinstance(a, Symbol):
                raise DTypeError(f"{opname}: positional input {i} must be a Symbol, got "
                                 f"{type(a).__name__}")
        named, op_params = [], {}
        for k, v in kwargs.items():
            if k in input_set and not variadic:
                if v is None:
                    continue
                if not isinstance(v, Symbol):
                    raise DTypeError(f"{opname}: input '{k}' must be a Symbol, got "
                                     f"{type(v).__name__}")
                named.append((k, v))
            elif v is not None:
                op_params[k] = v
        positional, resolved = list(args), False
        if variadic:
            n = op_params.get("num_args")
            if "num_args" in params and n is None:
                op_params["num_args"] = len(positional)
            elif not positional and n:
                # MXNet creates the variadic inputs as variables X_arg0, X_arg1, ...
                name, resolved = _name.current().get(name, opname.lower()), True
                positional = [var(f"{name}_arg{i}") for i in range(int(n))]
        return _create(opname, op_params, positional, named, name, attr, resolved=resolved)

    op.__name__ = op.__qualname__ = opname
    op.__signature__ = sig
    op.__doc__ = (f"{doc}\n\nSymbolic form: inputs are Symbols (by position or name); inputs "
                  "left out become variables named '<name>_<input>'.\n")
    return op


def make_ops():
    """{name: function} for every registered op and alias."""
    return _registry.make_ops(_make)
