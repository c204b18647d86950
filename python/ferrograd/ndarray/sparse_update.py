"""Optimizer updates with row_sparse gradients (MXNet's ``lazy_update``): only the rows the
gradient stores are updated, weights and states alike; other rows keep their values (no weight
decay, no momentum decay), as MXNet's sparse update operators do."""

import numpy as _np

from .._ferrograd import NDArray
from .sparse_storage import BaseSparseNDArray, RowSparseNDArray, from_dense

# Optimizers whose update MXNet makes lazy for a row_sparse gradient: always, or when their
# ``lazy_update`` is on.
_ALWAYS_LAZY = ("Ftrl", "AdaGrad")
_LAZY_WHEN_ASKED = ("SGD", "ccSGD", "Adam")


def is_lazy(opt, grad):
    """Whether ``opt`` updates only the stored rows of ``grad``."""
    if not isinstance(grad, RowSparseNDArray):
        return False
    name = type(opt).__name__
    return name in _ALWAYS_LAZY or (name in _LAZY_WHEN_ASKED and getattr(opt, "lazy_update",
                                                                         False))


def _dense(x):
    return x._dense() if isinstance(x, BaseSparseNDArray) else x


def _gather(state, rows):
    if isinstance(state, NDArray):
        return _dense(state)[rows]
    if isinstance(state, (tuple, list)):
        return type(state)(_gather(s, rows) for s in state)
    return state


def _scatter(target, part, rows):
    if isinstance(target, NDArray):
        NDArray.__setitem__(target, rows, part)
        refresh(target)
    elif isinstance(target, (tuple, list)):
        for t, p in zip(target, part, strict=True):
            _scatter(t, p, rows)


def refresh(x):
    """Re-derives a sparse array's components after its values were written natively."""
    if isinstance(x, BaseSparseNDArray):
        fresh = from_dense(x._dense(), x.stype)
        x._set_components(fresh.data, fresh._sp_aux)


def lazy_update(opt, index, weight, grad, state, update):
    """Runs ``update(index, weight_rows, grad_rows, state_rows)`` on the rows ``grad`` stores
    and writes the results back into those rows."""
    rows_np = grad.indices.asnumpy()
    if rows_np.size == 0:
        if hasattr(opt, "_update_count"):
            opt._update_count(index)
        return
    from .. import ndarray as nd
    rows = nd.array(rows_np.astype(_np.int64), dtype="int64")
    sub_weight = _gather(weight, rows)
    sub_state = _gather(state, rows)
    update(index, sub_weight, grad.data, sub_state)
    _scatter(weight, sub_weight, rows)
    _scatter(state, sub_state, rows)
