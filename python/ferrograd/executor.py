"""``ferrograd.executor``: a Symbol bound to arrays (MXNet 1.x's ``Executor``).

Binding infers shapes once, derives the backward graph once from the ops' gradient rules and
plans memory; ``forward``/``backward`` then run the fixed native schedule (no Python per op).
Argument arrays are used by reference: ``exe.arg_dict['w'] is args['w']``.
"""

import os

import numpy as _np

from .base import MXNetError, ShapeError
from .context import Context
from .ndarray import NDArray, array, zeros

__all__ = ["Executor"]

_GRAD_REQ_MAP = {"null": 0, "write": 1, "add": 3}


def _as_list(what, values, names, missing_ok):
    """MXNet's list-or-dict argument forms, as a list in ``names`` order."""
    if isinstance(values, dict):
        missing = [n for n in names if n not in values]
        if missing and not missing_ok:
            more = f" (all missing: {', '.join(missing)})" if len(missing) > 1 else ""
            raise ValueError(f"key `{missing[0]}` is missing in `{what}`{more}")
        return [values.get(n) for n in names]
    if isinstance(values, (list, tuple)):
        if len(values) != len(names):
            raise ValueError(f"Length of {what} does not match the number of arguments")
        return list(values)
    raise TypeError("Only accept list of NDArrays or dict of str to NDArray")


def _check_arrays(values, allow_none):
    for v in values:
        if v is None and allow_none:
            continue
        if not isinstance(v, NDArray):
            raise TypeError("Only accept list of NDArrays or dict of str to NDArray")


def _grad_reqs(grad_req, names):
    if isinstance(grad_req, str):
        if grad_req not in _GRAD_REQ_MAP:
            raise ValueError(f"grad_req must be in {_GRAD_REQ_MAP}")
        return [grad_req] * len(names)
    if isinstance(grad_req, dict):
        reqs = [grad_req.get(n, "null") for n in names]
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(names):
            raise ValueError("Length of grad_req does not match the number of arguments")
        reqs = list(grad_req)
    else:
        raise TypeError("grad_req must be a str, a list or a dict")
    for r in reqs:
        if r not in _GRAD_REQ_MAP:
            raise KeyError(r)
    return reqs


def bind(symbol, ctx, args, args_grad=None, grad_req="write", aux_states=None):
    """``Symbol.bind``: see :meth:`ferrograd.symbol.Symbol.bind`."""
    if not isinstance(ctx, Context):
        raise TypeError("Context type error")
    arg_names = symbol.list_arguments()
    aux_names = symbol.list_auxiliary_states()
    if isinstance(args, (list, tuple)) and len(args) != len(arg_names):
        raise ValueError("Length of args does not match the number of arguments")
    arg_list = _as_list("args", args, arg_names, False)
    _check_arrays(arg_list, False)
    if args_grad is None:
        grad_list = None
        grads = [None] * len(arg_names)
    else:
        grads = _as_list("args_grad", args_grad, arg_names, isinstance(args_grad, dict))
        _check_arrays(grads, True)
        grad_list = grads
    reqs = _grad_reqs(grad_req, arg_names)
    if aux_names or aux_states:
        aux_list = _as_list("aux_states", aux_states if aux_states is not None else {},
                            aux_names, False)
        _check_arrays(aux_list, False)
    else:
        aux_list = []
    graph = _bound_graph(symbol)
    handle = graph.handle.bind(arg_list, grads, reqs, aux_list)
    arg_arrays = args if isinstance(args, list) else arg_list
    return Executor(handle, symbol, ctx, arg_arrays, grad_list, aux_list, reqs, graph)


def _bound_graph(symbol):
    """The graph an executor runs: ``symbol`` with common subexpressions merged, as MXNet's
    binding does unless ``MXNET_ELIMINATE_COMMON_EXPR=0``."""
    if os.environ.get("MXNET_ELIMINATE_COMMON_EXPR", "1") == "0":
        return symbol
    return type(symbol)(symbol.handle.eliminate_common_exprs())


def _shared_or_new(arr, shape, ctx):
    """``arr``'s memory viewed with ``shape`` when it is no larger (``Executor.reshape``
    shares memory with its parent), else new zeros."""
    shape = tuple(shape)
    if arr.shape == shape:
        return arr
    size = int(_np.prod(shape))
    if size <= arr.size:
        return arr.reshape((-1,))[:size].reshape(shape)
    return zeros(shape, ctx, dtype=arr.dtype)


