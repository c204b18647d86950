"""``gluon.Block`` and ``gluon.HybridBlock``: models built from child blocks and parameters.

Names: a block made inside another's ``name_scope()`` gets the parent's prefix plus
``<classname><n>_`` (counted per parent); a top-level block gets a process-wide ``dense0_`` style
name from ``mx.name``. The active scope is per thread (``_BlockScope``).

A ``HybridBlock`` runs ``hybrid_forward`` with ``F = mx.nd`` until ``hybridize()``; then it is
traced with ``F = mx.sym`` and run on the Executor (``_hybrid``). ``export`` is in ``_export``.
"""

import threading
import warnings
from collections import OrderedDict

from .. import initializer as _init
from .. import name as _name
from .. import ndarray as nd
from .. import symbol as sym
from ..base import MXNetError
from . import _hybrid, _serialization
from . import parameter as _param
from .parameter import DeferredInitializationError, Parameter, ParameterDict

__all__ = ["Block", "HybridBlock"]


class _BlockScope:
    """The block whose ``name_scope()`` is active on this thread, with its child counters."""

    _current = threading.local()

    def __init__(self, block, counter=None):
        self._block = block
        # The child counters live on the block (``name_scope()`` makes a scope per ``with``): a
        # block holding its scope would be a cycle, leaving a dropped block and its bound
        # executors' buffers to the garbage collector.
        self._counter = {} if counter is None else counter
        self._previous = None
        self._name_prefix = None

    @staticmethod
    def create(prefix, params, hint):
        """The (prefix, ParameterDict) for a new block with class-name ``hint``."""
        scope = getattr(_BlockScope._current, "value", None)
        if scope is None:
            if prefix is None:
                prefix = _name.current().get(None, hint) + "_"
            if params is None:
                return prefix, ParameterDict(prefix)
            params = ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            n = scope._counter.get(hint, 0)
            scope._counter[hint] = n + 1
            prefix = f"{hint}{n}_"
        if params is None:
            parent = scope._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return scope._block.prefix + prefix, params

    def __enter__(self):
        if getattr(self._block, "_empty_prefix", False):
            return self
        self._previous = getattr(_BlockScope._current, "value", None)
        _BlockScope._current.value = self
        # Symbols created inside the scope are named under the block's prefix too.
        self._name_prefix = _name.Prefix(self._block.prefix)
        self._name_prefix.__enter__()
        return self

    def __exit__(self, *exc):
        if getattr(self._block, "_empty_prefix", False):
            return
        self._name_prefix.__exit__(*exc)
        self._name_prefix = None
        _BlockScope._current.value = self._previous
        # An exited scope must not keep the enclosing block alive: a child block shared by
        # several parents (one pooling layer in many nets) would otherwise hold every parent it
        # was ever called from, with their bound executors.
        self._previous = None


def _flatten(values):
    """The leaves of nested lists/tuples."""
    out = []
    for v in values:
        if isinstance(v, (list, tuple)):
            out.extend(_flatten(v))
        else:
            out.append(v)
    return out


def _indent(text, spaces):
    lines = text.split("\n")
    return "\n".join([lines[0]] + [" " * spaces + line for line in lines[1:]])


