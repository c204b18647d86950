"""Builds ``nd.<op>`` from the native op registry.

Each op is a native callable (``_ferrograd.OpFunc``): inputs, positional parameters and keywords
are sorted and validated in Rust against the op's declaration, so no ``inspect`` runs on the call
path. This module only attaches what Python tools read: a real signature (declared defaults,
types in the docstring) and a NumPy-style docstring, both generated from the same declaration
that ``docs/operators.md`` and the ``.pyi`` stubs are generated from.

Bad calls (wrong number of inputs, non-array inputs, unknown keywords, missing required
parameters) raise :class:`~ferrograd.base.DTypeError`, an ``MXNetError`` that is also a
``TypeError``; bad parameter values raise ``ValueError_`` listing what is allowed.
"""

import functools
import inspect
from typing import NamedTuple

from .._ferrograd import OpFunc, _op_info

_P = inspect.Parameter


class Param(NamedTuple):
    """One declared op parameter."""

    name: str
    py_type: str
    required: bool
    default: object
    choices: list
    doc: str


class OpSpec(NamedTuple):
    """One op's declaration, as the front ends see it."""

    name: str
    aliases: list
    inputs: list  # input names without marks
    optional: frozenset  # inputs that may be omitted (a trailing ``bias``)
    variadic: bool  # takes any number of arrays
    params: list  # [Param]
    doc: str


@functools.cache
def specs():
    """Every registered op's :class:`OpSpec`, in registry order."""
    out = []
    for name, aliases, inputs, params, doc in _op_info():
        out.append(OpSpec(
            name, list(aliases), [a.lstrip("*").rstrip("?") for a in inputs],
            frozenset(a.rstrip("?") for a in inputs if a.endswith("?")),
            bool(inputs) and inputs[0].startswith("*"),
            [Param(*p) for p in params], doc))
    return out


def param_type_text(p):
    """The type as a docstring shows it: ``float``, ``{'relu', 'tanh'}``, ``tuple of int``."""
    if p.choices:
        text = "{" + ", ".join(repr(c) for c in p.choices) + "}"
        return text + " or None" if p.py_type.endswith("| None") else text
    return p.py_type


def parameters(spec, leading=()):
    """``inspect.Parameter`` list: inputs, then parameters with their declared defaults.

    Everything stays passable by position (MXNet's generated functions take inputs, then
    parameters, in order); once a parameter has a default, any later required one is shown
    keyword-only so that the signature stays valid Python.
    """
    ps = [_P(n, _P.POSITIONAL_OR_KEYWORD) for n in leading]
    if spec.variadic:
        ps.append(_P(spec.inputs[0], _P.VAR_POSITIONAL))
    kind, seen_default = (_P.KEYWORD_ONLY if spec.variadic else _P.POSITIONAL_OR_KEYWORD), False
    for a in ([] if spec.variadic else spec.inputs):
        if a in spec.optional:
            ps.append(_P(a, kind, default=None))
            seen_default = True
        else:
            ps.append(_P(a, kind))
    for p in spec.params:
        if p.required and seen_default:
            kind = _P.KEYWORD_ONLY
        if p.required:
            ps.append(_P(p.name, kind))
        else:
            ps.append(_P(p.name, kind, default=p.default))
            seen_default = True
    return ps


def _sorted_keyword_only(ps):
    """Keyword-only parameters after all positional ones (required ones first among equals)."""
    pos = [p for p in ps if p.kind in (_P.POSITIONAL_OR_KEYWORD, _P.VAR_POSITIONAL)]
    kw = [p for p in ps if p.kind == _P.KEYWORD_ONLY]
    return pos + kw


def signature(spec, extra, leading=()):
    """The op's signature followed by keyword-only ``extra`` names (default None)."""
    ps = parameters(spec, leading=leading)
    ps += [_P(n, _P.KEYWORD_ONLY, default=None) for n in extra]
    return inspect.Signature(_sorted_keyword_only(ps))


def docstring(spec, array_type="NDArray", outputs=True):
    """A NumPy-style docstring generated from the declaration."""
    lines = [spec.doc, "", "Parameters", "----------"]
    if spec.variadic:
        lines += [f"*{spec.inputs[0]} : {array_type}", "    Any number of input arrays."]
    else:
        for a in spec.inputs:
            opt = ", optional" if a in spec.optional else ""
            lines += [f"{a} : {array_type}{opt}", "    Input array."]
    for p in spec.params:
        tail = "required" if p.required else f"default {p.default!r}"
        lines.append(f"{p.name} : {param_type_text(p)}, {tail}")
        if p.doc:
            lines.append(f"    {p.doc}")
    if outputs:
        lines += ["out : NDArray, optional", "    The output array to write the result into.",
                  "", "Returns", "-------", "NDArray or list of NDArray"]
    return "\n".join(lines) + "\n"


def _make(spec):
    f = OpFunc(spec.name)
    f.__name__ = f.__qualname__ = spec.name
    f.__module__ = "ferrograd.ndarray"
    f.__signature__ = signature(spec, ("out", "name"))
    f.__doc__ = docstring(spec)
    f._spec = spec
    return f


def make_ops(make=None):
    """{name: function} for every registered op and alias; ``make(spec)`` builds each function
    (``nd.<op>`` by default; ``sym.<op>`` passes its own)."""
    make = make or _make
    ops = {}
    for spec in specs():
        f = make(spec)
        ops[spec.name] = f
        for a in spec.aliases:
            ops[a] = f
    return ops
