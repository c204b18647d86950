"""``Module``: a Symbol bound to one executor per context, trained with an optimizer."""

import logging
import os
import warnings

import numpy as np

from .. import context as ctx
from .. import ndarray as nd
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from ..model import load_checkpoint
from ..ndarray import sparse_update
from ..ndarray.ndarray import _STORAGE_TYPE_ID_TO_STR
from .base_module import (
    BaseModule,
    _check_input_names,
    _parse_data_desc,
    _require,
)
from .executor_group import DataParallelExecutorGroup

_BIG_PARAM = 1024 * 1024 * 16  # MXNet updates on the devices above this many elements


def _optimizer_module():
    from .. import optimizer  # imported late: mx.optimizer imports parts of the package
    return optimizer


def _create_kvstore(kvstore, num_device, arg_params):
    """``(kvstore or None, update_on_kvstore)`` as MXNet decides them: no store for one device
    on one machine; the optimizer runs in the store unless ``MXNET_UPDATE_ON_KVSTORE=0`` or a
    parameter is very large."""
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore and kvstore != "horovod":
            kv = None
        else:
            from .. import kvstore as kvs
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                if max(int(np.prod(p.shape)) for p in arg_params.values()) > _BIG_PARAM:
                    update_on_kvstore = False
    elif hasattr(kvstore, "pushpull") or hasattr(kvstore, "push"):
        kv = kvstore
    else:
        raise TypeError(f"kvstore must be a KVStore, a str or None, got {type(kvstore).__name__}")
    if kv is None:
        return None, False
    if hasattr(kv, "is_capable"):
        update_on_kvstore = update_on_kvstore and kv.is_capable("optimizer")
    return kv, update_on_kvstore