class HookHandle:
    """Returned by ``register_forward_*hook``; ``detach()`` removes the hook."""

    _next_id = 0

    def __init__(self, hooks, hook):
        self._hooks = hooks
        self.id = HookHandle._next_id
        HookHandle._next_id += 1
        hooks[self.id] = hook

    def detach(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()


class Block:
    """Base class of all layers and models; subclasses define ``forward``."""

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._child_counter = {}
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def _alias(self):
        return self.__class__.__name__.lower()

    def __repr__(self):
        lines = [f"  ({key}): {_indent(repr(block), 2)}" for key, block in self.__dict__.items()
                 if isinstance(block, Block)]
        return "{}(\n{}\n)".format(self.__class__.__name__, "\n".join(lines))

    def __setattr__(self, name, value):
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError(f"Changing attribute type for {name} from {type(existing)} to "
                                f"{type(value)} is not allowed.")
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            if name in self._reg_params:
                raise MXNetError(f"Overriding Parameter attribute {name} is not allowed. If you "
                                 "want to share parameters between blocks, please set 'params' at "
                                 "Block construction instead.")
            self._reg_params[name] = value
            _param._changed()  # drops the blocks' cached parameter arrays (_params_on)
        super().__setattr__(name, value)

    @property
    def prefix(self):
        return self._prefix

    @property
    def name(self):
        return self._name

    @property
    def params(self):
        """This block's own ParameterDict (not its children's: see ``collect_params``)."""
        return self._params

    def name_scope(self):
        """``with block.name_scope():`` names children under this block's prefix."""
        return _BlockScope(self, self._child_counter)

    def register_child(self, block, name=None):
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def collect_params(self, select=None):
        """This block's and all descendants' parameters, optionally only names matching the
        regular expression ``select`` (e.g. ``'.*weight|.*bias'``)."""
        self._warn_unregistered_containers()
        out = ParameterDict(self._params.prefix)
        out.update(self.params._select(select))
        for child in self._children.values():
            out.update(child.collect_params(select=select))
        return out

    def _warn_unregistered_containers(self):
        """Blocks kept in a plain list/tuple/dict attribute are not children: say so."""
        registered = {id(c) for c in self._children.values()}

        def holds_unregistered(value):
            if isinstance(value, Block):
                return id(value) not in registered
            if isinstance(value, dict):
                value = list(value.values())
            if isinstance(value, (list, tuple)):
                return any(holds_unregistered(v) for v in value)
            return False

        for name, value in self.__dict__.items():
            if isinstance(value, (list, tuple, dict)) and holds_unregistered(value):
                warnings.warn(f'"{name}" is an unregistered container with Blocks. Note that '
                              "Blocks inside the list, tuple or dict will not be registered "
                              "automatically. Make sure to register them using register_child() "
                              "or switching to nn.Sequential/nn.HybridSequential instead.",
                              stacklevel=3)

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialise all parameters (see ``ParameterDict.initialize``)."""
        self.collect_params().initialize(init if init is not None else _init.Uniform(), ctx,
                                         verbose, force_reinit)

    def save_parameters(self, filename, deduplicate=False):
        """Save parameters keyed by attribute path (``0.weight``) in MXNet's format."""
        _serialization.save_block(self, filename, deduplicate)

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source="current"):
        """Load a ``save_parameters`` file (or a name-keyed one); all checks run before any
        parameter changes."""
        _serialization.load_block(self, filename, ctx, allow_missing, ignore_extra, cast_dtype,
                                  dtype_source)

    def save_params(self, filename):
        """Deprecated MXNet form: keys are parameter names without this block's prefix."""
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """Deprecated MXNet form of ``load_parameters``."""
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def register_forward_pre_hook(self, hook):
        """``hook(block, inputs)`` runs before each forward."""
        return HookHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        """``hook(block, inputs, outputs)`` runs after each forward."""
        return HookHandle(self._forward_hooks, hook)

    def apply(self, fn):
        """Call ``fn(block)`` on every descendant, children first, then on self."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def hybridize(self, active=True, **kwargs):
        """Forwarded to children; plain Blocks themselves always run imperatively."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype):
        for child in self._children.values():
            child.cast(dtype)
        for param in self.params.values():
            param.cast(dtype)

    def __call__(self, *args):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                hook(self, args)
        out = self.forward(*args)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                hook(self, args, out)
        return out

    def forward(self, *args):
        raise NotImplementedError(f"{type(self).__name__} must define forward")

    def summary(self, *inputs):
        """Print each layer's output shape and parameter counts for a run on ``inputs`` (the
        block must not be hybridized)."""
        from ._summary import summarize
        summarize(self, inputs)


