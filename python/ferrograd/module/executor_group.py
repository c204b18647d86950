"""``DataParallelExecutorGroup``: one bound executor per context, each on a slice of the batch.

Each executor holds its own copy of the parameters; the module averages them when it reads the
parameters and sums the gradients across devices (through a KVStore) before updating.
"""

import logging
from collections import OrderedDict

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..context import Context, cpu
from ..io import DataDesc
from ..ndarray import NDArray

_GRAD_REQS = ("null", "write", "add")


def _split_input_slice(batch_size, work_load_list):
    """Slices of ``range(batch_size)``, one per device, proportional to ``work_load_list``."""
    total = sum(work_load_list)
    sizes = [round(w * batch_size / total) for w in work_load_list]
    if sum(sizes) < batch_size:
        sizes[-1] += batch_size - sum(sizes)
    slices, end = [], 0
    for size in sizes:
        begin = min(end, batch_size)
        end = min(begin + size, batch_size)
        if begin >= end:
            raise ValueError(f"batch size {batch_size} is too small for {len(work_load_list)} "
                             f"devices with work loads {list(work_load_list)}: a slice is empty")
        slices.append(slice(int(begin), int(end)))
    return slices


def _group_contexts(group2ctxs, n_devices):
    """Per device, a ``{ctx_group: Context}`` dict (or None). Accepts one dict per device, or one
    dict whose values are a context or a list of 1 or ``n_devices`` contexts."""
    if group2ctxs is None:
        return [None] * n_devices
    if isinstance(group2ctxs, (list, tuple)):
        if len(group2ctxs) != n_devices:
            raise ValueError(f"group2ctxs: expected one dict per context ({n_devices}), got "
                             f"{len(group2ctxs)}")
        return list(group2ctxs)
    if not isinstance(group2ctxs, dict):
        raise TypeError("group2ctxs must be a dict of group name to context(s) or a list of such "
                        f"dicts, got {type(group2ctxs).__name__}")
    out = [{} for _ in range(n_devices)]
    for group, value in group2ctxs.items():
        ctxs = [value] * n_devices if isinstance(value, Context) else list(value)
        if len(ctxs) == 1:
            ctxs *= n_devices
        if len(ctxs) != n_devices:
            raise ValueError(f"group2ctxs['{group}']: expected 1 or {n_devices} contexts, got "
                             f"{len(ctxs)}")
        for per_device, c in zip(out, ctxs, strict=True):
            per_device[group] = c
    return out


def _slice_along(arr, axis, sl):
    if isinstance(arr, np.ndarray):
        arr = nd.array(arr, dtype=arr.dtype)
    if sl.start == 0 and arr.shape[axis] == sl.stop:
        return arr
    if axis == 0:
        return arr[sl.start:sl.stop]
    return nd.slice_axis(arr, axis=axis, begin=sl.start, end=sl.stop)


def _copy_into(src, dst):
    if isinstance(src, np.ndarray):
        src = nd.array(src, dtype=dst.dtype)
    if tuple(src.shape) != tuple(dst.shape):
        raise ValueError(f"cannot load an array of shape {tuple(src.shape)} into an input of "
                         f"shape {tuple(dst.shape)}")
    dst[:] = src if src.dtype == dst.dtype else src.astype(dst.dtype)


def _load_general(sources, targets, axes):
    """Copies each source array into its per-device targets, slicing along the batch axis."""
    for src, dst, axis in zip(sources, targets, axes, strict=False):
        if isinstance(dst, NDArray):
            _copy_into(src, dst)
        elif isinstance(src, (list, tuple)):  # already one array per device
            for s, d in zip(src, dst, strict=True):
                _copy_into(s, d)
        else:
            for sl, d in dst:
                _copy_into(_slice_along(src, axis, sl) if axis >= 0 else src, d)


def _merge_multi_context(outputs, axes):
    """One array per output: the devices' parts concatenated along the batch axis (outputs with
    no batch axis are the same on every device; the first is taken)."""
    merged = []
    for parts, axis in zip(outputs, axes, strict=True):
        if axis >= 0 and len(parts) > 1:
            merged.append(nd.concat(*parts, dim=axis))
        else:
            merged.append(parts[0])
    return merged


