"""The ``Symbol`` class: MXNet 1.x's static graph, over the native graph in ``ferrograd``.

A ``Symbol`` wraps a native handle; graph structure, inference and JSON live in Rust. This file
holds MXNet's Python-level behaviour: argument forms, naming, warnings and error texts.
"""

import copy as _copy
import warnings

import numpy as _np

from .. import attribute
from .. import name as _name
from .._ferrograd import _sym_create, _sym_group, _sym_load_json, _sym_var, _Symbol
from ..base import MXNetError, NotImplementedForSymbol
from ..context import Context

__all__ = ["Symbol", "var", "Variable", "Group", "load", "load_json"]

# MXNet's numeric type ids (``__dtype__`` attribute).
_DTYPE_ID = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
             "int64": 6, "bool": 7}
# MXNet's hidden attribute keys: stored as ``__key__`` (whether given as ``key`` or
# ``__key__``, as an ``attr`` entry, a scope entry or an op keyword) and listed under both names.
_HIDDEN = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage",
           "profiler_scope")


def _stored_key(key):
    return f"__{key}__" if key in _HIDDEN else key


def _with_plain_names(pairs):
    """Attributes as a dict, hidden keys also under their plain name (``list_attr``)."""
    out = {}
    for k, v in pairs:
        out[k] = v
        if k.startswith("__") and k.endswith("__") and k[2:-2] in _HIDDEN:
            out[k[2:-2]] = v
    return out


def _scoped_attrs(attr):
    """The active ``AttrScope`` merged with ``attr``, hidden keys in their stored form."""
    return {_stored_key(k): str(v) for k, v in attribute.current().get(attr).items()}


def _create(op, params, positional, named, name, attr, hint=None, resolved=False):
    """Applies a registered op, with MXNet's automatic naming and scoped attributes
    (``resolved``: ``name`` already went through the name manager)."""
    node_name = name if resolved else _name.current().get(name, hint or op.lower())
    attrs = _scoped_attrs(attr)
    # Hidden keys given as op keywords (``lr_mult=2``) are attributes, not parameters.
    for k in [k for k in params if k in _HIDDEN]:
        attrs[_stored_key(k)] = str(params.pop(k))
    handle = _sym_create(op, params, [s.handle for s in positional],
                         [(k, s.handle) for k, s in named], node_name, list(attrs.items()))
    out = Symbol(handle)
    if op in _COMPOSE_INIT:
        _set_input_inits(out, _COMPOSE_INIT[op])
    return out


# Initializers MXNet's ops give their input variables when composed (unless the variable has
# one): PReLU's slope starts at 0.25, BatchNorm's moving mean/variance at 0/1.
_COMPOSE_INIT = {
    "LeakyReLU": {1: '["Constant", {"value": 0.25}]'},
    "BatchNorm": {3: '["zero", {}]', 4: '["one", {}]'},
}


def _set_input_inits(out, inits):
    children = out.get_children()
    if children is None:
        return
    for index, init in inits.items():
        if index < len(children):
            child = children[index]
            if child.get_children() is None and child.attr("__init__") is None:
                child._set_attr(__init__=init)



def _is_np_shape():
    """Whether NumPy shape semantics are on (``mx.util.np_shape``): -1, not 0, is unknown."""
    try:
        from ..util import is_np_shape
    except ImportError:
        return False
    return bool(is_np_shape())


def _nd_only(name, alias=None):
    """A Symbol method that only NDArray has: it raises ``NotImplementedForSymbol``."""
    def method(self, *args, **kwargs):
        raise NotImplementedForSymbol(name, alias, *args)
    method.__name__ = name
    return method

