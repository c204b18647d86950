"""Gradient storage types (``attach_grad(stype=...)``): the gradient buffer is dense natively;
``x.grad`` returns it in the storage type asked for (by default the array's own), as MXNet's
``row_sparse``/``csr`` gradients hold the same values."""

import weakref

from .._ferrograd import NDArray
from .sparse_storage import check_stype, from_dense

_native_attach_grad = NDArray.attach_grad
_native_grad = NDArray.grad

# id(array) -> (weak reference, gradient stype) for arrays whose gradient is sparse.
_GRAD_STYPES = {}


def _forget(key):
    return lambda _ref: _GRAD_STYPES.pop(key, None)


def attach_grad(self, grad_req="write", stype=None):
    """Allocates the gradient (see the native ``attach_grad``); ``stype`` is its storage type,
    'default', 'row_sparse' or 'csr' (default: the array's own)."""
    if stype is not None:
        check_stype(stype, "attach_grad")
    _native_attach_grad(self, grad_req)
    stype = stype or self.stype
    key = id(self)
    if stype == "default":
        _GRAD_STYPES.pop(key, None)
    else:
        _GRAD_STYPES[key] = (weakref.ref(self, _forget(key)), stype)


def grad(self):
    """The gradient buffer, in the gradient's storage type (``None`` when not attached)."""
    g = _native_grad.__get__(self)
    entry = _GRAD_STYPES.get(id(self))
    if g is None or entry is None or entry[0]() is not self:
        return g
    return from_dense(g, entry[1], "grad")


def grad_stype(x):
    """The storage type ``x.grad`` has ('default' unless attached otherwise)."""
    entry = _GRAD_STYPES.get(id(x))
    return entry[1] if entry is not None and entry[0]() is x else "default"


def attach(cls):
    cls.attach_grad = attach_grad
    cls.grad = property(grad, doc=_native_grad.__doc__)