class Module(BaseModule):
    """MXNet's ``mx.mod.Module``: binds ``symbol`` with ``data_names``/``label_names`` as inputs;
    every other argument is a parameter (``fixed_param_names`` are not updated)."""

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=None, work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        if context is None:
            context = ctx.cpu()
        if isinstance(context, ctx.Context):
            context = [context]
        self._context = list(context)
        if work_load_list is None:
            work_load_list = [1] * len(self._context)
        if len(work_load_list) != len(self._context):
            raise ValueError(f"work_load_list has {len(work_load_list)} entries for "
                             f"{len(self._context)} contexts")
        self._work_load_list = list(work_load_list)
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        data_names = list(data_names) if data_names is not None else []
        label_names = list(label_names) if label_names is not None else []
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, data_names, "data", True)
        _check_input_names(symbol, label_names, "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)
        inputs = data_names + label_names + state_names
        self._param_names = [n for n in symbol.list_arguments() if n not in inputs]
        self._fixed_param_names = fixed_param_names
        self._aux_names = symbol.list_auxiliary_states()
        self._data_names = data_names
        self._label_names = label_names
        self._state_names = state_names
        self._output_names = symbol.list_outputs()
        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._preload_opt_states = None
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # -- checkpoints ----------------------------------------------------------------------

    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A module from ``prefix-symbol.json`` and ``prefix-%04d.params`` (and the optimizer
        states of ``prefix-%04d.states`` once ``init_optimizer`` runs); ``kwargs`` go to
        ``Module``. Bind it before use."""
        symbol, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=symbol, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = f"{prefix}-{epoch:04d}.states"
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Writes ``prefix-symbol.json``, ``prefix-%04d.params`` and optionally
        ``prefix-%04d.states``."""
        self._symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
        param_name = f"{prefix}-{epoch:04d}.params"
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = f"{prefix}-{epoch:04d}.states"
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)

    # -- names and shapes -----------------------------------------------------------------

    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        _require(self.binded, "data_shapes: the module is not bound")
        return self._data_shapes

    @property
    def label_shapes(self):
        _require(self.binded, "label_shapes: the module is not bound")
        return self._label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "output_shapes: the module is not bound")
        return self._exec_group.get_output_shapes()

    # -- parameters -----------------------------------------------------------------------

    def get_params(self):
        """``(arg_params, aux_params)``: the parameters (averaged over the devices)."""
        _require(self.params_initialized, "get_params: call init_params first")
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Sets every parameter from ``arg_params``/``aux_params`` or, when missing there (with
        ``allow_missing``, or when no dict is given), with ``initializer`` (default
        ``Uniform(0.01)``); a missing parameter without ``allow_missing`` is a RuntimeError and
        an unknown one without ``allow_extra`` a ValueError."""
        if initializer is None and arg_params is None and aux_params is None:
            initializer = Uniform(0.01)
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        _require(self.binded, "init_params: call bind before initializing the parameters")
        attrs = self._symbol.attr_dict()

        def fill(name, arr, given):
            if given is not None and name in given:
                src = given[name]
                if src is not arr:
                    if tuple(src.shape) != arr.shape:
                        raise ValueError(f"init_params: '{name}' has shape {tuple(src.shape)} "
                                         f"but the module's parameter has shape {arr.shape}")
                    arr[:] = src.astype(arr.dtype) if src.dtype != arr.dtype else src
                return
            if given is not None and not allow_missing:
                raise RuntimeError(f"{name} is not presented")
            if initializer is not None:
                initializer(InitDesc(name, attrs.get(name, None)), arr)
                sparse_update.refresh(arr)  # a sparse parameter's components follow its values

        for name, arr in sorted(self._arg_params.items()):
            fill(name, arr, arg_params)
        for name, arr in sorted(self._aux_params.items()):
            fill(name, arr, aux_params)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def _assign_params(self, arg_params, aux_params, force_init, allow_extra):
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        self._params_dirty = False

    # -- binding --------------------------------------------------------------------------

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Allocates the executors for ``data_shapes``/``label_shapes`` (``DataDesc``s or
        ``(name, shape)`` pairs). ``shared_module`` lends its parameters and their memory."""
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if not for_training and inputs_need_grad:
            raise ValueError("bind: inputs_need_grad=True needs for_training=True")
        data_shapes, label_shapes = _parse_data_desc(self._data_names, self._label_names,
                                                     data_shapes, label_shapes)
        shared_group = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded
                    and shared_module.params_initialized):
                raise ValueError("bind: shared_module must be a bound Module with initialized "
                                 "parameters")
            shared_group = shared_module._exec_group
            if len(shared_group.execs) < len(self._context):
                raise ValueError("bind: shared_module has fewer contexts than this module")
        self._exec_group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, data_shapes, label_shapes,
            self._param_names, for_training, inputs_need_grad, shared_group,
            logger=self.logger, fixed_param_names=self._fixed_param_names, grad_req=grad_req,
            group2ctxs=self._group2ctxs, state_names=self._state_names)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = data_shapes, label_shapes
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
        elif self.params_initialized:
            # re-binding (or loaded): the executors take the values already held
            self._exec_group.set_params(self._arg_params, self._aux_params)
        else:
            stypes = {name: _STORAGE_TYPE_ID_TO_STR.get(int(a.get("__storage_type__", 0)))
                      for name, a in self._symbol.attr_dict().items()}
            self._arg_params = {name: nd.zeros(block[0].shape, dtype=block[0].dtype,
                                               stype=stypes.get(name))
                                for name, block in zip(self._param_names,
                                                       self._exec_group.param_arrays,
                                                       strict=True)}
            self._aux_params = {name: nd.zeros(block[0].shape, dtype=block[0].dtype)
                                for name, block in zip(self._aux_names,
                                                       self._exec_group.aux_arrays,
                                                       strict=True)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def reshape(self, data_shapes, label_shapes=None):
        """Rebinds for new input shapes (e.g. another batch size), keeping the parameters."""
        _require(self.binded, "reshape: the module is not bound")
        self._data_shapes, self._label_shapes = _parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes)
        self._exec_group.reshape(self._data_shapes, self._label_shapes)

    # -- optimizer ------------------------------------------------------------------------

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Creates the optimizer (a name with ``optimizer_params``, or an ``Optimizer``).
        ``rescale_grad`` defaults to 1 / batch size, as MXNet's."""
        _require(self.binded and self.params_initialized,
                 "init_optimizer: call bind and init_params first")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        opt = _optimizer_module()
        if self._params_dirty:
            self._sync_params_from_devices()
        kvstore, update_on_kvstore = _create_kvstore(kvstore, len(self._context),
                                                     self._arg_params)
        batch_size = self._exec_group.batch_size
        if kvstore is not None and "dist" in kvstore.type and "_sync" in kvstore.type:
            batch_size *= kvstore.num_workers
        rescale_grad = 1.0 / batch_size
        param_names = self._exec_group.param_names
        n_dev = len(self._context)
        if update_on_kvstore:
            idx2name = dict(enumerate(param_names))
        else:
            idx2name = {i * n_dev + k: n for k in range(n_dev) for i, n in enumerate(param_names)}
        if isinstance(optimizer, str):
            optimizer_params = dict(optimizer_params)
            optimizer_params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name,
                                   **optimizer_params)
        else:
            if not isinstance(optimizer, opt.Optimizer):
                raise TypeError(f"init_optimizer: optimizer must be a name or an "
                                f"mx.optimizer.Optimizer, got {type(optimizer).__name__}")
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn("Optimizer created manually outside Module but rescale_grad is "
                              f"not normalized to 1.0/batch_size/num_workers "
                              f"({optimizer.rescale_grad} vs. {rescale_grad}). Is this intended?",
                              stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        self._optimizer = optimizer
        self._kvstore = kvstore
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kvstore is not None:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            self._initialize_kvstore()
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def _initialize_kvstore(self):
        """Puts each parameter in the store and, when the store updates, copies it back to every
        device."""
        group = self._exec_group
        for idx, (name, block) in enumerate(zip(group.param_names, group.param_arrays,
                                                strict=True)):
            self._kvstore.init(name, self._arg_params[name])
            if self._update_on_kvstore:
                self._kvstore.pull(name, block, priority=-idx)
        hook_for = getattr(self._kvstore, "executor_hook", None)
        if hook_for is not None and len(group.execs) == 1:
            # a distributed store reduces each gradient as the executor's backward produces it
            exe, params = group.execs[0], set(group.param_names)
            exe._grad_ready = hook_for({i: n for i, n in enumerate(exe._arg_names)
                                        if n in params})

    def borrow_optimizer(self, shared_module):
        """Uses ``shared_module``'s optimizer, store and updater."""
        _require(shared_module.optimizer_initialized,
                 "borrow_optimizer: the shared module has no optimizer")
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname):
        _require(self.optimizer_initialized, "save_optimizer_states: no optimizer yet")
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            with open(fname, "wb") as f:
                f.write(self._updater.get_states())

    def load_optimizer_states(self, fname):
        _require(self.optimizer_initialized, "load_optimizer_states: no optimizer yet")
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            with open(fname, "rb") as f:
                self._updater.set_states(f.read())

    # -- computation ----------------------------------------------------------------------

    def forward(self, data_batch, is_train=None):
        """Runs the forward pass on a batch (a ``DataBatch`` or anything with ``.data``); a batch
        whose shapes differ from the bound ones reshapes the module first."""
        _require(self.binded and self.params_initialized,
                 "forward: call bind and init_params first")
        current = tuple(d.shape for d in self._data_shapes)
        if isinstance(data_batch, list):
            if not data_batch:
                raise ValueError("forward: empty list of data batches")
            new = tuple((len(data_batch) * d.shape[0],) + tuple(d.shape[1:])
                        for d in data_batch[0].data)
        else:
            new = tuple(tuple(d.shape) for d in data_batch.data)
        if current != new:
            if getattr(data_batch, "provide_data", None):
                new_dshape = data_batch.provide_data
            else:
                new_dshape = [DataDesc(d.name, shape, d.dtype, d.layout)
                              for d, shape in zip(self._data_shapes, new, strict=True)]
            if getattr(data_batch, "provide_label", None):
                new_lshape = data_batch.provide_label
            elif getattr(data_batch, "label", None) and self._label_shapes:
                new_lshape = [DataDesc(d.name, tuple(lab.shape), d.dtype, d.layout)
                              for d, lab in zip(self._label_shapes, data_batch.label,
                                                strict=False)]
            else:
                new_lshape = None
            self.reshape(new_dshape, new_lshape)
        self._exec_group.forward(data_batch, is_train)
        if is_train or (is_train is None and self.for_training):
            self._params_dirty = True  # a training forward moves auxiliary states (BatchNorm)

    def backward(self, out_grads=None):
        """Backpropagates (``out_grads``: one array per output, or None for loss outputs)."""
        _require(self.binded and self.params_initialized,
                 "backward: call bind and init_params first")
        self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """Updates the parameters with the optimizer from the last backward's gradients (summed
        over the devices)."""
        _require(self.binded and self.params_initialized and self.optimizer_initialized,
                 "update: call bind, init_params and init_optimizer first")
        self._params_dirty = True
        group = self._exec_group
        blocks = list(zip(group.param_names, group.param_arrays, group.grad_arrays or [],
                          strict=False))
        if self._update_on_kvstore:
            live = [(name, weights, grads) for name, weights, grads in blocks
                    if grads[0] is not None]
            if live:
                # one call for all keys: a distributed store buckets them into few allreduces
                names, weights, grads = (list(t) for t in zip(*live, strict=True))
                self._kvstore.pushpull(names, grads, out=weights)
            return
        n_dev = len(self._context)
        for idx, (name, weights, grads) in enumerate(blocks):
            if grads[0] is None:
                continue
            if self._kvstore is not None:
                self._kvstore.pushpull(name, grads, priority=-idx)  # sum over the devices
            for k, (w, g) in enumerate(zip(weights, grads, strict=True)):
                # one state per device: the same parameter gets index idx * n_dev + k
                self._updater(idx * n_dev + k, g, w)

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward (per device with ``merge_multi_context=False``)."""
        _require(self.binded and self.params_initialized,
                 "get_outputs: call bind and init_params first")
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the data inputs (bind with ``inputs_need_grad=True``)."""
        _require(self.binded and self.params_initialized and self.inputs_need_grad,
                 "get_input_grads: bind with inputs_need_grad=True and init_params first")
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized,
                 "get_states: call bind and init_params first")
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        _require(self.binded and self.params_initialized,
                 "set_states: call bind and init_params first")
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Updates ``eval_metric`` with the last outputs against ``labels``."""
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        _require(self.binded, "install_monitor: the module is not bound")
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        _require(self.binded, "prepare: the module is not bound")
        super().prepare(data_batch, sparse_row_id_fn)
