"""Gradient storage types (``attach_grad(stype=...)``).

A ``row_sparse`` gradient is held natively as rows: the row numbers a backward reached and their
gradient rows, never a buffer of the array's whole shape (an Embedding over a large table costs
what the batch costs). ``x.grad`` builds a ``RowSparseNDArray`` from those components. A ``csr``
gradient keeps a dense native buffer and ``x.grad`` converts it, as MXNet's csr gradients hold
the same values."""

import weakref

from .. import _ferrograd as _native
from .._ferrograd import NDArray
from .sparse_storage import check_stype, from_dense, make_rsp

_native_attach_grad = NDArray.attach_grad
_native_grad = NDArray.grad

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


def attach(cls):
    cls.attach_grad = attach_grad
    cls.grad = property(grad, doc=_native_grad.__doc__)
