"""``BucketingModule``: one ``Module`` per bucket key (e.g. sequence length), all sharing the
parameters (and their memory) of the default bucket's module."""

import logging

import numpy as np

from .. import ndarray as nd
from .. import symbol as sym
from ..initializer import Uniform
from ..model import load_params
from ..name import NameManager
from .base_module import BaseModule, _check_input_names, _require
from .module import Module


class BucketingModule(BaseModule):
    """``sym_gen(bucket_key)`` returns ``(symbol, data_names, label_names)``; batches choose
    their bucket with ``DataBatch.bucket_key`` and describe their shapes with
    ``provide_data``/``provide_label``."""

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=None,
                 work_load_list=None, fixed_param_names=None, state_names=None, group2ctxs=None,
                 compression_params=None):
        super().__init__(logger=logger)
        if default_bucket_key is None:
            raise ValueError("BucketingModule: default_bucket_key is required")
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        state_names = list(state_names) if state_names is not None else []
        fixed_param_names = list(fixed_param_names) if fixed_param_names is not None else []
        _check_input_names(symbol, list(data_names or []), "data", True)
        _check_input_names(symbol, list(label_names or []), "label", False)
        _check_input_names(symbol, state_names, "state", True)
        _check_input_names(symbol, fixed_param_names, "fixed_param", True)
        self._compression_params = compression_params
        self._fixed_param_names = fixed_param_names
        self._state_names = state_names
        self._context = context
        self._work_load_list = work_load_list
        self._group2ctxs = group2ctxs
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None

    def _call_sym_gen(self, *args, **kwargs):
        # fresh automatic names per call, so every bucket names its parameters alike
        with NameManager():
            return self._sym_gen(*args, **kwargs)

    def _new_module(self, symbol, data_names, label_names):
        return Module(symbol, data_names, label_names, logger=self.logger,
                      context=self._context, work_load_list=self._work_load_list,
                      fixed_param_names=self._fixed_param_names, state_names=self._state_names,
                      group2ctxs=self._group2ctxs, compression_params=self._compression_params)

    def _reset_bind(self):
        self.binded = False
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        _require(self.binded, "data_shapes: the module is not bound")
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        _require(self.binded, "label_shapes: the module is not bound")
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        _require(self.binded, "output_shapes: the module is not bound")
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        _require(self.binded, "symbol: the module is not bound")
        return self._curr_module.symbol

    def get_params(self):
        _require(self.params_initialized, "get_params: parameters are not initialized")
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

    def _assign_params(self, arg_params, aux_params, force_init, allow_extra):
        self._curr_module.set_params(arg_params, aux_params, allow_missing=True,
                                     force_init=force_init, allow_extra=allow_extra)

    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if initializer is None and arg_params is None and aux_params is None:
            initializer = Uniform(0.01)
        if self.params_initialized and not force_init:
            return
        _require(self.binded, "init_params: call bind before initializing the parameters")
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized,
                 "get_states: call bind and init_params first")
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        _require(self.binded and self.params_initialized,
                 "set_states: call bind and init_params first")
        self._curr_module.set_states(states, value)

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Binds the default bucket's module (the others are bound on first use)."""
        params = self.get_params() if self.params_initialized else None
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        if shared_module is not None:
            raise ValueError("BucketingModule.bind: shared_module is not supported")
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        symbol, data_names, label_names = self._call_sym_gen(self._default_bucket_key)
        module = self._new_module(symbol, data_names, label_names)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        self.binded = True
        if params is not None:
            self.set_params(*params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Makes ``bucket_key``'s module current, creating and binding it (sharing the default
        bucket's parameters) on first use."""
        _require(self.binded, "switch_bucket: call bind first")
        module = self._buckets.get(bucket_key)
        if module is None:
            symbol, data_names, label_names = self._call_sym_gen(bucket_key)
            module = self._new_module(symbol, data_names, label_names)
            self._buckets[bucket_key] = module
        if not module.binded:
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=self._buckets[self._default_bucket_key],
                        grad_req=self._grad_req)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            if self.optimizer_initialized and not module.optimizer_initialized:
                module.borrow_optimizer(self._curr_module)
        self._curr_module = module
        self._curr_bucket_key = bucket_key

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        _require(self.binded and self.params_initialized,
                 "init_optimizer: call bind and init_params first")
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring.")
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        for mod in self._buckets.values():
            if mod is not self._curr_module:
                mod.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    def prepare(self, data_batch, sparse_row_id_fn=None):
        _require(self.binded and self.params_initialized,
                 "prepare: call bind and init_params first")
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    def forward(self, data_batch, is_train=None):
        _require(self.binded and self.params_initialized,
                 "forward: call bind and init_params first")
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        _require(self.binded and self.params_initialized,
                 "backward: call bind and init_params first")
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        _require(self.binded and self.params_initialized and self.optimizer_initialized,
                 "update: call bind, init_params and init_optimizer first")
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized,
                 "get_outputs: call bind and init_params first")
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        _require(self.binded and self.params_initialized and self.inputs_need_grad,
                 "get_input_grads: bind with inputs_need_grad=True and init_params first")
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        _require(self.binded and self.params_initialized,
                 "update_metric: call bind and init_params first")
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        _require(self.binded, "install_monitor: the module is not bound")
        self._monitor = mon
        for mod in self._buckets.values():
            mod.install_monitor(mon)

    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Writes ``prefix-%04d.params``, one ``prefix-<key>-symbol.json`` per bucket and the
        bucket keys (``prefix.buckets``)."""
        if not self._buckets:
            raise ValueError("BucketingModule.save_checkpoint: no bucket is bound yet")
        self.save_params(f"{prefix}-{epoch:04d}.params")
        for key in self._buckets:
            symbol = self._call_sym_gen(key)[0]
            symbol.save(f"{prefix}-{key}-symbol.json", remove_amp_cast=remove_amp_cast)
        nd.save(f"{prefix}.buckets", nd.array(list(self._buckets), dtype=np.int32))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A module from ``save_checkpoint``'s files; ``sym_gen`` and ``default_bucket_key``
        are required (the names of each bucket's inputs come from ``sym_gen``)."""
        if sym_gen is None or default_bucket_key is None:
            raise ValueError("BucketingModule.load: sym_gen and default_bucket_key are required")
        keys = [int(k) for k in nd.load(f"{prefix}.buckets")[0].asnumpy()]
        mod = BucketingModule(sym_gen, default_bucket_key, **kwargs)
        for key in keys:
            _, data_names, label_names = sym_gen(key)
            symbol = sym.load(f"{prefix}-{key}-symbol.json")
            mod._buckets[key] = Module(symbol, data_names, label_names, **kwargs)
            if key == default_bucket_key:
                mod._curr_module = mod._buckets[key]
        if mod._curr_module is None:
            raise ValueError(f"BucketingModule.load: the default bucket {default_bucket_key} "
                             f"was not saved (saved buckets: {keys})")
        arg_params, aux_params = load_params(prefix, epoch)
        mod._curr_module._arg_params = arg_params
        mod._curr_module._aux_params = aux_params
        mod._curr_module.params_initialized = True
        mod.params_initialized = True
        return mod