class Symbol:
    """A symbolic expression: one or more outputs of a graph of ops over named variables."""

    __slots__ = ("handle", "__weakref__")

    def __init__(self, handle):
        if not isinstance(handle, _Symbol):
            raise TypeError("Symbol wraps a native handle; build symbols with sym.var and ops")
        self.handle = handle

    # -- identity and outputs ------------------------------------------------------------------

    @property
    def name(self):
        """The head node's name, or ``None`` for a group."""
        return self.handle.name

    def __repr__(self):
        if self.name is None:
            return "<Symbol group [" + ", ".join(s.name for s in self) + "]>"
        return f"<Symbol {self.name}>"

    def __len__(self):
        return self.handle.num_outputs()

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Group([self[i] for i in range(len(self))[index]])
        if isinstance(index, str):
            hits = [i for i, n in enumerate(self.list_outputs()) if n == index]
            if not hits:
                raise ValueError(f'Cannot find output that matches name "{index}"')
            if len(hits) > 1:
                raise ValueError(f'There are multiple outputs with name "{index}"')
            index = hits[0]
        if not isinstance(index, (int, _np.integer)) or isinstance(index, bool):
            raise TypeError("Symbol only support integer index to fetch i-th output")
        if index < 0:
            index += len(self)
        out = self.handle.output(int(index)) if index >= 0 else None
        if out is None:
            raise IndexError
        return Symbol(out)

    def list_arguments(self):
        """Free variables that are not auxiliary states, in graph (DFS) order."""
        return self.handle.list_arguments()

    def list_outputs(self):
        """Output names: ``<name>_output``, ``<name>_output<i>``, or a variable's own name."""
        return self.handle.list_outputs()

    def list_auxiliary_states(self):
        """Auxiliary states (``bn_moving_mean``, ...), in graph order."""
        return self.handle.list_auxiliary_states()

    def list_inputs(self):
        """Arguments and auxiliary states together, in graph order."""
        return self.handle.list_inputs()

    def get_internals(self):
        """A group of every node's outputs (hidden outputs excluded)."""
        return Symbol(self.handle.get_internals())

    def get_children(self):
        """A group of the head node's inputs, or ``None`` for a variable."""
        h = self.handle.get_children()
        return None if h is None else Symbol(h)

    # -- attributes ----------------------------------------------------------------------------

    def attr(self, key):
        """Attribute ``key`` of the head node as a string (op parameters too), or ``None``."""
        return self.list_attr().get(key)

    def list_attr(self, recursive=False):
        """The head node's attributes as a dict of strings."""
        if recursive:
            raise DeprecationWarning("Symbol.list_attr with recursive=True has been deprecated. "
                                     "Please use attr_dict instead.")
        return _with_plain_names(self.handle.list_attr())

    def attr_dict(self):
        """``{node name: {key: value}}`` for every node that has attributes."""
        return {n: _with_plain_names(a) for n, a in self.handle.attr_dict()}

    def _set_attr(self, **kwargs):
        """Sets attributes on the head node, in place; values must be strings."""
        for v in kwargs.values():
            if not isinstance(v, str):
                raise ValueError("Set Attr only accepts string values")
        for k, v in kwargs.items():
            self.handle.set_attr(_stored_key(k), v)

    # -- inference -----------------------------------------------------------------------------

    def _known(self, what, args, kwargs, check):
        """Named inputs from MXNet's positional or keyword forms (``None`` entries skipped)."""
        if args and kwargs:
            raise ValueError(f"Can only specify known argument {what}s either by positional "
                             "or kwargs way.")
        names = self.list_arguments()
        if args:
            if len(args) > len(names):
                raise ValueError(f"Too many positional {what}s: {len(args)} given for "
                                 f"{len(names)} arguments {names}")
            pairs = [(n, v) for n, v in zip(names, args, strict=False) if v is not None]
        else:
            inputs = set(self.list_inputs())
            for k in kwargs:
                if k not in inputs:
                    cands = "\n".join(f"\t[{i}]{n}" for i, n in enumerate(names))
                    kind = "InferShape" if what == "shape" else "InferType"
                    raise MXNetError(f"{kind}Keyword argument name {k} not found.\n"
                                     f"Candidate arguments:\n{cands}")
            pairs = [(k, v) for k, v in kwargs.items() if v is not None]
        for k, v in pairs:
            check(k, v)
        return pairs

    def _infer_shape(self, partial, args, kwargs):
        def check(k, v):
            if not isinstance(v, tuple):
                raise TypeError(f"Arguments need to be shapes (tuple), but '{k}' is {type(v)}.")
        pairs = self._known("shape", args, kwargs, check)
        np_shape = _is_np_shape()
        # Unknown dimensions: 0 in MXNet's legacy shape semantics, -1 under np_shape (where 0 is
        # a real, empty dimension).
        unknown = (lambda d: d < 0) if np_shape else (lambda d: d <= 0)  # noqa: E731
        known = [(k, [None if unknown(int(d)) else int(d) for d in v]) for k, v in pairs]
        try:
            arg, out, aux = self.handle.infer_shape_partial(known)
        except MXNetError:
            print("infer_shape error. Arguments:")
            for k, v in pairs:
                print(f"  {k}: {v}")
            raise
        if partial:
            fill = -1 if np_shape else 0

            def tup(ss):
                if np_shape:
                    return [None if s is None else tuple(fill if d is None else d for d in s)
                            for s in ss]
                return [() if s is None else tuple(fill if d is None else d for d in s)
                        for s in ss]
            return tup(arg), tup(out), tup(aux)
        incomplete = lambda s: s is None or None in s  # noqa: E731
        if any(incomplete(s) for s in arg + out + aux):
            names = [n for n, s in zip(self.list_arguments(), arg, strict=True) if incomplete(s)]
            shown = [f"{n}: " + str(() if s is None else tuple(0 if d is None else d for d in s))
                     for n, s in zip(self.list_arguments(), arg, strict=True) if n in names][:10]
            warnings.warn("Cannot decide shape for the following arguments (0s in shape means "
                          "unknown dimensions). Consider providing them as input:\n\t"
                          + "\n\t".join(shown), stacklevel=3)
            return None, None, None
        return ([tuple(s) for s in arg], [tuple(s) for s in out], [tuple(s) for s in aux])

    def infer_shape(self, *args, **kwargs):
        """``(arg_shapes, out_shapes, aux_shapes)`` from known input shapes, given by position
        (in ``list_arguments()`` order) or by name; ``(None, None, None)`` with a warning when
        some shape cannot be decided."""
        return self._infer_shape(False, args, kwargs)

    def infer_shape_partial(self, *args, **kwargs):
        """As :meth:`infer_shape`, with ``()`` for shapes that cannot be decided."""
        return self._infer_shape(True, args, kwargs)

    def _infer_type(self, partial, args, kwargs):
        def check(k, v):
            _np.dtype(v)  # raises TypeError for something that is not a dtype
        known = {k: _np.dtype(v).name for k, v in self._known("type", args, kwargs, check)}
        arg, out, aux = self.handle.infer_type(list(known.items()))
        # One pass decides a variable's type from its consumer's inputs seen so far, so a variable
        # whose consumer's other inputs are typed later in the graph (an RNN's begin state
        # feeding the first step's FullyConnected, whose weight is typed by a later step) needs
        # the types decided so far fed back until nothing changes.
        names = self.list_arguments()
        while True:
            decided = {n: t for n, t in zip(names, arg, strict=True)
                       if t is not None and n not in known}
            if not decided or None not in arg:
                break
            known.update(decided)
            arg, out, aux = self.handle.infer_type(list(known.items()))
        conv = lambda ts: [None if t is None else _np.dtype(t).type for t in ts]  # noqa: E731
        arg, out, aux = conv(arg), conv(out), conv(aux)
        if not partial and any(t is None for t in arg + out + aux):
            unknown = [n for n, t in zip(self.list_arguments(), arg, strict=True) if t is None]
            warnings.warn("Cannot decide type for the following arguments. Consider providing "
                          "them as input:\n\t" + "\n\t".join(f"{n}: None" for n in unknown[:10]),
                          stacklevel=3)
            return None, None, None
        return arg, out, aux

    def infer_type(self, *args, **kwargs):
        """``(arg_types, out_types, aux_types)`` as NumPy type classes (``numpy.float32``)."""
        return self._infer_type(False, args, kwargs)

    def infer_type_partial(self, *args, **kwargs):
        """As :meth:`infer_type`, with ``None`` for types that cannot be decided."""
        return self._infer_type(True, args, kwargs)

    # -- serialisation -------------------------------------------------------------------------

    def tojson(self, remove_amp_cast=True):
        """The graph in MXNet's JSON format (marked ``is_np_shape`` under NumPy shape
        semantics, as MXNet marks it)."""
        text = self.handle.tojson()
        if _is_np_shape():
            text = text.replace('"attrs": {"mxnet_version": ["int", 10901]}',
                                '"attrs": {\n    "is_np_shape": ["int", 1], \n    '
                                '"mxnet_version": ["int", 10901]\n  }')
        return text

    def save(self, fname, remove_amp_cast=True):
        """Writes :meth:`tojson` to ``fname``."""
        if not isinstance(fname, str):
            raise TypeError("fname need to be string")
        with open(fname, "w") as f:
            f.write(self.tojson())

    def _gen_atomic_symbol(self):
        """A new symbol of the op producing this symbol's outputs, with the same parameters
        and fresh inputs (MXNet's leaves the inputs out; a ferrograd graph node always has its
        inputs, so they are variables named ``_<input>``)."""
        import json
        graph = json.loads(self.tojson())
        heads = {h[0] for h in graph["heads"]}
        node = graph["nodes"][heads.pop()] if len(heads) == 1 else None
        if node is None or node["op"] == "null":
            raise MXNetError("_gen_atomic_symbol: the symbol must be the output(s) of one op, "
                             f"got outputs {self.list_outputs()}")
        params = {k: v for k, v in node.get("attrs", {}).items()
                  if not (k.startswith("__") and k.endswith("__"))}
        return Symbol(_sym_create(node["op"], params, [], [], "", []))

    def debug_str(self):
        """A node-by-node text dump of the graph."""
        return self.handle.debug_str()

    def __copy__(self):
        return Symbol(self.handle.deep_copy())

    def __deepcopy__(self, memo):
        return Symbol(self.handle.deep_copy())

    def __getstate__(self):
        return {"handle": self.tojson()}

    def __setstate__(self, state):
        self.handle = _sym_load_json(state["handle"])

    # -- composition ---------------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        """A copy with free variables replaced by other symbols (by position or by name)."""
        s = _copy.copy(self)
        s._compose(*args, **kwargs)
        return s

    def _compose(self, *args, **kwargs):
        rename = kwargs.pop("name", None)
        if args and kwargs:
            raise TypeError("compose only accept input Symbols either as positional or keyword "
                            "arguments, not both")
        for v in list(args) + list(kwargs.values()):
            if not isinstance(v, Symbol):
                raise TypeError(f"Compose expect `Symbol` as arguments, got {type(v)}")
        self.handle = self.handle.compose([a.handle for a in args],
                                          [(k, v.handle) for k, v in kwargs.items()], rename)

    # -- binding -------------------------------------------------------------------------------

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
             shared_exec=None):
        """Binds arrays to the arguments: an :class:`~ferrograd.executor.Executor`."""
        from ..executor import bind
        return bind(self, ctx, args, args_grad, grad_req, aux_states)

    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
        """Infers shapes and types, allocates zeros for everything, and binds."""
        from ..executor import simple_bind
        return simple_bind(self, ctx, grad_req, type_dict, kwargs)

    def eval(self, ctx=None, **kwargs):
        """``bind(ctx, kwargs).forward()``: the outputs for these argument values, as a list."""
        if ctx is None:
            from ..context import current_context
            ctx = current_context()
        return self.bind(ctx, kwargs).forward()

    def gradient(self, wrt):
        raise NotImplementedForSymbol(self.gradient, None)

    # -- arithmetic (elementwise, no broadcasting, as in MXNet) -------------------------------

    def _binary(self, other, op, scalar_op, hint, scalar_hint):
        if isinstance(other, Symbol):
            return _create(op, {}, [self, other], [], None, None, hint)
        if isinstance(other, (int, float, _np.number, bool)):
            return _create(scalar_op, {"scalar": float(other)}, [self], [], None, None,
                           scalar_hint)
        raise TypeError(f"type {type(other)} not supported")

    def _rscalar(self, other, scalar_op, hint):
        if isinstance(other, (int, float, _np.number, bool)):
            return _create(scalar_op, {"scalar": float(other)}, [self], [], None, None, hint)
        raise TypeError(f"type {type(other)} not supported")

    def __add__(self, o):
        return self._binary(o, "elemwise_add", "_plus_scalar", "_plus", "_plusscalar")

    def __radd__(self, o):
        return self._rscalar(o, "_plus_scalar", "_plusscalar")

    def __sub__(self, o):
        return self._binary(o, "elemwise_sub", "_minus_scalar", "_minus", "_minusscalar")

    def __rsub__(self, o):
        return self._rscalar(o, "_rminus_scalar", "_rminusscalar")

    def __mul__(self, o):
        return self._binary(o, "elemwise_mul", "_mul_scalar", "_mul", "_mulscalar")

    def __rmul__(self, o):
        return self._rscalar(o, "_mul_scalar", "_mulscalar")

    def __truediv__(self, o):
        return self._binary(o, "elemwise_div", "_div_scalar", "_div", "_divscalar")

    def __rtruediv__(self, o):
        return self._rscalar(o, "_rdiv_scalar", "_rdivscalar")

    def __mod__(self, o):
        return self._binary(o, "_mod", "_mod_scalar", "_mod", "_modscalar")

    def __rmod__(self, o):
        return self._rscalar(o, "_rmod_scalar", "_rmodscalar")

    def __pow__(self, o):
        return self._binary(o, "_power", "_power_scalar", "_power", "_powerscalar")

    def __rpow__(self, o):
        return self._rscalar(o, "_rpower_scalar", "_rpower_scalar")

    def __neg__(self):
        return self._rscalar(-1.0, "_mul_scalar", "_mulscalar")

    def __abs__(self):
        return _create("abs", {}, [self], [], None, None)

    def _compare(self, o, op):
        return self._binary(o, op, op + "_scalar", op, op + "_scalar")

    def __eq__(self, o):
        return self._compare(o, "_equal")

    def __ne__(self, o):
        return self._compare(o, "_not_equal")

    def __gt__(self, o):
        return self._compare(o, "_greater")

    def __ge__(self, o):
        return self._compare(o, "_greater_equal")

    def __lt__(self, o):
        return self._compare(o, "_lesser")

    def __le__(self, o):
        return self._compare(o, "_lesser_equal")

    __hash__ = object.__hash__

    # -- NDArray-only methods ------------------------------------------------------------------

    for _n, _a in [("__iadd__", "+="), ("__isub__", "-="), ("__imul__", "*="),
                   ("__itruediv__", "/="), ("__imod__", "%="), ("__ipow__", "**="),
                   ("__bool__", None), ("asnumpy", None), ("asscalar", None),
                   ("backward", None), ("detach", None), ("wait_to_read", None),
                   ("as_in_context", None), ("attach_grad", None)]:
        locals()[_n] = _nd_only(_n, _a)
    del _n, _a


