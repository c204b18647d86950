"""The ``Optimizer`` base class, its registry, and ``Updater``/``get_updater`` (MXNet 1.9.1's
``mxnet.optimizer``).

Optimizers only orchestrate: learning rates, weight decays, update counts, states. The update
arithmetic runs in the fused Rust ops (``sgd_update``, ``adam_update``, ...), called through
:func:`fused` so that the weight is updated in place in one pass over memory.
"""

import pickle
import warnings

import numpy as np

from .. import ndarray as nd
from .._ferrograd import _update_inplace

__all__ = ["Optimizer", "Updater", "create", "get_updater", "register", "fused"]


def fused(op, arrays, **params):
    """Runs the fused update op ``op`` over ``arrays`` (weight, grad, states...) writing the
    weight in place, as ``op(*arrays, out=weight, **params)`` does, without an output copy."""
    _update_inplace(op, list(arrays), **{k: v for k, v in params.items() if v is not None})


def _is_fp16(weight):
    return weight.dtype == np.float16


class Optimizer:
    """Base class of the optimizers: learning rate (or ``lr_scheduler``), weight decay,
    ``rescale_grad``, ``clip_gradient``, per-parameter ``lr_mult``/``wd_mult``, update counts and
    multi-precision (float32 master copies of float16 weights)."""

    opt_registry = {}

    def __init__(
        self,
        rescale_grad=1.0,
        param_idx2name=None,
        wd=0.0,
        clip_gradient=None,
        learning_rate=None,
        lr_scheduler=None,
        sym=None,
        begin_num_update=0,
        multi_precision=False,
        param_dict=None,
    ):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None:
            if lr_scheduler.base_lr != learning_rate:
                print(
                    UserWarning(
                        "learning rate from ``lr_scheduler`` has been overwritten by "
                        "``learning_rate`` in optimizer."
                    )
                )
                lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise AssertionError("param_idx2name should be a dict of param indexes to names.")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # -- registry ---------------------------------------------------------------------------
    @staticmethod
    def register(klass):
        """Registers an optimizer class under its lower-cased name (a decorator)."""
        name = klass.__name__.lower()
        if name in Optimizer.opt_registry:
            old = Optimizer.opt_registry[name]
            warnings.warn(
                f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is overriding "
                f"existing optimizer {old.__module__}.{old.__name__}",
                stacklevel=2,
            )
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """An optimizer by registered name (case-insensitive), built with ``kwargs``."""
        if name.lower() in Optimizer.opt_registry:
            return Optimizer.opt_registry[name.lower()](**kwargs)
        known = ", ".join(sorted(Optimizer.opt_registry))
        raise ValueError(f"Cannot find optimizer {name}; known optimizers: {known}")

    # -- learning rate ----------------------------------------------------------------------
    @property
    def learning_rate(self):
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        """Sets the learning rate (not allowed when an ``lr_scheduler`` drives it)."""
        if self.lr_scheduler is not None:
            raise UserWarning(
                "LRScheduler of the optimizer has already been defined. Note that "
                "set_learning_rate can mutate the value of the learning rate of the "
                "optimizer only when the LRScheduler of the optimizer is undefined."
            )
        self.lr = lr

    def set_lr_scale(self, args_lrscale):  # noqa: ARG002 - deprecated in MXNet too
        """Deprecated: use :meth:`set_lr_mult`."""
        raise DeprecationWarning("set_lr_scale is deprecated; use set_lr_mult")

    def _mults_from_sym(self, key):
        found = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and key in attr[name]:
                    found[name] = float(attr[name][key])
        return found

    def set_lr_mult(self, args_lr_mult):
        """Per-parameter learning-rate multipliers (by index or name); symbol attributes
        ``__lr_mult__`` count too."""
        self.lr_mult = self._mults_from_sym("__lr_mult__")
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Per-parameter weight-decay multipliers; with ``param_idx2name``, names not ending in
        ``_weight`` or ``_gamma`` get 0 (biases are not decayed)."""
        self.wd_mult = {
            n: 0.0
            for n in self.idx2name.values()
            if not (n.endswith("_weight") or n.endswith("_gamma"))
        }
        self.wd_mult.update(self._mults_from_sym("__wd_mult__"))
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id):
        self._index_update_count = self._all_index_update_counts.setdefault(device_id, {})

    def _update_count(self, index):
        for idx in index if isinstance(index, (list, tuple)) else [index]:
            count = self._index_update_count.get(idx, self.begin_num_update) + 1
            self._index_update_count[idx] = count
            self.num_update = max(count, self.num_update)

    def _mult(self, index, attr, table):
        if index in self.param_dict:
            return getattr(self.param_dict[index], attr)
        if index in table:
            return table[index]
        if index in self.idx2name:
            return table.get(self.idx2name[index], 1.0)
        return 1.0

    def _get_lrs(self, indices):
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return [lr * self._mult(i, "lr_mult", self.lr_mult) for i in indices]

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        return [self.wd * self._mult(i, "wd_mult", self.wd_mult) for i in indices]

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    def _grad_params(self):
        """``rescale_grad`` and ``clip_gradient`` as the fused ops take them."""
        clip = self.clip_gradient
        return {"rescale_grad": self.rescale_grad, "clip_gradient": -1.0 if clip is None else clip}

    # -- states and updates -------------------------------------------------------------------
    def create_state(self, index, weight):
        """The optimizer state for one weight (``None`` when stateless)."""
        return None

    def create_state_multi_precision(self, index, weight):
        """Like :meth:`create_state`, plus a float32 master copy for a float16 weight when
        ``multi_precision``: ``(weight32, state)``."""
        if self.multi_precision and _is_fp16(weight):
            master = weight.astype(np.float32)
            return (master,) + (self.create_state(index, master),)
        if _is_fp16(weight) and not self.multi_precision:
            warnings.warn(
                "Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                "convergence. Consider using multi_precision=True option of the optimizer",
                stacklevel=2,
            )
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state):
        """Updates ``weight`` in place from ``grad`` and ``state``."""
        raise NotImplementedError()

    def update_multi_precision(self, index, weight, grad, state):
        """:meth:`update`, through the float32 master copy for float16 weights when
        ``multi_precision``; lists of indices/weights/grads/states update each in turn."""
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state, strict=False):
                self.update_multi_precision(i, w, g, s)
            return
        from ..ndarray import sparse_update
        if sparse_update.is_lazy(self, grad):  # a row_sparse gradient: update its rows only
            sparse_update.lazy_update(self, index, weight, grad, state, self._update_dense)
            return
        self._update_dense(index, weight, grad, state)
        sparse_update.refresh(weight)

    def _update_dense(self, index, weight, grad, state):
        if self.multi_precision and _is_fp16(weight):
            master, inner = state[0], state[1]
            self.update(index, master, grad.astype(np.float32), inner)
            weight[:] = master.astype(weight.dtype)
        else:
            self.update(index, weight, grad, state)

    # -- pickling (Trainer.save_states) ----------------------------------------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("param_dict", None)
        return state

    def __setstate__(self, state):
        self.__dict__ = state
        self.param_dict = {}


register = Optimizer.register
create = Optimizer.create_optimizer


class Updater:
    """Applies an optimizer to (index, grad, weight) triples, creating each index's state on
    first use; :meth:`get_states`/:meth:`set_states` pickle the states (and optionally the
    optimizer) as MXNet does."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        self.aggregate_updates = optimizer.aggregate_num > 1
        # The device whose copies this updater serves (gluon.Trainer sets it: arrays on cpu(1)
        # report cpu(0) in ferrograd, so their context cannot tell the devices apart).
        self._device_id = None

    def __call__(self, index, grad, weight):
        if not isinstance(index, (list, tuple)):
            index, grad, weight = [index], [grad], [weight]
        for i, g, w in zip(index, grad, weight, strict=False):
            if i not in self.states:
                self.states[i] = self.optimizer.create_state_multi_precision(i, w)
                self.states_synced[i] = True
            self.states_synced[i] = True
            # Update counts are kept per device, so copies on several devices count one step.
            device = self._device_id if self._device_id is not None else w.context.device_id
            self.optimizer._set_current_context(device)
            self.optimizer.update_multi_precision(i, w, g, self.states[i])

    def sync_state_context(self, state, context):  # noqa: ARG002 - every array is on the CPU
        """States live on the CPU like every array: nothing to move."""
        return state

    def set_states(self, states):
        """Loads states pickled by :meth:`get_states` (with or without the optimizer)."""
        states = pickle.loads(states)
        if isinstance(states, tuple) and len(states) == 2:
            self.states, self.optimizer = states
        else:
            self.states = states
        self.states_synced = dict.fromkeys(self.states.keys(), False)

    def get_states(self, dump_optimizer=False):
        """The states pickled (``(states, optimizer)`` with ``dump_optimizer``)."""
        return pickle.dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer):
    """An :class:`Updater` for ``optimizer``."""
    return Updater(optimizer)


def zeros_like(weight, dtype=None):
    """A zero state shaped like ``weight``."""
    return nd.zeros(weight.shape, dtype=weight.dtype if dtype is None else dtype)
