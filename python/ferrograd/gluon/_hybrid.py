"""Hybridized execution: ``hybrid_forward`` traced once into a Symbol, bound on an Executor.

A hybridized block keeps one :class:`_CachedGraph` (the traced symbol: inputs ``data`` or
``data0..``, parameters as variables named as the Parameters) and, per input signature (shapes,
dtypes, context), a pool of bound executors. A call copies the inputs into the executor's own
input arrays, runs the fixed native schedule and returns copies of the outputs. Under
``autograd.record()`` the call is ONE recorded node whose backward is the executor's backward;
autograd then delivers the parameter gradients into ``Parameter.grad()`` per ``grad_req``.

An executor holds the state of its last forward. A recorded call keeps its executor reserved
until the node's backward has run, so calling the block again before ``backward`` (a shared
layer, two losses) binds a second executor instead of overwriting the first one's state.
"""

import json
import threading

import numpy as np

from .. import autograd
from .. import ndarray as nd
from .. import symbol as sym
from .._ferrograd import _ag_in_graph, _ag_record_function
from ..base import MXNetError, NotImplementedForSymbol
from . import parameter as _param

# Recorded calls whose backward has not run yet may each hold an executor; past this many per
# signature the oldest is reused (its node then raises a clear error if backward is called).
_MAX_RESERVED = 8
# MXNet's default `inline_limit` of `hybridize`: graphs of at most this many operators show
# their own nodes in `autograd.get_symbol` of a recorded call.
_DEFAULT_INLINE_LIMIT = 2


class HybridizeError(MXNetError, AttributeError):
    """``hybrid_forward`` used something that has no symbolic form, so it cannot be traced."""


def flatten(values, what):
    """(leaves, format): nested lists/tuples as a flat list plus the nesting to rebuild them."""
    if isinstance(values, (list, tuple)):
        leaves, fmt = [], []
        for v in values:
            sub, sub_fmt = flatten(v, what)
            leaves.extend(sub)
            fmt.append(sub_fmt)
        return leaves, fmt
    if values is None:
        return [values], -1
    if isinstance(values, (nd.NDArray, sym.Symbol)):
        return [values], 0
    raise ValueError(f"HybridBlock {what} must be (nested) list of Symbol or NDArray, "
                     f"but got {values} of type {type(values)}")


def regroup(leaves, fmt):
    """Inverse of :func:`flatten` (``leaves`` consumed from the front)."""
    if fmt in (0, -1):
        return leaves.pop(0)
    return [regroup(leaves, f) for f in fmt]


def _input_names(inputs):
    arrays = [v for v in inputs if v is not None]
    if len(arrays) == 1:
        return ["data"]
    return [f"data{i}" for i in range(len(arrays))]


def flatten_outputs(out):
    """(symbols, format, single) of what ``hybrid_forward`` returned; a symbol with several
    outputs counts as a list of them (as MXNet regroups it)."""
    if isinstance(out, sym.Symbol):
        n = len(out.list_outputs())
        if n == 1:
            return [out], 0, True
        return [out[i] for i in range(n)], [0] * n, False
    if isinstance(out, (list, tuple)):
        leaves, fmt = [], []
        for o in out:
            sub, sub_fmt, _ = flatten_outputs(o)
            leaves.extend(sub)
            fmt.append(sub_fmt)
        return leaves, fmt, False
    raise ValueError(f"HybridBlock output must be (nested) list of Symbol or NDArray, but got "
                     f"{out} of type {type(out)}")


_tracing = threading.local()


def traced_shape(symbol):
    """The shape of ``symbol`` while a block is being traced from example arrays, else None
    (layers whose graph depends on the input rank ask this)."""
    known = getattr(_tracing, "shapes", None)
    if not known:
        return None
    try:
        _, out_shapes, _ = symbol.infer_shape_partial(
            **{k: v for k, v in known.items() if k in symbol.list_arguments()})
    except MXNetError:
        return None
    return out_shapes[0] if out_shapes else None


def trace_graph(block, args):
    """The :class:`_CachedGraph` of ``block`` for the structure of ``args``."""
    leaves, in_format = flatten(list(args), "inputs")
    names = _input_names(leaves)
    variables = iter(sym.var(n) for n in names)
    sym_leaves = [None if v is None else next(variables) for v in leaves]
    arrays = [v for v in leaves if v is not None]
    previous = getattr(_tracing, "shapes", None)
    _tracing.shapes = {n: a.shape for n, a in zip(names, arrays, strict=True)}
    try:
        out = trace(block, *regroup(list(sym_leaves), in_format))
    finally:
        _tracing.shapes = previous
    out_leaves, out_format, single = flatten_outputs(out)
    symbol = out_leaves[0] if len(out_leaves) == 1 else sym.Group(out_leaves)
    positions = [i for i, v in enumerate(leaves) if v is not None]
    return _CachedGraph(block, symbol, names, in_format, positions, out_format, single)