def simple_bind(symbol, ctx, grad_req, type_dict, shapes):
    """``Symbol.simple_bind``: infers shapes and types, allocates zeros and binds."""
    if not isinstance(ctx, Context):
        raise TypeError("Context type error")
    if isinstance(grad_req, (list, dict)) and not grad_req:
        raise RuntimeError("grad_req in simple_bind cannot be an empty list")
    shapes = {k: v for k, v in shapes.items() if isinstance(v, tuple)}
    arg_names = symbol.list_arguments()
    try:
        if len(set(arg_names)) != len(arg_names):
            dup = sorted({n for n in arg_names if arg_names.count(n) > 1})
            raise MXNetError(f"Duplicate argument names {dup}: simple_bind cannot allocate "
                             "them separately; give the variables distinct names")
        arg_s, _, aux_s = symbol.handle.infer_shape(
            [(k, [int(d) for d in v]) for k, v in shapes.items()])
        unknown = [n for n, s in zip(arg_names, arg_s, strict=True) if s is None]
        unknown += [n for n, s in zip(symbol.list_auxiliary_states(), aux_s, strict=True)
                    if s is None]
        if unknown:
            raise MXNetError("InferShape pass cannot decide shapes for the following arguments "
                             "(-1 means unknown dimensions). Please consider providing them as "
                             "inputs:\n" + ", ".join(f"{n}: None" for n in unknown))
        known_types = [(k, _np.dtype(v).name) for k, v in (type_dict or {}).items()]
        arg_t, _, aux_t = symbol.handle.infer_type(known_types)
    except MXNetError as e:
        given = "".join(f"{k}: {v}\n" for k, v in shapes.items())
        raise RuntimeError(f"simple_bind error. Arguments:\n{given}{e}") from e
    dt = lambda t: t or "float32"  # noqa: E731
    args = [zeros(tuple(s), ctx, dtype=dt(t)) for s, t in zip(arg_s, arg_t, strict=True)]
    aux = [zeros(tuple(s), ctx, dtype=dt(t)) for s, t in zip(aux_s, aux_t, strict=True)]
    reqs = _grad_reqs(grad_req, arg_names)
    grads = [None if r == "null" else zeros(a.shape, ctx, dtype=a.dtype)
             for a, r in zip(args, reqs, strict=True)]
    graph = _bound_graph(symbol)
    handle = graph.handle.bind(args, grads, reqs, aux)
    return Executor(handle, symbol, ctx, args, grads, aux, reqs, graph)


def _dict(names, arrays, what):
    if len(set(names)) != len(names):
        raise ValueError(f"Duplicate names detected, {names}")
    return dict(zip(names, arrays, strict=True))


