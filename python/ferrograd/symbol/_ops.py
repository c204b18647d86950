"""``sym.<op>`` functions built from the native op registry (the same metadata as ``nd.<op>``).

``sym.FullyConnected(data=x, num_hidden=8, name='fc1')``: inputs are Symbols given by position or
by input name; inputs left out become variables ``<name>_<input>`` (``fc1_weight``); every other
keyword is an op parameter. ``name=`` and ``attr=`` follow MXNet's ``NameManager``/``AttrScope``.
"""

from .. import name as _name
from ..base import DTypeError
from ..ndarray import _registry
from .symbol import Symbol, _create, var


def _make(spec, called=None):
    """``sym.<called>`` for the op of ``spec``; auto-names use the name it was called by
    (``sym.flip`` makes ``flip0``, ``sym.reverse`` ``reverse0``), as in MXNet."""
    opname, variadic = spec.name, spec.variadic
    hint = (called or opname).lower()
    names, params = list(spec.inputs), [p.name for p in spec.params]
    input_set = set(names)
    # Inputs left out become variables, so every input is optional here.
    sig = _registry.signature(spec._replace(optional=frozenset(names)), ("name", "attr"))

    all_names = names + list(params)
    # None is a value of its own where the default is not None (``sort(axis=None)`` sorts the
    # flattened array, the default axis=-1 the last axis): pass it on instead of dropping it.
    explicit_none = {p.name for p in spec.params
                     if p.default is not None and p.py_type.endswith("| None")}

    def op(*args, name=None, attr=None, **kwargs):
        lead = ()
        if not variadic and args:
            # MXNet's generated functions take inputs, then parameters, by position.
            if len(args) > len(all_names):
                raise DTypeError(f"{opname}: {len(args)} positional arguments given, it takes "
                                 f"at most {len(all_names)} ({', '.join(all_names)})")
            # Symbols given by position stay positional: the op places them by its own input
            # list, which its parameters may change (CTCLoss with only use_label_lengths takes
            # label_lengths third).
            n_lead = 0
            while n_lead < min(len(args), len(names)) and isinstance(args[n_lead], Symbol):
                n_lead += 1
            lead = args[:n_lead]
            for k, v in zip(all_names, args, strict=False):
                if k in kwargs:
                    raise DTypeError(f"{opname}: got multiple values for argument '{k}'")
                kwargs[k] = v
            for k in names[:n_lead]:
                del kwargs[k]
            args = ()
        for i, a in enumerate(args):
            if not isinstance(a, Symbol):
                raise DTypeError(f"{opname}: positional input {i} must be a Symbol, got "
                                 f"{type(a).__name__}")
        named, op_params = [], {}
        for k, v in kwargs.items():
            if k.startswith("__") and k.endswith("__"):
                # MXNet: dunder keywords (``__layout__``, ``__lr_mult__``) are attributes
                attr = {**(attr or {}), k: str(v)}
                continue
            if k in input_set and not variadic:
                if v is None:
                    continue
                if not isinstance(v, Symbol):
                    raise DTypeError(f"{opname}: input '{k}' must be a Symbol, got "
                                     f"{type(v).__name__}")
                named.append((k, v))
            elif v is not None or k in explicit_none:
                op_params[k] = v
        positional, resolved = list(lead or args), False
        if variadic:
            n = op_params.get("num_args")
            if "num_args" in params and n is None:
                op_params["num_args"] = len(positional)
            elif not positional and n:
                # MXNet creates the variadic inputs as variables X_arg0, X_arg1, ...
                name, resolved = _name.current().get(name, hint), True
                positional = [var(f"{name}_arg{i}") for i in range(int(n))]
        return _create(opname, op_params, positional, named, name, attr, hint=hint,
                       resolved=resolved)

    op.__name__ = op.__qualname__ = opname
    op.__signature__ = sig
    op._spec = spec
    op.__doc__ = (_registry.docstring(spec, "Symbol", outputs=False)
                  + "\nSymbolic form: inputs are Symbols (by position or name); inputs left out "
                  "become variables named '<name>_<input>'.\n")
    return op


def make_ops():
    """{name: function} for every registered op and alias (one function per name, so that each
    auto-names its nodes after the name it was called by)."""
    return {n: _make(spec, n) for spec in _registry.specs() for n in (spec.name, *spec.aliases)}
