"""``gluon.Trainer``: applies an optimizer to a set of Parameters (MXNet 1.9.1's API).

``step(batch_size)`` sums the gradients of each Parameter across its contexts (through a
kvstore when one is used), then updates every copy. With one context and a kvstore named by a
string, no kvstore is created at all (as MXNet does); with several contexts the default
``'device'`` store is created and, unless ``update_on_kvstore=False`` (or
``MXNET_UPDATE_ON_KVSTORE=0``), the optimizer runs inside it.
"""

import os

import numpy as np

from .. import autograd
from .. import kvstore as kvs
from .. import optimizer as opt
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer"]

_STALE_GRAD = (
    "Gradient of Parameter `{name}` on context {ctx} has not been updated by backward "
    "since last `step`. This could mean a bug in your model that made it only use a "
    "subset of the Parameters (Blocks) for this iteration. If you are intentionally only "
    "using a subset, call step with ignore_stale_grad=True to suppress this warning and "
    "skip updating of Parameters with stale gradient"
)


def _create_kvstore(kvstore, num_device, arg_params):
    """MXNet's choice of store: ``(kvstore or None, update_on_kvstore)``."""
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and not _is_distributed(kvstore):
            kv = None  # one device: nothing to reduce
        else:
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                largest = max(int(np.prod(p.shape)) for p in arg_params.values())
                if largest > 1024 * 1024 * 16:
                    update_on_kvstore = False
    else:
        raise TypeError("kvstore must be KVStore, str or None")
    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= kv.is_capable(kvs.KVStoreBase.OPTIMIZER)
    return kv, update_on_kvstore


def _is_distributed(kvstore):
    kind = kvstore if isinstance(kvstore, str) else getattr(kvstore, "type", "")
    return isinstance(kind, str) and (kind.startswith("dist") or kind == "horovod")