class _CachedGraph:
    """A block's graph: the symbol, which inputs/Parameters feed it, how outputs nest."""

    def __init__(self, block, symbol, input_names, in_format, in_positions, out_format, single):
        self.symbol = symbol
        self.input_names = list(input_names)
        self.in_format = in_format
        self.in_positions = in_positions
        self.out_format = out_format
        self.single_output = single
        names = self.input_names
        params = {p.name: p for p in block.collect_params().values()}
        self.arg_names = self.symbol.list_arguments()
        self.aux_names = self.symbol.list_auxiliary_states()
        # What feeds each argument: ("input", k) or ("param", Parameter).
        self.arg_sources = []
        for name in self.arg_names:
            if name in names:
                self.arg_sources.append(("input", names.index(name)))
            elif name in params:
                self.arg_sources.append(("param", params[name]))
            else:
                raise MXNetError(f"{type(block).__name__}: the graph needs the variable "
                                 f"'{name}', which is neither an input nor a Parameter of the "
                                 "block")
        missing = [n for n in self.aux_names if n not in params]
        if missing:
            raise MXNetError(f"{type(block).__name__}: auxiliary states {missing} of the graph "
                             "are not Parameters of the block")
        self.aux_params = [params[n] for n in self.aux_names]
        # The graph's argument name of each input of a recorded call (inputs, then Parameters),
        # and its operator count (MXNet inlines graphs of at most `inline_limit` ops in
        # `autograd.get_symbol`).
        self.recorded_names = self.input_names + [
            name for (kind, _), name in zip(self.arg_sources, self.arg_names, strict=True)
            if kind == "param"]
        self.num_ops = sum(1 for node in json.loads(symbol.tojson())["nodes"]
                           if node["op"] != "null")
        self.params = [src for kind, src in self.arg_sources if kind == "param"]
        self.pools = {}
        # Parameter generation at the last check of deferred init and bound arrays.
        self.checked_generation = None

    def infer_params(self, input_arrays, attr):
        """Fill parameter shapes (``attr='shape'``) or dtypes from the inputs' through the graph."""
        if attr == "shape":
            known = {n: a.shape for n, a in zip(self.input_names, input_arrays, strict=True)}
            arg, _, aux = self.symbol.infer_shape_partial(**known)
        else:
            known = {n: a.dtype for n, a in zip(self.input_names, input_arrays, strict=True)}
            arg, _, aux = self.symbol.infer_type(**known)
        inferred = dict(zip(self.arg_names, arg, strict=True))
        inferred.update(zip(self.aux_names, aux, strict=True))
        for p in self.params + self.aux_params:
            value = inferred.get(p.name)
            if value is not None:
                setattr(p, attr, value)


def trace(block, *args):
    """``block``'s ``hybrid_forward`` run with ``F = mx.sym`` on symbol ``args``."""
    try:
        return block._symbolic_forward(*args)
    except (AttributeError, NotImplementedForSymbol) as e:
        if isinstance(e, HybridizeError):
            raise
        raise HybridizeError(
            f"{type(block).__name__}.hybrid_forward cannot be hybridized: {e}. A hybridized "
            "block is traced with F = mx.sym, so it may only use operators that exist in both "
            "mx.nd and mx.sym and no NDArray-only methods (asnumpy, asscalar, ...); call "
            "hybridize(False) to run it imperatively") from e


class _BoundRun:
    """One executor of a cached graph with its own input arrays; ``input_grads[k]`` says
    whether it computes the gradient of input ``k`` (only for inputs that are in autograd)."""

    def __init__(self, graph, inputs, ctx, input_grads):
        self.ctx = ctx
        self.input_arrays = [nd.zeros(a.shape, ctx=ctx, dtype=a.dtype) for a in inputs]
        args, reqs = [], []
        for kind, src in graph.arg_sources:
            if kind == "input":
                arr = self.input_arrays[src]
                reqs.append("write" if input_grads[src] else "null")
            else:
                arr = src.data(ctx)
                reqs.append("null" if src.grad_req == "null" else "write")
            args.append(arr)
        aux = [p.data(ctx) for p in graph.aux_params]
        grads = [None if r == "null" else nd.zeros(a.shape, ctx=ctx, dtype=a.dtype)
                 for a, r in zip(args, reqs, strict=True)]
        self.arg_param_arrays = [a for (kind, _), a in zip(graph.arg_sources, args, strict=True)
                                 if kind == "param"]
        self.param_arrays = self.arg_param_arrays + aux
        self.reqs = reqs
        self.exe = graph.symbol.bind(ctx, args, args_grad=grads, grad_req=reqs, aux_states=aux)
        self.grads = grads
        self.run_id = 0
        self.reserved = False
        self.monitor = None  # the op-hook monitor, made on first use

    def still_bound(self, graph):
        """False when a Parameter's array or grad_req changed since binding (cast, reset_ctx,
        force_reinit, grad_req='null' ...): the executor must be rebound."""
        try:
            current = [p.data(self.ctx) for p in graph.params + graph.aux_params]
        except RuntimeError:  # no longer on this context (reset_ctx) or not initialised
            return False
        if any(a is not b for a, b in zip(current, self.param_arrays, strict=True)):
            return False
        reqs = [("null" if src.grad_req == "null" else "write") for kind, src in graph.arg_sources
                if kind == "param"]
        bound = [r for (kind, _), r in zip(graph.arg_sources, self.reqs, strict=True)
                 if kind == "param"]
        return reqs == bound