class HybridBlock(Block):
    """A block written once as ``hybrid_forward(F, x, *args, **params)`` for ``F`` = nd or sym.

    Parameters registered as attributes arrive as keyword arguments named by the attribute.
    After ``hybridize()`` the first call traces the graph with ``F = mx.sym`` and later calls run
    it on a bound Executor (see ``_hybrid``); before, it runs imperatively with ``F = mx.nd``.
    """

    # (parameter generation, context, {attribute: array}) of the last imperative call.
    _param_cache = None

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._active = False
        self._flags = {}
        self._cached_graph = None
        self._fixed_graph = False  # a SymbolBlock's graph is given, never re-traced
        self._op_hooks = []

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise ValueError(f"Children of HybridBlock must also be HybridBlock, but {block} has "
                             f"type {type(block)}. If you are using Sequential, please try "
                             "HybridSequential instead.")
        super().register_child(block, name)
        self._clear_cached_op()

    def _clear_cached_op(self):
        if not self._fixed_graph:
            self._cached_graph = None

    def hybridize(self, active=True, static_alloc=False, static_shape=False, **kwargs):
        """Run later calls on a cached Executor graph. ``static_alloc``/``static_shape`` are
        accepted (the executor's memory plan is always static per input signature)."""
        self._active = active
        self._flags = dict(kwargs, static_alloc=static_alloc, static_shape=static_shape)
        self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn(f'"{self.name}" is being hybridized while still having forward hook/'
                          "pre-hook. If \"{self.name}\" is a child of HybridBlock, the hooks "
                          "will not take effect.", stacklevel=2)
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape, **kwargs)

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)

    def register_op_hook(self, callback, monitor_all=False):
        """``callback(node_name, op_name, array)`` for every operator output of this block's
        hybridized graph (inputs too with ``monitor_all``); also registered on the children.
        Hooks run only while the block is hybridized."""
        self._op_hooks.append((callback, monitor_all))
        self._clear_cached_op()
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def _infer_attrs(self, attr, *args):
        """Trace ``hybrid_forward`` and copy inferred shapes/dtypes into the parameters."""
        leaves, _ = _hybrid.flatten(list(args), "inputs")
        arrays = [v for v in leaves if v is not None]
        _hybrid.trace_graph(self, args).infer_params(arrays, attr)

    def _infer_deferred_shapes(self, *args):
        try:
            self._infer_attrs("shape", *args)
        except MXNetError as e:
            if isinstance(e, _hybrid.HybridizeError):
                raise
            raise MXNetError("Deferred initialization failed because shape cannot be inferred. "
                             f"{e}") from e

    def _symbolic_forward(self, x, *args):
        params = {key: p.var() for key, p in self._reg_params.items()}
        with self.name_scope():
            return self.hybrid_forward(sym, x, *args, **params)

    def forward(self, x, *args):
        if not args and isinstance(x, nd.NDArray):
            # The common call, one array: no input structure to check.
            if self._active:
                return _hybrid.call_cached(self, (x,))
            return self.hybrid_forward(nd, x, **self._params_on(x.context, (x,)))
        leaves = _flatten([x, *args])
        if any(isinstance(v, sym.Symbol) for v in leaves):
            if any(isinstance(v, nd.NDArray) for v in leaves):
                raise ValueError(f"{type(self).__name__}: in a HybridBlock the inputs cannot mix "
                                 "NDArrays and Symbols")
            return self._symbolic_forward(x, *args)
        arrays = [v for v in leaves if isinstance(v, nd.NDArray)]
        if not arrays:
            raise ValueError(f"{type(self).__name__}.forward: in a HybridBlock there must be at "
                             "least one NDArray or Symbol among the inputs, got "
                             f"{[type(v).__name__ for v in leaves]}")
        if self._active and len(arrays) + leaves.count(None) != len(leaves):
            raise ValueError(f"{type(self).__name__}: a hybridized block takes only NDArray (or "
                             "None) inputs, got "
                             f"{[type(v).__name__ for v in leaves]}")
        ctx = arrays[0].context
        if self._active:
            contexts = {a.context for a in arrays}
            if len(contexts) > 1:
                raise ValueError(f"{type(self).__name__}: a hybridized block takes inputs on one "
                                 f"context only, got arrays on {sorted(map(str, contexts))}")
            return _hybrid.call_cached(self, (x, *args))
        return self.hybrid_forward(nd, x, *args, **self._params_on(ctx, (x, *args)))

    def _params_on(self, ctx, inputs):
        """This block's parameter arrays on ``ctx`` by attribute name, finishing a deferred
        initialisation from ``inputs`` first. Kept until any Parameter's arrays change (the
        generation counter), so a repeated call does no per-parameter lookups."""
        cache = self._param_cache
        if cache is not None and cache[0] == _param._generation[0] and cache[1] == ctx:
            return cache[2]
        try:
            params = {key: p.data(ctx) for key, p in self._reg_params.items()}
        except DeferredInitializationError:
            self._infer_deferred_shapes(*inputs)
            for p in self.collect_params().values():
                p._finish_deferred_init()
            params = {key: p.data(ctx) for key, p in self._reg_params.items()}
        self._param_cache = (_param._generation[0], ctx, params)
        return params

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define hybrid_forward")

    def infer_shape(self, *args):
        """Fill unknown parameter dims from example inputs (traced graph, unknown dims 0)."""
        self._infer_attrs("shape", *args)

    def infer_type(self, *args):
        """Set parameter dtypes from example inputs through the traced graph."""
        self._infer_attrs("dtype", *args)

    def optimize_for(self, x, *args, backend=None, backend_opts=None, clear=True, **kwargs):
        """Accepted for MXNet compatibility: there are no graph backends, so this hybridizes the
        block and runs it once on the example inputs."""
        self.hybridize(True, **{k: v for k, v in kwargs.items()
                                if k in ("static_alloc", "static_shape")})
        self(x, *args)

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write ``path-symbol.json`` and ``path-%04d.params`` (``arg:``/``aux:`` keys), the
        files MXNet's ``SymbolBlock.imports`` and ``mx.model.load_checkpoint`` read. Returns the
        two file names."""
        from ._export import export_block
        return export_block(self, path, epoch, remove_amp_cast)
