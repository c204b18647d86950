"""Gradient storage types (``attach_grad(stype=...)``).

A ``row_sparse`` gradient is held natively as rows: the row numbers a backward reached and their
gradient rows, never a buffer of the array's whole shape (an Embedding over a large table costs
what the batch costs). ``x.grad`` builds a ``RowSparseNDArray`` from those components. A ``csr``
gradient keeps a dense native buffer and ``x.grad`` converts it, as MXNet's csr gradients hold
the same values.

A ``RowSparseNDArray`` given to ``autograd.mark_variables`` as a gradient buffer is *linked* to
its variable: the variable holds its gradient as rows, and after each backward that writes them
the buffer's components are replaced by those rows (MXNet writes into the buffer itself)."""

import weakref

import numpy as _np

from .. import _ferrograd as _native
from .._ferrograd import NDArray
from .sparse_storage import check_stype, from_dense, make_rsp

_native_attach_grad = NDArray.attach_grad
_native_grad = NDArray.grad
_native_backward = NDArray.backward

# id(buffer) -> (weak reference to the variable, weak reference to the buffer) for the
# row_sparse gradient buffers of linked variables.
_LINKED = {}

# id(array) -> (weak reference, gradient stype) for arrays whose gradient is sparse.
_GRAD_STYPES = {}


def _forget(key):
    return lambda _ref: _GRAD_STYPES.pop(key, None)


def _remember(x, stype):
    key = id(x)
    if stype == "default":
        _GRAD_STYPES.pop(key, None)
    else:
        _GRAD_STYPES[key] = (weakref.ref(x, _forget(key)), stype)


def attach_grad(self, grad_req="write", stype=None):
    """Allocates the gradient (see the native ``attach_grad``); ``stype`` is its storage type,
    'default', 'row_sparse' or 'csr' (default: the array's own)."""
    if stype is not None:
        check_stype(stype, "attach_grad")
    stype = stype or self.stype
    drop_links(self)
    _native_attach_grad(self, grad_req, "row_sparse" if stype == "row_sparse" else None)
    _remember(self, stype)


def mark_row_sparse(x, grad_req):
    """Marks ``x`` as a variable with a row-sparse gradient (no dense buffer)."""
    _native_attach_grad(x, grad_req, "row_sparse")
    _remember(x, "row_sparse")


def as_row_sparse(value, shape, dtype):
    """A native gradient value (``(data, indices)`` rows or a dense NDArray) as a
    ``RowSparseNDArray`` of ``shape``."""
    if isinstance(value, tuple):
        data, indices = value
        return make_rsp(data, indices, shape, dtype, "grad")
    return from_dense(value, "row_sparse", "grad")


def grad(self):
    """The gradient, in the gradient's storage type (``None`` when not attached)."""
    entry = _GRAD_STYPES.get(id(self))
    if entry is None or entry[0]() is not self:
        return _native_grad.__get__(self)
    if entry[1] == "row_sparse":
        value = _native._ag_grad_value(self)
        return None if value is None else as_row_sparse(value, self.shape, self.dtype)
    g = _native_grad.__get__(self)
    return None if g is None else from_dense(g, entry[1], "grad")


def clear_rows(x):
    """Drops the stored rows of ``x``'s row-sparse gradient; False if it has none."""
    return _native._ag_clear_rows(x)


def grad_stype(x):
    """The storage type ``x.grad`` has ('default' unless attached otherwise)."""
    entry = _GRAD_STYPES.get(id(x))
    return entry[1] if entry is not None and entry[0]() is x else "default"


def link_row_sparse(x, buffer, grad_req):
    """Marks ``x`` as a variable whose row-sparse gradient (held as rows) is copied into the
    ``RowSparseNDArray`` ``buffer`` after each backward that writes it."""
    if tuple(buffer.shape) != tuple(x.shape):
        from ..base import ShapeError
        raise ShapeError(f"mark_variables: gradient buffer has shape {tuple(buffer.shape)} but "
                         f"the variable has shape {tuple(x.shape)}")
    drop_links(x)
    mark_row_sparse(x, grad_req)
    key = id(buffer)
    _LINKED[key] = (weakref.ref(x), weakref.ref(buffer, _unlink(key)))
    refresh(x, buffer)


def drop_links(x):
    """Forgets the buffers linked to ``x`` (it is marked anew)."""
    for key, (xref, _) in list(_LINKED.items()):
        if xref() is x:
            _LINKED.pop(key, None)


def _unlink(key):
    return lambda _ref: _LINKED.pop(key, None)


def refresh(x, buffer):
    """Replaces ``buffer``'s components by the rows ``x``'s gradient holds now."""
    value = _native._ag_grad_value(x)
    if value is None:
        rows = make_rsp(_np.zeros((0, *x.shape[1:]), _np.dtype(x.dtype)), [], x.shape, x.dtype,
                        "grad")
    else:
        rows = as_row_sparse(value, x.shape, x.dtype)
    buffer._assign(rows)


def _linked_pairs():
    pairs = []
    for key, (xref, bref) in list(_LINKED.items()):
        x, buf = xref(), bref()
        if x is None or buf is None:
            _LINKED.pop(key, None)
        else:
            pairs.append((x, buf))
    return pairs


class refreshing:
    """Around a backward: afterwards, the linked buffers whose variables it wrote get the new
    rows. (Each variable's fresh-gradient flag is cleared first, to see which were written, and
    restored for the others.)"""

    def __enter__(self):
        self._pairs = _linked_pairs()
        self._fresh = [x._fresh_grad for x, _ in self._pairs]
        for x, _ in self._pairs:
            x._fresh_grad = False
        return self

    def __exit__(self, *exc):
        for (x, buf), was in zip(self._pairs, self._fresh, strict=True):
            if x._fresh_grad:
                if exc[0] is None:
                    refresh(x, buf)
            else:
                x._fresh_grad = was
        return False


def backward(self, out_grad=None, retain_graph=False, train_mode=True):
    """Computes the gradients of this array (see the native ``backward``)."""
    if not _LINKED:
        return _native_backward(self, out_grad, retain_graph, train_mode)
    with refreshing():
        _native_backward(self, out_grad, retain_graph, train_mode)


def attach(cls):
    cls.backward = backward
    cls.backward.__doc__ = _native_backward.__doc__
    cls.attach_grad = attach_grad
    cls.grad = property(grad, doc=_native_grad.__doc__)