class Executor:
    """A bound symbol: ``forward``, ``backward`` and the bound arrays."""

    def __init__(self, handle, symbol, ctx, arg_arrays, grad_arrays, aux_arrays, grad_req,
                 graph=None):
        import copy
        self.handle = handle
        self._symbol = copy.deepcopy(symbol)
        self._graph = symbol if graph is None else graph
        self._ctx = ctx
        self._grad_req = grad_req
        self._group2ctx = None
        self.arg_arrays = arg_arrays
        self.grad_arrays = grad_arrays
        self.aux_arrays = aux_arrays
        self._monitor = None
        self._backward_monitor = None  # set by mx.mon.Monitor.install (monitor_backward)
        # grad_ready(i, grad): called as argument i's gradient is final during backward (a
        # distributed store reduces it while backward goes on; see Module.init_optimizer)
        self._grad_ready = None
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self._out_names = symbol.list_outputs()
        self._arg_dict = self._grad_dict = self._aux_dict = None

    @property
    def outputs(self):
        """The output arrays; they keep their storage across runs."""
        return self.handle.outputs()

    @property
    def arg_dict(self):
        if self._arg_dict is None:
            self._arg_dict = _dict(self._arg_names, self.arg_arrays, "arguments")
        return self._arg_dict

    @property
    def grad_dict(self):
        if self._grad_dict is None:
            grads = self.grad_arrays or [None] * len(self._arg_names)
            self._grad_dict = _dict(self._arg_names, grads, "gradients")
        return self._grad_dict

    @property
    def aux_dict(self):
        if self._aux_dict is None:
            self._aux_dict = _dict(self._aux_names, self.aux_arrays, "auxiliary states")
        return self._aux_dict

    @property
    def output_dict(self):
        return _dict(self._out_names, self.outputs, "outputs")

    def forward(self, is_train=False, **kwargs):
        """Copies ``kwargs`` into the named arguments, runs the graph, returns the outputs."""
        if kwargs:
            # Every keyword is checked (and converted) before any argument is written, so a bad
            # one leaves all arguments as they were.
            arg_dict = self.arg_dict
            writes = []
            for name, value in kwargs.items():
                if name not in arg_dict:
                    raise TypeError(f"Unknown argument {name}")
                if not isinstance(value, (NDArray, _np.ndarray)):
                    raise ValueError("only accept keyword argument of NDArrays and numpy.ndarray")
                dst = arg_dict[name]
                if tuple(value.shape) != dst.shape:
                    raise ValueError(f"Shape not match! Argument {name}, need: {dst.shape}, "
                                     f"received: {tuple(value.shape)}")
                if not isinstance(value, NDArray):
                    value = array(value, dtype=dst.dtype)
                writes.append((dst, value))
            for dst, value in writes:
                dst[:] = value
        self.handle.forward(bool(is_train), self._monitor)
        return self.outputs

    def backward(self, out_grads=None, is_train=True):
        """Backpropagates; loss outputs supply their own head gradient."""
        n = len(self._out_names)
        if out_grads is None:
            grads = [None] * n
        elif isinstance(out_grads, NDArray):
            grads = [out_grads]
        elif isinstance(out_grads, dict):
            grads = [out_grads.get(k) for k in self._out_names]
        else:
            grads = list(out_grads)
        for g in grads:
            if g is not None and not isinstance(g, NDArray):
                raise TypeError("inputs must be NDArray")
        if len(grads) < n:
            grads += [None] * (n - len(grads))
        self.handle.backward(grads, bool(is_train), self._grad_ready)
        if self._backward_monitor is not None:
            self._backward_monitor(self, grads, is_train)

    def set_monitor_callback(self, callback, monitor_all=False):
        """``callback(name, array)`` for every op output of later forward passes (``name`` is a
        str such as ``'fc1_output'`` and ``array`` an NDArray — MXNet passed bytes and a raw
        handle)."""
        self._monitor = callback

    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copies values into the bound arrays by name (cast to each destination's dtype).

        Every name and shape is checked before anything is copied, so a bad set of parameters
        leaves the executor's arrays as they were."""
        pairs = []
        for params, dst, kind in ((arg_params, self.arg_dict, "arguments"),
                                  (aux_params or {}, self.aux_dict, "auxiliary states")):
            extra = [n for n in params if n not in dst]
            if extra and not allow_extra_params:
                name = f'"{extra[0]}"' if kind == "arguments" else extra[0]
                more = f" (names not in the {kind}: {', '.join(extra)})" if len(extra) > 1 else ""
                raise ValueError(f"Find name {name} that is not in the {kind}{more}")
            for n, value in params.items():
                if n not in dst:
                    continue
                if tuple(value.shape) != tuple(dst[n].shape):
                    raise ShapeError(f"copy_params_from: parameter '{n}' has shape "
                                     f"{tuple(value.shape)} in the given params, but the bound "
                                     f"symbol needs {tuple(dst[n].shape)}")
                pairs.append((dst[n], value))
        for dst, value in pairs:
            dst[:] = value.astype(dst.dtype)

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes; arrays whose shape is unchanged are shared."""
        arg_s, _, aux_s = self._symbol.infer_shape(**kwargs)
        if arg_s is None:
            raise MXNetError("reshape: cannot infer every shape from " + str(kwargs))
        new_args, new_grads = [], []
        grads = self.grad_arrays or [None] * len(self._arg_names)
        for name, old, g, shape in zip(self._arg_names, self.arg_arrays, grads, arg_s,
                                       strict=True):
            if shape == old.shape:
                new_args.append(old)
                new_grads.append(g)
                continue
            if name not in kwargs and not partial_shaping:
                raise MXNetError(f"Shape of unspecifie arg: {name} changed. This can cause the "
                                 "new executor to not share parameters with the old one. Please "
                                 "check for error in network. If this is intended, set "
                                 "partial_shaping=True to suppress this warning.")
            if int(_np.prod(shape)) > old.size and not allow_up_sizing:
                raise MXNetError(f"New shape of arg: {name} is larger than original.First "
                                 "making a big executor and then down sizing it is more "
                                 "efficient than the reverse.If you really want to up size, set "
                                 "allow_up_sizing=True to enable allocation of new arrays.")
            new_args.append(_shared_or_new(old, shape, self._ctx))
            new_grads.append(None if g is None else _shared_or_new(g, shape, self._ctx))
        aux = [_shared_or_new(a, s, self._ctx) for a, s in zip(self.aux_arrays, aux_s, strict=True)]
        grad_arg = None if self.grad_arrays is None else new_grads
        exe = bind(self._symbol, self._ctx, new_args, grad_arg, self._grad_req, aux)
        exe._monitor = self._monitor
        exe._backward_monitor = self._backward_monitor
        # The smaller executor writes its outputs into the front of its parent's (MXNet shares
        # the memory); a larger one has outputs of its own.
        pairs = list(zip(self.outputs, exe.outputs, strict=True))
        if all(new.size <= old.size and new.dtype == old.dtype for old, new in pairs):
            exe.handle.share_outputs([_shared_or_new(old, new.shape, self._ctx)
                                      for old, new in pairs])
        return exe

    def debug_str(self):
        """The symbol's dump, then the forward and backward schedule and the memory plan."""
        steps = self.handle.schedule()
        n_fwd = self.handle.num_forward_steps()
        planned, naive = self.handle.memory()
        lines = [self._symbol.debug_str(), "Schedule:"]
        for i, (node, op) in enumerate(steps):
            lines.append(f"\t{'forward ' if i < n_fwd else 'backward'} [{i}] {op} ({node})")
        # MXNet's line (whole megabytes), then the exact figures.
        lines.append(f"Total {round(planned / 2**20)} MB allocated")
        lines.append(f"Planned {planned / 2**20:.3f} MB (unplanned: {naive / 2**20:.3f} MB)")
        return "\n".join(lines)

    def get_optimized_symbol(self):
        """The graph that runs: the bound symbol after common-subexpression elimination."""
        return self._graph