def _signature(arrays, ctx, input_grads):
    return (str(ctx), input_grads) + tuple((a.shape, np.dtype(a.dtype).str) for a in arrays)


def _input_grads(arrays, recording):
    """Per input: is its gradient needed (recording, floating point and tracked by autograd)?
    A run that is not recorded needs no gradients at all."""
    if not recording:
        return (False,) * len(arrays)
    return tuple(bool(np.issubdtype(a.dtype, np.floating) and _ag_in_graph(a)) for a in arrays)


def _finish_deferred(block, graph, arrays):
    if graph.checked_generation == _param._generation[0]:
        return
    params = block.collect_params().values()
    if not any(p._deferred_init for p in params):
        return
    try:
        graph.infer_params(arrays, "shape")
    except MXNetError as e:
        raise MXNetError(f"Deferred initialization failed because shape cannot be inferred. "
                         f"{e}") from e
    for p in params:
        p._finish_deferred_init()


def _take_run(graph, arrays, ctx, input_grads):
    """A free executor for this signature (binding one if needed)."""
    pool = graph.pools.setdefault(_signature(arrays, ctx, input_grads), [])
    if graph.checked_generation != _param._generation[0]:
        for runs in graph.pools.values():
            runs[:] = [r for r in runs if r.still_bound(graph)]
        graph.checked_generation = _param._generation[0]
    for run in pool:
        if not run.reserved:
            return run
    if len(pool) >= _MAX_RESERVED:
        run = min(pool, key=lambda r: r.run_id)
        run.reserved = False
        return run
    run = _BoundRun(graph, arrays, ctx, input_grads)
    pool.append(run)
    return run


def _same_structure(fmt, stored):
    """True when two input formats differ only by trailing None arguments (defaults)."""
    short, long = sorted((list(fmt), list(stored)), key=len)
    return long[:len(short)] == short and all(f == -1 for f in long[len(short):])


def call_cached(block, args):
    """Runs hybridized ``block`` on NDArray ``args`` (see the module note)."""
    leaves, fmt = flatten(list(args), "inputs")
    graph = block._cached_graph
    if graph is None:
        graph = block._cached_graph = trace_graph(block, args)
    elif fmt != graph.in_format and not _same_structure(fmt, graph.in_format):
        raise ValueError(f"{type(block).__name__}: the argument structure does not match the "
                         f"cached graph's (stored format = {graph.in_format}, input format = "
                         f"{fmt}; -1 is None); call hybridize() again to re-trace")
    arrays = [leaves[i] for i in graph.in_positions]
    ctx = arrays[0].context
    _finish_deferred(block, graph, arrays)
    recording = autograd.is_recording()
    run = _take_run(graph, arrays, ctx, _input_grads(arrays, recording))
    training = autograd.is_training()
    with autograd.pause():
        for buf, a in zip(run.input_arrays, arrays, strict=True):
            buf[:] = a
        hooks = block._op_hooks
        if hooks and run.monitor is None:
            from ._op_hook import OpMonitor
            run.monitor = OpMonitor(graph.symbol, run.exe, hooks)
        run.exe._monitor = run.monitor if hooks else None
        run.exe.forward(is_train=training)
        run.run_id += 1
        outs = [o.copy() for o in run.exe.outputs]
    if recording:
        inputs = arrays + run.arg_param_arrays
        inline = graph.num_ops <= block._flags.get("inline_limit", _DEFAULT_INLINE_LIMIT)
        _ag_record_function(_Backward(run, graph, len(arrays)), inputs, outs, graph.symbol.handle,
                            graph.recorded_names, inline)
        run.reserved = True
    if graph.single_output:
        return outs[0]
    return regroup(outs, graph.out_format)


class _Backward:
    """The recorded node's gradient rule: the executor's backward for that run."""

    def __init__(self, run, graph, n_inputs):
        self.run = run
        self.run_id = run.run_id
        self.graph = graph
        self.n_inputs = n_inputs

    def __del__(self):
        # The recorded graph was freed (outputs dropped, or backward done): nobody can ask for
        # this run's backward any more, so its executor is free for the next call.
        if self.run.run_id == self.run_id:
            self.run.reserved = False

    def __call__(self, *out_grads):
        run = self.run
        if run.run_id != self.run_id:
            raise MXNetError("hybridized block: this forward's state was overwritten by later "
                             f"calls ({_MAX_RESERVED}+ recorded calls of one block without "
                             "backward); call backward sooner or hybridize(False)")
        run.exe.backward(list(out_grads))
        run.reserved = False  # its state stays valid (retain_graph) until another forward
        by_input = [None] * self.n_inputs
        by_param = []
        for (kind, src), g in zip(self.graph.arg_sources, run.grads, strict=True):
            if kind == "input":
                by_input[src] = g
            else:
                by_param.append(g)
        return by_input + by_param