class Trainer:
    """Updates ``params`` with ``optimizer`` (a name with ``optimizer_params``, or an
    :class:`~ferrograd.optimizer.Optimizer`)."""

    def __init__(
        self,
        params,
        optimizer,
        optimizer_params=None,
        kvstore="device",
        compression_params=None,
        update_on_kvstore=None,
    ):
        if isinstance(params, (dict, ParameterDict)):
            params = list(params.values())
        if not isinstance(params, (list, tuple)):
            raise ValueError(
                f"First argument must be a list or dict of Parameters, got {type(params)}."
            )
        self._params = []
        self._param2idx = {}
        self._contains_sparse_weight = False
        self._contains_sparse_grad = False
        for i, param in enumerate(params):
            if not isinstance(param, Parameter):
                raise ValueError(
                    "First argument must be a list or dict of Parameters, "
                    f"got list of {type(param)}."
                )
            self._param2idx[param.name] = i
            self._params.append(param)
            param._set_trainer(self)
            self._contains_sparse_weight |= param._stype != "default"
            self._contains_sparse_grad |= param._grad_stype != "default"
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        self._init_optimizer(optimizer, optimizer_params or {})
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._distributed = None
        self._params_to_init = list(self._params)
        if _is_distributed(kvstore):
            # every worker must start from rank 0's values before its first backward
            self._ensure_kvstore()

    def _check_contexts(self):
        contexts = None
        for param in self._params:
            ctx = param.list_ctx()
            if contexts is not None and contexts != ctx:
                raise AssertionError(
                    f"All Parameters must be initialized on the same set of contexts, "
                    f"but Parameter {param.name} is initialized on {ctx} while "
                    f"previous Parameters are initialized on {contexts}."
                )
            contexts = ctx
        return contexts

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise AssertionError(
                    "optimizer_params must be None if optimizer is an instance of "
                    "Optimizer instead of str"
                )
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]
        for device, updater in enumerate(self._updaters):
            updater._device_id = device

    # -- kvstore ----------------------------------------------------------------------------------
    def _init_kvstore(self):
        """Creates the kvstore (if any) and decides where updates run."""
        config = self._kvstore_params
        if self._contains_sparse_weight and config["update_on_kvstore"] is False:
            raise ValueError("Cannot set update_on_kvstore=False when sparse weights are present")
        shaped = {p.name: p for p in self._params}
        kvstore, update_on_kvstore = _create_kvstore(config["kvstore"], len(self._contexts), shaped)
        self._distributed = _is_distributed(kvstore) if kvstore else False
        if self._contains_sparse_weight:
            # as MXNet: row_sparse weights live in a kvstore, even for one device
            if kvstore is None and config["kvstore"] is not None:
                kvstore = (config["kvstore"] if isinstance(config["kvstore"], kvs.KVStoreBase)
                           else kvs.create(config["kvstore"]))
            update_on_kvstore = True
        elif self._contains_sparse_grad:
            # Row_sparse gradients of dense weights: as in MXNet they are updated by the
            # trainer unless asked otherwise.
            update_on_kvstore = self._distributed
        if config["update_on_kvstore"] is not None:
            update_on_kvstore = config["update_on_kvstore"]
        if (
            kvstore is not None
            and update_on_kvstore
            and not kvstore.is_capable(kvs.KVStoreBase.OPTIMIZER)
        ):
            raise ValueError(
                f"Please set update_on_kvstore=False when training with {type(kvstore)}"
            )
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            self._kvstore = kvstore
            self._update_on_kvstore = update_on_kvstore
        else:
            self._kvstore = None
            self._update_on_kvstore = None
        self._kv_initialized = True

    def _init_params(self):
        """Initialises the kvstore entries of Parameters not yet in it."""
        if not self._kv_initialized:
            raise AssertionError(
                "Cannot initialize parameters in KVStore when KVStore is not initialized."
            )
        waiting = []
        if self._kvstore:
            for param in self._params_to_init:
                if param._deferred_init:
                    waiting.append(param)
                    continue
                arrays = param._check_and_get(param._data, list)
                idx = self._param2idx[param.name]
                self._kvstore.broadcast(idx, arrays[0], out=arrays, priority=-idx)
            watch = getattr(self._kvstore, "watch_backward", None)
            if watch is not None and len(self._contexts) == 1:
                # distributed stores may start reducing each gradient as backward produces it
                watch({self._param2idx[p.name]: p.list_data()[0] for p in self._params_to_init
                       if p not in waiting and p.grad_req == "write"})
        self._params_to_init = waiting

    def _row_sparse_pull(self, param, out, row_id):
        """Brings the rows ``row_id`` of the row_sparse ``param`` into ``out`` from the store.
        Storage writes, never recorded: ``row_sparse_data`` is called inside
        ``autograd.record()``, where the first call also sets the kvstore up."""
        with autograd.pause():
            self._ensure_kvstore()
            if self._kvstore and self._update_on_kvstore:
                idx = self._param2idx[param.name]
                self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id, priority=-idx)

    def _reset_kvstore(self):
        """Drops the kvstore (after new Parameter values are loaded)."""
        if self._kvstore and "dist" in self._kvstore.type:
            raise RuntimeError("Cannot reset distributed KVStore.")
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _ensure_kvstore(self):
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    # -- learning rate ---------------------------------------------------------------------------
    @property
    def learning_rate(self):
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning(
                "Optimizer has to be defined before its learning rate can be accessed."
            )
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has not been initialized yet")
        return self._optimizer

    def set_learning_rate(self, lr):
        """Sets the optimizer's learning rate."""
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning("Optimizer has to be defined before its learning rate is mutated.")
        self._optimizer.set_learning_rate(lr)

    # -- steps ------------------------------------------------------------------------------------
    def _check_and_rescale_grad(self, scale):
        # (a store that runs this very optimizer object, as ferrograd's dist_sync does, sees
        # the new factor: the check is for stores that keep their own copy)
        shared = getattr(self._kvstore, "runs_trainer_optimizer", False)
        if self._update_on_kvstore and self._distributed and self._kv_initialized and not shared:
            if self._optimizer.rescale_grad != scale:
                raise UserWarning(
                    "Possible change in the `batch_size` from previous `step` detected. "
                    "Optimizer gradient normalizing factor will not change w.r.t new "
                    "batch_size when update_on_kvstore=True and when distributed kvstore "
                    "is used."
                )
        self._optimizer.rescale_grad = scale

    def step(self, batch_size, ignore_stale_grad=False):
        """One optimizer step: gradients are scaled by ``1/batch_size``, summed across contexts,
        and applied. A Parameter whose gradient no backward wrote since the last step raises
        unless ``ignore_stale_grad`` (then it is skipped)."""
        self._check_and_rescale_grad(self._scale / batch_size)
        self._ensure_kvstore()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Sums each Parameter's gradients across contexts (for a manual ``update``)."""
        self._ensure_kvstore()
        if self._kvstore and self._update_on_kvstore:
            raise AssertionError(
                "allreduce_grads() when parameters are updated on kvstore is not "
                "supported. Try setting `update_on_kvstore` to False when creating "
                "trainer."
            )
        self._allreduce_grads()

    def _allreduce_grads(self):
        if not self._kvstore:
            return
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            grads = param.list_grad()
            if self._update_on_kvstore:
                self._kvstore.push(i, grads, priority=-i)
            else:
                self._kvstore.pushpull(i, grads, out=grads, priority=-i)

    def update(self, batch_size, ignore_stale_grad=False):
        """Applies the optimizer to the (already reduced) gradients."""
        self._ensure_kvstore()
        if self._kvstore and self._update_on_kvstore:
            raise AssertionError(
                "update() when parameters are updated on kvstore is not supported. "
                "Try setting `update_on_kvstore` to False when creating trainer."
            )
        self._check_and_rescale_grad(self._scale / batch_size)
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad=False):
        on_kvstore = bool(self._kvstore and self._update_on_kvstore)
        per_device = [[] for _ in self._updaters]
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            arrays = param._check_and_get(param._data, list)
            if not ignore_stale_grad:
                for arr in arrays:
                    if not arr._fresh_grad:
                        raise UserWarning(_STALE_GRAD.format(name=param.name, ctx=arr.context))
            if on_kvstore:
                self._kvstore.pull(i, arrays, priority=-i)
                for arr in arrays:
                    arr._fresh_grad = False
                continue
            for todo, arr, grad in zip(per_device, arrays, param.list_grad(), strict=False):
                if not ignore_stale_grad or arr._fresh_grad:
                    todo.append((i, grad, arr))
                    arr._fresh_grad = False
        if on_kvstore:
            return
        for updater, todo in zip(self._updaters, per_device, strict=False):
            if todo:
                idx, grads, arrays = zip(*todo, strict=True)
                updater(list(idx), list(grads), list(arrays))

    # -- states -----------------------------------------------------------------------------------
    def save_states(self, fname):
        """Writes the optimizer and its states to ``fname``."""
        if self._optimizer is None:
            raise AssertionError("Trainer.save_states: no optimizer")
        self._ensure_kvstore()
        if self._update_on_kvstore:
            if self._params_to_init:
                raise AssertionError(
                    "Cannot save trainer states when some parameters are not yet "
                    "initialized in kvstore."
                )
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            with open(fname, "wb") as f:
                f.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Reads the optimizer and states written by :meth:`save_states`."""
        self._ensure_kvstore()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            with open(fname, "rb") as f:
                states = f.read()
            for updater in self._updaters:
                updater.set_states(states)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = dict(enumerate(self._params))
