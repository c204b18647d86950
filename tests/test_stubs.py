"""The type stub ``python/ferrograd/_ferrograd.pyi`` must describe the native module.

Every name of ``ferrograd._ferrograd``, every attribute of its classes and every native parameter
list must appear in the stub. When the native module grows (symbol, executor, ...), these tests
fail with the exact names and signatures to add.
"""

import ast
import importlib
import inspect
import types
from pathlib import Path

import ferrograd
import pytest
from ferrograd import _ferrograd as native
from ferrograd.ndarray import _fluent

STUB = Path(ferrograd.__file__).parent / "_ferrograd.pyi"
STUB_REL = "python/ferrograd/_ferrograd.pyi"

# Class attributes that every class has and no stub lists.
_IMPLICIT = {"__doc__", "__module__", "__dict__", "__weakref__", "__qualname__"}
# Stub members that may be absent at runtime: fluent methods whose op is not registered yet,
# and buffer-protocol methods Python exposes only from 3.12.
_OPTIONAL = set(_fluent._METHODS) | {"__buffer__", "__release_buffer__"}
_NATIVE_KINDS = (types.BuiltinFunctionType, types.MethodDescriptorType,
                 types.WrapperDescriptorType, types.ClassMethodDescriptorType)


# ----------------------------------------------------------------------------------------------
# reading the stub and the native module


def parse_stub(text):
    """``(module_names, classes)``: top-level name -> node, class name -> {member -> node}."""
    module_names, classes = {}, {}
    for node in ast.parse(text).body:
        for name in _defined(node):
            module_names.setdefault(name, node)
        if isinstance(node, ast.ClassDef):
            members = {}
            for item in node.body:
                for name in _defined(item):
                    members.setdefault(name, item)  # a property's getter comes first
            classes[node.name] = members
    return module_names, classes