def _shape_attr(name, shape):
    """``var``'s ``shape`` as MXNet's attribute text: an int is a 1-d shape (stored as MXNet
    stores it, ``'3'``), a sequence of ints a tuple ``'(2, 3)'``."""
    if isinstance(shape, (int, _np.integer)) and not isinstance(shape, bool):
        return str(int(shape))
    try:
        dims = tuple(shape)
    except TypeError:
        dims = None
    if dims is None or isinstance(shape, str) or not all(
            isinstance(d, (int, _np.integer)) and not isinstance(d, bool) for d in dims):
        raise TypeError(f"var: the shape of '{name}' must be an int or a tuple of ints, "
                        f"got {shape!r}")
    return str(tuple(int(d) for d in dims))


def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
        stype=None, **kwargs):
    """A named free variable. ``shape``/``dtype``/``lr_mult``/... become string attributes
    (``__shape__`` = ``'(2, 3)'``) that inference and optimisers read."""
    if not isinstance(name, str):
        raise TypeError("Expect a string for variable `name`")
    attr = _scoped_attrs(attr)
    if shape is not None:
        attr["__shape__"] = _shape_attr(name, shape)
    if lr_mult is not None:
        attr["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attr["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attr["__dtype__"] = str(_DTYPE_ID[_np.dtype(dtype).name])
    if init is not None:
        attr["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        attr["__storage_type__"] = str({"default": 0, "row_sparse": 1, "csr": 2}[stype])
    for k, v in kwargs.items():
        if not (k.startswith("__") and k.endswith("__")):
            raise ValueError(f"Attribute name={k} is not supported. Additional attributes must "
                             "start and end with double underscores, e.g, __yourattr__")
        attr[k] = str(v)
    return Symbol(_sym_var(name, list(attr.items())))


Variable = var


def Group(symbols, create_fn=None):  # noqa: N802 - MXNet's name
    """The outputs of several symbols as one multi-output symbol."""
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Expected a list of symbols as input")
    return (create_fn or Symbol)(_sym_group([s.handle for s in symbols]))


def load(fname):
    """Reads a symbol saved by :meth:`Symbol.save` (MXNet's JSON format)."""
    if not isinstance(fname, str):
        raise TypeError("fname need to be string")
    try:
        with open(fname) as f:
            text = f.read()
    except OSError as e:
        raise MXNetError(f"symbol.load: cannot read '{fname}': {e.strerror or e}") from e
    try:
        return load_json(text)
    except MXNetError as e:
        raise type(e)(f"symbol.load: '{fname}': {e}") from e


def load_json(json_str):
    """A symbol from MXNet JSON text."""
    if not isinstance(json_str, str):
        raise TypeError("fname required to be string")
    return Symbol(_sym_load_json(json_str))


def _check_ctx(ctx):
    if not isinstance(ctx, Context):
        raise TypeError("Context type error")