def _as_descs(shapes):
    """``DataDesc`` for each entry; ``(name, shape)`` pairs are accepted as in MXNet."""
    if shapes is None:
        return None
    return [d if isinstance(d, DataDesc) else DataDesc(*d) for d in shapes]


class DataParallelExecutorGroup:
    """Binds ``symbol`` once per context in ``contexts``; ``workload`` splits the batch."""

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req="write", state_names=None, group2ctxs=None):
        self.param_names = list(param_names)
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.symbol = symbol
        self.contexts = contexts
        self.workload = workload
        self.group2ctxs = _group_contexts(group2ctxs, len(contexts))
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        self._default_execs = None
        self._total_exec_bytes = 0
        data_shapes, label_shapes = _as_descs(data_shapes), _as_descs(label_shapes)
        self.grad_req = self._grad_req_dict(grad_req if for_training else "null", data_shapes)
        if shared_group is not None:
            self.shared_data_arrays = shared_group.shared_data_arrays
        else:
            self.shared_data_arrays = [{} for _ in contexts]
        self.output_names = symbol.list_outputs()
        self.output_layouts = [DataDesc.get_batch_axis(symbol[name].attr("__layout__"))
                               for name in self.output_names]
        self.num_outputs = len(self.output_names)
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _grad_req_dict(self, grad_req, data_shapes):
        data_names = [d.name for d in data_shapes]

        def default(name, req):
            if name in self.param_names:
                return "null" if name in self.fixed_param_names else req
            if name in data_names:
                return req if self.inputs_need_grad else "null"
            return "null"

        if isinstance(grad_req, str):
            reqs = {n: default(n, grad_req) for n in self.arg_names}
        elif isinstance(grad_req, (list, tuple)):
            if len(grad_req) != len(self.arg_names):
                raise ValueError(f"grad_req has {len(grad_req)} entries for "
                                 f"{len(self.arg_names)} arguments {self.arg_names}")
            reqs = dict(zip(self.arg_names, grad_req, strict=True))
        elif isinstance(grad_req, dict):
            reqs = {n: default(n, "write") for n in self.arg_names}
            reqs.update(grad_req)
        else:
            raise ValueError("grad_req must be one of str, list, tuple, or dict.")
        for name, req in reqs.items():
            if req not in _GRAD_REQS:
                raise ValueError(f"grad_req for '{name}' must be one of {list(_GRAD_REQS)}, "
                                 f"got {req!r}")
        return reqs

    def decide_slices(self, data_shapes):
        """The batch axis of each input; sets ``batch_size`` and the per-device ``slices``."""
        axes = [DataDesc.get_batch_axis(d.layout) for d in data_shapes]
        for desc, axis in zip(data_shapes, axes, strict=True):
            if axis == -1:
                continue
            batch_size = desc.shape[axis]
            if self.batch_size is None:
                self.batch_size = batch_size
                self.slices = _split_input_slice(batch_size, self.workload)
            elif batch_size != self.batch_size:
                raise ValueError(f"all data must have the same batch size: batch_size = "
                                 f"{self.batch_size}, but {desc.name} has shape {desc.shape}")
        return axes

    def _sliced_shape(self, shapes, i, axes):
        sliced = []
        for desc, axis in zip(shapes, axes, strict=True):
            shape = list(desc.shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            sliced.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return sliced

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        """Binds (or, with ``reshape``, reshapes) one executor per context."""
        data_shapes, label_shapes = _as_descs(data_shapes), _as_descs(label_shapes)
        self.batch_size = None
        self.data_layouts = self.decide_slices(data_shapes)
        self.label_layouts = self.decide_slices(label_shapes) if label_shapes else []
        if not reshape:
            self.execs = []
        for i in range(len(self.contexts)):
            shapes = self._sliced_shape(data_shapes, i, self.data_layouts)
            if label_shapes:
                shapes += self._sliced_shape(label_shapes, i, self.label_layouts)
            if reshape:
                self.execs[i] = self._default_execs[i].reshape(
                    allow_up_sizing=True, **{d.name: d.shape for d in shapes})
            else:
                self.execs.append(self._bind_ith_exec(i, shapes, shared_group))
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes
        self.data_names = [d.name for d in data_shapes]
        self.label_names = [d.name for d in label_shapes] if label_shapes else []
        self._collect_arrays()

    def reshape(self, data_shapes, label_shapes):
        """Rebinds for new input shapes, sharing the parameters with the first binding."""
        data_shapes, label_shapes = _as_descs(data_shapes), _as_descs(label_shapes)
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        self.bind_exec(data_shapes, label_shapes, reshape=True)

    def _bind_ith_exec(self, i, input_shapes, shared_group):
        """Binds device ``i``: parameters (and their gradients) of ``shared_group`` and inputs in
        ``shared_data_arrays`` are reused when their shapes match."""
        ctx = self.contexts[i]
        # Arguments of a ctx_group live on that group's context (MXNet's model parallelism).
        groups = self.group2ctxs[i] or {}
        attrs = self.symbol.attr_dict() if groups else {}
        arg_ctx = {n: groups.get(attrs.get(n, {}).get("ctx_group"), ctx) for n in self.arg_names}
        shared_exec = None if shared_group is None else shared_group.execs[i]
        shared_data = self.shared_data_arrays[i]
        shapes = {d.name: tuple(d.shape) for d in input_shapes}
        types = {d.name: d.dtype for d in input_shapes if d.dtype is not None}
        try:
            arg_shapes, _, aux_shapes = self.symbol.infer_shape(**shapes)
            arg_types, _, aux_types = self.symbol.infer_type(**types)
        except MXNetError as e:
            raise MXNetError(f"Module.bind: cannot infer the shapes of {self.arg_names} from "
                             f"the inputs {shapes}: {e}") from e
        if arg_shapes is None:
            raise MXNetError(f"Module.bind: the inputs {shapes} do not determine the shapes of "
                             f"every argument of {self.arg_names}")
        args, grads = [], []
        for name, shape, dtype in zip(self.arg_names, arg_shapes, arg_types, strict=True):
            dtype = dtype or np.float32
            req = self.grad_req[name]
            arr = grad = None
            if name in self.param_names and shared_exec is not None:
                old = shared_exec.arg_dict.get(name)
                if old is not None and old.shape == tuple(shape) and old.dtype == dtype:
                    arr = old
                    grad = shared_exec.grad_dict.get(name)
            elif name not in self.param_names and name in shared_data:
                old = shared_data[name]
                if old.shape == tuple(shape) and old.dtype == dtype:
                    arr = old
            if arr is None:
                arr = nd.zeros(tuple(shape), arg_ctx[name], dtype=dtype)
                if name not in self.param_names:
                    shared_data[name] = arr
            if grad is None and req != "null":
                grad = nd.zeros(tuple(shape), arg_ctx[name], dtype=dtype)
            args.append(arr)
            grads.append(grad if req != "null" else None)
        aux = [nd.zeros(tuple(s), ctx, dtype=t or np.float32)
               for s, t in zip(aux_shapes, aux_types, strict=True)]
        if shared_exec is not None:
            aux = [old if old.shape == new.shape else new
                   for old, new in zip(shared_exec.aux_arrays, aux, strict=True)]
        reqs = [self.grad_req[n] for n in self.arg_names]
        exe = self.symbol.bind(ctx, args, args_grad=grads, grad_req=reqs, aux_states=aux)
        self._total_exec_bytes += exe.handle.memory()[0] >> 20
        return exe

    def _collect_arrays(self):
        execs = self.execs
        self.data_arrays = [[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(execs)]
                            for name in self.data_names]
        self.state_arrays = [[e.arg_dict[name] for e in execs] for name in self.state_names]
        self.label_arrays = ([[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(execs)]
                              for name in self.label_names] if self.label_shapes else None)
        positions = [i for i, n in enumerate(self.arg_names) if n in self.param_names]
        self.param_arrays = [[e.arg_arrays[i] for e in execs] for i in positions]
        if self.for_training:
            self.grad_arrays = [[e.grad_dict[self.arg_names[i]] for e in execs]
                                for i in positions]
        else:
            self.grad_arrays = None
        if self.inputs_need_grad:
            self.input_grad_arrays = [[e.grad_dict[name] for e in execs]
                                      for name in self.data_names if name in self.arg_names]
        else:
            self.input_grad_arrays = None
        self.aux_arrays = [[e.aux_arrays[i] for e in execs] for i in range(len(self.aux_names))]

    def set_params(self, arg_params, aux_params, allow_extra=False):
        """Copies the given values into every device's parameters."""
        for exe in self.execs:
            exe.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Writes the devices' average of each parameter into ``arg_params``/``aux_params``."""
        for names, blocks, out in ((self.param_names, self.param_arrays, arg_params),
                                   (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks, strict=True):
                total = block[0].copyto(cpu())
                for w in block[1:]:
                    total = total + w.copyto(cpu())
                mean = total / len(block) if len(block) > 1 else total
                out[name][:] = mean.astype(out[name].dtype)

    def forward(self, data_batch, is_train=None):
        """Loads the batch into each device's inputs and runs the forward pass."""
        _load_general(data_batch.data, self.data_arrays, self.data_layouts)
        if is_train is None:
            is_train = self.for_training
        if self.label_arrays is not None and getattr(data_batch, "label", None):
            _load_general(data_batch.label, self.label_arrays, self.label_layouts)
        for exe in self.execs:
            exe.forward(is_train=is_train)

    def backward(self, out_grads=None):
        """Backpropagates; ``out_grads`` (one per output, whole batch) are sliced per device."""
        if not self.for_training:
            raise MXNetError("backward: re-bind with for_training=True to run backward")
        if out_grads is None:
            out_grads = []
        elif isinstance(out_grads, NDArray):
            out_grads = [out_grads]
        for exe, sl, ctx in zip(self.execs, self.slices, self.contexts, strict=True):
            grads = [_slice_along(g, axis, sl).as_in_context(ctx) if axis >= 0
                     else g.copyto(ctx)
                     for g, axis in zip(out_grads, self.output_layouts, strict=False)]
            exe.backward(out_grads=grads)

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        if end is None:
            end = self.num_outputs
        outputs = [[exe.outputs[i] for exe in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            return _merge_multi_context(outputs, self.output_layouts[begin:end])
        return outputs

    def get_output_shapes(self):
        shapes = []
        for name, out, axis in zip(self.output_names, self.execs[0].outputs,
                                   self.output_layouts, strict=True):
            shape = list(out.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_input_grads(self, merge_multi_context=True):
        if not self.inputs_need_grad:
            raise MXNetError("get_input_grads: bind with inputs_need_grad=True")
        if merge_multi_context:
            return _merge_multi_context(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def get_states(self, merge_multi_context=True):
        if merge_multi_context:
            raise MXNetError("get_states: merge_multi_context=True is not supported")
        return self.state_arrays

    def set_states(self, states=None, value=None):
        """Sets the RNN states from arrays (one list per device) or to a scalar ``value``."""
        if states is not None:
            if value is not None:
                raise ValueError("set_states: give states or value, not both")
            _load_general(states, self.state_arrays, (0,) * len(states))
        else:
            if value is None:
                raise ValueError("set_states: give states or value")
            for per_device in self.state_arrays:
                for dst in per_device:
                    dst[:] = value

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Updates ``eval_metric`` with each device's outputs against its slice of ``labels``."""
        for i, (exe, sl) in enumerate(zip(self.execs, self.slices, strict=True)):
            if pre_sliced:
                labels_slice = labels[i]
            else:
                labels_slice = [_slice_along(lab, axis, sl) if axis >= 0 else lab
                                for lab, axis in zip(labels, self.label_layouts, strict=False)]
            labels_ = OrderedDict(zip(self.label_names, labels_slice, strict=False))
            preds = OrderedDict(zip(self.output_names, exe.outputs, strict=True))
            eval_metric.update_dict(labels_, preds)

    def install_monitor(self, mon):
        for exe in self.execs:
            mon.install(exe)