def _defined(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    return []


def native_names():
    """The module's declared exports plus every non-dunder attribute."""
    names = set(getattr(native, "__all__", ()))
    names |= {n for n in dir(native) if not (n.startswith("__") and n.endswith("__"))}
    return names


def native_classes():
    return {n: getattr(native, n) for n in sorted(native_names())
            if isinstance(getattr(native, n), type)}


def class_attributes(cls):
    return set(vars(cls)) - _IMPLICIT


def _text_signature(obj):
    """A native callable's parameter list as written by PyO3, ``$`` removed (None if absent)."""
    text = getattr(obj, "__text_signature__", None)
    return text.replace("$", "") if text else None


def describe(name, obj):
    """A paste-ready line for the stub: ``def name(params)``, ``@property name``, ..."""
    if isinstance(obj, (types.GetSetDescriptorType, property)):
        return f"@property {name}"
    if isinstance(obj, type):
        return f"class {name}"
    text = _text_signature(obj)
    if text is not None:
        return f"def {name}{text}"
    if callable(obj):
        try:
            return f"def {name}{inspect.signature(obj)}  (attached in Python)"
        except (ValueError, TypeError):
            return f"def {name}(...)"
    return f"{name}: {type(obj).__name__}"


def missing_report(where, missing, lookup):
    lines = [f"{STUB_REL} lacks {len(missing)} name(s) of {where}; add:"]
    lines += [f"    {describe(n, lookup(n))}" for n in missing]
    return "\n".join(lines)


def _params(fn):
    """``[(name, kind, has_default)]`` of an ``ast.FunctionDef``."""
    a = fn.args
    positional = [(p.arg, "positional-only") for p in a.posonlyargs]
    positional += [(p.arg, "positional-or-keyword") for p in a.args]
    first_default = len(positional) - len(a.defaults)
    out = [(n, k, i >= first_default) for i, (n, k) in enumerate(positional)]
    if a.vararg:
        out.append(("*" + a.vararg.arg, "var-positional", False))
    out += [(p.arg, "keyword-only", d is not None)
            for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg:
        out.append(("**" + a.kwarg.arg, "var-keyword", False))
    return out


def _fmt(params):
    return "(" + ", ".join(f"{n}{'=...' if d else ''} [{k}]" for n, k, d in params) + ")"


def _is_property(node):
    return any((isinstance(d, ast.Name) and d.id == "property")
               or (isinstance(d, ast.Attribute) and d.attr in ("setter", "getter"))
               for d in getattr(node, "decorator_list", []))


def signature_mismatches(name, obj, node):
    """Problems between a native callable/descriptor and its stub entry (empty when they match)."""
    if isinstance(obj, types.GetSetDescriptorType):
        return [] if _is_property(node) else [f"{name}: native property, stub is not @property"]
    text = _text_signature(obj) if isinstance(obj, _NATIVE_KINDS) else None
    if text is None:
        return []
    if not isinstance(node, ast.FunctionDef):
        return [f"{name}: native callable, stub entry is not a def"]
    want = _params(ast.parse(f"def f{text}: pass").body[0])
    got = _params(node)
    if obj.__text_signature__.startswith("($"):  # a receiver (self, cls, type) comes first
        want, got = want[1:], got[1:]
    if want != got:
        return [f"{name}: native {_fmt(want)} != stub {_fmt(got)}"]
    return []


@pytest.fixture(scope="module")
def stub():
    return parse_stub(STUB.read_text())


# ----------------------------------------------------------------------------------------------
# the checks


def test_stub_ships_with_py_typed(stub):
    assert STUB.is_file() and (STUB.parent / "py.typed").is_file()
    module_names, _ = stub
    assert "__all__" in module_names


def test_every_native_name_is_in_the_stub(stub):
    module_names, _ = stub
    missing = sorted(native_names() - set(module_names))
    assert not missing, missing_report("ferrograd._ferrograd", missing,
                                       lambda n: getattr(native, n))


def test_every_native_class_attribute_is_in_the_stub(stub):
    _, classes = stub
    problems = []
    for cname, cls in native_classes().items():
        where = f"class {cname}" if cname in classes else f"class {cname} (not in the stub)"
        missing = sorted(class_attributes(cls) - set(classes.get(cname, ())))
        if missing:
            problems.append(missing_report(where, missing, lambda n, c=cls: vars(c)[n]))
    assert not problems, "\n".join(problems)


def test_native_signatures_match_the_stub(stub):
    module_names, classes = stub
    problems = []
    for name in sorted(native_names() & set(module_names)):
        problems += signature_mismatches(name, getattr(native, name), module_names[name])
    for cname, cls in native_classes().items():
        members = classes.get(cname, {})
        for name in sorted(class_attributes(cls) & set(members)):
            problems += signature_mismatches(f"{cname}.{name}", vars(cls)[name], members[name])
    assert not problems, f"{STUB_REL} disagrees with the native module:\n  " + \
        "\n  ".join(problems)


def test_stub_lists_nothing_the_module_lacks(stub):
    module_names, classes = stub
    stale = [n for n, node in module_names.items()
             if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not hasattr(native, n)]
    for cname, members in classes.items():
        cls = getattr(native, cname, None)
        if cls is not None:
            stale += [f"{cname}.{m}" for m in sorted(set(members) - class_attributes(cls)
                                                     - _OPTIONAL)]
    assert not stale, f"{STUB_REL} describes names the native module does not have: {stale}"


# ----------------------------------------------------------------------------------------------
# the checkers report what to add


def test_missing_names_are_reported_with_their_signatures():
    text = STUB.read_text().replace("def _full(", "def _renamed_full(")
    module_names, _ = parse_stub(text)
    assert "_full" in native_names() - set(module_names)
    report = missing_report("ferrograd._ferrograd", ["_full"], lambda n: getattr(native, n))
    assert report == (f"{STUB_REL} lacks 1 name(s) of ferrograd._ferrograd; add:\n"
                      "    def _full(shape, value, dtype)")


def test_missing_class_members_are_reported_by_kind():
    cls = native.NDArray
    report = missing_report("class NDArray", ["shape", "reshape", "exp", "__array_priority__"],
                            lambda n: vars(cls)[n])
    assert report.splitlines() == [
        f"{STUB_REL} lacks 4 name(s) of class NDArray; add:",
        "    @property shape",
        "    def reshape(self, *shape, reverse=False, **kwargs)",
        "    def exp(self)  (attached in Python)",
        "    __array_priority__: float",
    ]


def test_signature_mismatches_are_reported():
    text = STUB.read_text().replace("def _array(obj: Any, dtype", "def _array(source: Any, dtype")
    module_names, classes = parse_stub(text)
    assert signature_mismatches("_array", native._array, module_names["_array"]) == [
        "_array: native (obj [positional-or-keyword], dtype=... [positional-or-keyword]) != "
        "stub (source [positional-or-keyword], dtype=... [positional-or-keyword])"]
    text = STUB.read_text().replace("def __pow__(self, value: _Operand, mod: None = None, /)",
                                    "def __pow__(self, value: _Operand, /)")
    _, classes = parse_stub(text)
    members = classes["NDArray"]
    assert signature_mismatches("NDArray.__pow__", vars(native.NDArray)["__pow__"],
                                members["__pow__"]) == [
        "NDArray.__pow__: native (value [positional-only], mod=... [positional-only]) != "
        "stub (value [positional-only])"]
    assert signature_mismatches("NDArray.shape", vars(native.NDArray)["shape"],
                                members["reshape"]) == \
        ["NDArray.shape: native property, stub is not @property"]


def test_stub_imports_resolve():
    # type checkers follow the stub's imports, so each must exist
    for node in ast.walk(ast.parse(STUB.read_text())):
        if isinstance(node, ast.ImportFrom):
            package = "ferrograd" if node.level else None
            mod = importlib.import_module(("." * node.level) + (node.module or ""), package)
            for alias in node.names:
                assert hasattr(mod, alias.name), f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)
