"""``BaseModule``: the training loop (``fit``), evaluation (``score``) and prediction shared by
every module; subclasses supply binding, parameters, forward/backward and the update."""

import logging
import time
import warnings

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..initializer import Uniform
from ..io import DataBatch, DataDesc
from ..model import BatchEndParam
from ..ndarray import NDArray


def _as_list(obj):
    return obj if isinstance(obj, list) else [obj]


def _metric_module():
    from .. import metric  # imported late: mx.metric may import parts of the package
    return metric


def _check_input_names(symbol, names, typename, throw):
    """Raises (``throw``) or warns when a name is not an argument of ``symbol``."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(("_weight", "_bias", "_gamma", "_beta"))]
        msg = (f"You created Module with Module(..., {typename}_names={list(names)}) but input "
               f"with name '{name}' is not found in symbol.list_arguments(). Did you mean one "
               f"of:\n\t" + "\n\t".join(candidates))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg, stacklevel=3)


def _check_names_match(data_names, data_shapes, name, throw):
    actual = [d[0] for d in data_shapes]
    if sorted(data_names) != sorted(actual):
        msg = (f"Data provided by {name}_shapes don't match names specified by {name}_names "
               f"({data_shapes} vs. {list(data_names)})")
        if throw:
            raise ValueError(msg)
        warnings.warn(msg, stacklevel=3)


def _as_desc(entry, what):
    desc = entry if isinstance(entry, DataDesc) else DataDesc(*entry)
    shape = desc.shape
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(d, (int, np.integer)) for d in shape):
        raise TypeError(f"{what} '{desc.name}': the shape must be a tuple of ints, got "
                        f"{type(shape).__name__} {shape!r}")
    if isinstance(shape, list):
        desc = DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout)
    return desc


def _parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """``data_shapes``/``label_shapes`` as lists of ``DataDesc``, checked against the names."""
    data_shapes = [_as_desc(d, "data_shapes") for d in data_shapes]
    _check_names_match(data_names, data_shapes, "data", True)
    if label_shapes is not None:
        label_shapes = [_as_desc(d, "label_shapes") for d in label_shapes]
        _check_names_match(label_names, label_shapes, "label", False)
    else:
        _check_names_match(label_names, [], "label", False)
    return data_shapes, label_shapes


def _require(condition, message):
    if not condition:
        raise MXNetError(message)


class BaseModule:
    """A module: a computation with parameters, bound to input shapes, trained by ``fit``."""

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # -- the high-level loops -------------------------------------------------------------

    def forward_backward(self, data_batch):
        """A training forward pass followed by backward."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def _update_metric_from(self, eval_metric, batch):
        if isinstance(batch, list):
            self.update_metric(eval_metric, [b.label for b in batch], pre_sliced=True)
        else:
            self.update_metric(eval_metric, batch.label)

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Runs ``eval_data`` through the model and returns ``eval_metric``'s (name, value)
        pairs."""
        _require(self.binded and self.params_initialized,
                 "score: call bind and init_params first")
        if reset:
            eval_data.reset()
        metric = _metric_module()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            self._update_metric_from(eval_metric, eval_batch)
            if batch_end_callback is not None:
                params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                       locals=locals())
                for callback in _as_list(batch_end_callback):
                    callback(params)
            actual_num_batch += 1
        if score_end_callback:
            params = BatchEndParam(epoch=epoch, nbatch=actual_num_batch, eval_metric=eval_metric,
                                   locals=locals())
            for callback in _as_list(score_end_callback):
                callback(params)
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yields ``(outputs, batch number, batch)`` per batch, padding removed."""
        _require(self.binded and self.params_initialized,
                 "iter_predict: call bind and init_params first")
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """The outputs for ``eval_data`` (an iterator, or one NDArray/NumPy batch).

        With ``merge_batches`` the batches are concatenated (one array per output; a single
        output is returned bare unless ``always_output_list``); otherwise a list per batch.
        """
        _require(self.binded and self.params_initialized,
                 "predict: call bind and init_params first")
        if isinstance(eval_data, (NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd.array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if reset:
            eval_data.reset()
        output_list = []
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            output_list.append([out[0:out.shape[0] - pad].copy() for out in self.get_outputs()])
        if not output_list:
            return output_list
        if not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        for out in output_list:
            if len(out) != num_outputs:
                raise MXNetError("predict: cannot merge batches, the number of outputs differs "
                                 "between batches (bucketing?); use merge_batches=False")
        merged = [nd.concat(*[out[i] for out in output_list], dim=0)
                  for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=None, arg_params=None, aux_params=None,
            allow_missing=False, force_rebind=False, force_init=False, begin_epoch=0,
            num_epoch=None, validation_metric=None, monitor=None, sparse_row_id_fn=None):
        """Trains on ``train_data`` for epochs ``begin_epoch .. num_epoch - 1``: binds,
        initialises the parameters (``initializer``, default ``Uniform(0.01)``) and the
        optimizer, then per batch runs forward, backward, update and the metric; logs the
        training metric and time per epoch and scores ``eval_data`` after each epoch."""
        if num_epoch is None:
            raise ValueError("fit: please specify the number of epochs (num_epoch)")
        if initializer is None:
            initializer = Uniform(0.01)
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        metric = _metric_module()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            eval_name_vals = []
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                # the metric reads this batch's labels before the iterator moves on
                self._update_metric_from(eval_metric, data_batch)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                if batch_end_callback is not None:
                    params = BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                           locals=locals())
                    for callback in _as_list(batch_end_callback):
                        callback(params)
                nbatch += 1
            for name, val in eval_name_vals:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, val)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            # sync the devices' parameters (the average) back into every device
            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            if epoch_end_callback is not None:
                for callback in _as_list(epoch_end_callback):
                    callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, val in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, val)
            train_data.reset()

    # -- parameters -----------------------------------------------------------------------

    @property
    def symbol(self):
        return self._symbol

    def get_params(self):
        raise NotImplementedError()

    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        raise NotImplementedError()

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Assigns parameter values; with ``allow_missing`` the others keep their values."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        self._assign_params(arg_params, aux_params, force_init, allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def _assign_params(self, arg_params, aux_params, force_init, allow_extra):
        """Writes the given values into the bound parameters, keeping the others (the
        ``allow_missing`` path of ``set_params``)."""
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=True, force_init=force_init, allow_extra=allow_extra)

    def save_params(self, fname):
        """Writes the parameters as ``arg:<name>``/``aux:<name>`` entries (``nd.save``)."""
        arg_params, aux_params = self.get_params()
        save_dict = {f"arg:{k}": v for k, v in arg_params.items()}
        save_dict.update({f"aux:{k}": v for k, v in aux_params.items()})
        nd.save(fname, save_dict)

    def load_params(self, fname):
        """Reads parameters written by ``save_params`` and assigns them."""
        arg_params, aux_params = {}, {}
        for key, value in nd.load(fname).items():
            kind, _, name = key.partition(":")
            if kind == "arg":
                arg_params[name] = value
            elif kind == "aux":
                aux_params[name] = value
            else:
                raise ValueError(f"load_params: invalid key {key!r} in '{fname}' (expected "
                                 "'arg:<name>' or 'aux:<name>')")
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context=True):
        if self.binded and self.params_initialized:
            return []
        raise MXNetError("get_states: call bind and init_params first")

    def set_states(self, states=None, value=None):
        _require(self.binded and self.params_initialized,
                 "set_states: call bind and init_params first")
        if states or value:
            raise MXNetError("set_states: this module has no states")

    def install_monitor(self, mon):
        raise NotImplementedError()

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepares for the next batch (row-sparse pulls in MXNet; dense arrays need none)."""
        if sparse_row_id_fn is not None:
            warnings.warn("sparse_row_id_fn is not used: ferrograd has dense arrays only",
                          stacklevel=2)

    # -- to implement in subclasses -------------------------------------------------------

    def forward(self, data_batch, is_train=None):
        raise NotImplementedError()

    def backward(self, out_grads=None):
        raise NotImplementedError()

    def get_outputs(self, merge_multi_context=True):
        raise NotImplementedError()

    def get_input_grads(self, merge_multi_context=True):
        raise NotImplementedError()

    def update(self):
        raise NotImplementedError()

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        raise NotImplementedError()

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        raise NotImplementedError()

    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        raise NotImplementedError()
