"""The ``ferrograd.np.ndarray`` class: a NumPy-flavoured view of the native NDArray.

An ``ndarray`` is a Python subclass of :class:`ferrograd.nd.NDArray`. It owns no data of its own:
every result of a native operation is re-wrapped with ``_ferrograd._view_as(ndarray, x)``, which
makes a new Python object over the same storage *and* the same autograd entry, so np arrays are
recorded and differentiated exactly like nd arrays. What this class changes is the NumPy-facing
behaviour (MXNet's ``mx.np.ndarray``): the repr, ``dtype`` as a ``numpy.dtype``, boolean
comparisons, true division of integers giving floats, NumPy shapes for methods such as
``flatten``, and a ``TypeError`` when an np array meets a legacy nd array.
"""

import re as _re

import numpy as _onp

from .. import _ferrograd
from .._ferrograd import NDArray

# MXNet's default float type for np arrays (NumPy would use float64).
_FLOAT = "float32"


def _view(cls, x):
    """``x`` as an instance of ``cls`` sharing its storage and autograd entry (native hook)."""
    return _ferrograd._view_as(cls, x)


def _wrap(x):
    """Re-wraps native results as np arrays: NDArrays, and NDArrays inside tuples/lists.

    Anything else (numbers, shapes, None) is returned unchanged, so the helper can be applied to
    the result of any native method.
    """
    if isinstance(x, ndarray):
        return x
    if isinstance(x, NDArray):
        return _view(ndarray, x)
    if isinstance(x, (tuple, list)):
        return type(x)(_wrap(v) for v in x)
    return x


def _reject_legacy(value):
    """Raises MXNet's TypeError when a legacy ``nd.NDArray`` is mixed with np arrays."""
    if isinstance(value, NDArray) and not isinstance(value, ndarray):
        raise TypeError(f"type {type(value)} not supported")
    return value


def _is_integral(x):
    """Whether ``x`` is an array of integer or bool dtype."""
    return isinstance(x, NDArray) and _onp.dtype(x.dtype).kind in "biu"


def _to_float(x):
    """Integer/bool arrays cast to float32; anything else unchanged."""
    return x.astype(_FLOAT) if _is_integral(x) else x


def _is_float_scalar(v):
    return isinstance(v, (float, _onp.floating))


def _binary(name, *, true_divide=False, compare=False):
    """An arithmetic or comparison dunder over the native one, with NumPy's dtype rules.

    An integer array meeting a Python float is computed in float32 (NumPy gives float, the native
    scalar ops keep the array's dtype); true division always computes in float; comparisons
    return bool arrays.
    """
    native = getattr(NDArray, name)

    def method(self, other):
        _reject_legacy(other)
        lhs = self
        if true_divide:
            lhs, other = _to_float(lhs), _to_float(other)
        elif _is_float_scalar(other):
            lhs = _to_float(lhs)
        res = native(lhs, other)
        if res is NotImplemented:
            return res
        res = _wrap(res)
        return res.astype("bool") if compare else res

    method.__name__ = method.__qualname__ = name
    method.__doc__ = getattr(native, "__doc__", None)
    return method


def _inplace(name):
    """An in-place dunder that refuses legacy nd operands and otherwise defers to the native one."""
    native = getattr(NDArray, name)

    def method(self, other):
        _reject_legacy(other)
        return native(self, other)

    method.__name__ = method.__qualname__ = name
    return method


def _unary(name):
    native = getattr(NDArray, name)

    def method(self):
        return _wrap(native(self))

    method.__name__ = method.__qualname__ = name
    return method


def _rebuild(data):
    """Unpickles an np array from its NumPy copy (the dtype is kept)."""
    return _wrap(_ferrograd._array(data, data.dtype.name))


class ndarray(NDArray):  # noqa: N801 - NumPy's class name
    """An n-dimensional array with NumPy semantics (MXNet's ``mx.np.ndarray``).

    Create one with :func:`ferrograd.np.array`, the other ``ferrograd.np`` creation functions, or
    ``nd_array.as_np_ndarray()``. It shares storage and autograd history with the native array it
    wraps; ``as_nd_ndarray()`` goes back to a legacy ``nd.NDArray`` view.
    """

    __slots__ = ()

    # --- NumPy-facing presentation ---------------------------------------------------------

    @property
    def dtype(self):
        """The element type as a ``numpy.dtype`` instance (``nd.NDArray.dtype`` is a type class)."""
        return _onp.dtype(super().dtype)

    def __repr__(self):
        text = repr(self.asnumpy())
        dtype = self.dtype
        if dtype == _onp.float32:
            return _re.sub(r",\s*dtype=float32\)$", ")", text)
        if dtype != _onp.bool_ and "dtype=" not in text:
            text = f"{text[:-1]}, dtype={dtype})"
        return text

    def __str__(self):
        return str(self.asnumpy())

    def __reduce__(self):
        return _rebuild, (self.asnumpy(),)

    __hash__ = NDArray.__hash__

    # --- autograd -------------------------------------------------------------------------

    def attach_grad(self, grad_req="write"):
        """Allocates a zero gradient buffer and makes this array a leaf of future recordings.

        ``grad_req`` is ``'write'``, ``'add'`` or ``'null'``; unlike ``nd.NDArray.attach_grad``
        there is no ``stype`` argument (np arrays are always dense).
        """
        return super().attach_grad(grad_req=grad_req)

    @property
    def grad(self):
        """The gradient buffer as an np array (a view: writes reach the buffer), or None."""
        return _wrap(super().grad)

    def detach(self):
        """A new np array sharing memory with this one but with no autograd history."""
        return _wrap(super().detach())

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        """Back-propagates from this array into the attached gradient buffers."""
        _reject_legacy(out_grad)
        return super().backward(out_grad=out_grad, retain_graph=retain_graph,
                                train_mode=train_mode)

    # --- conversions ----------------------------------------------------------------------

    def as_nd_ndarray(self):
        """A legacy ``nd.NDArray`` view of this array (same storage and autograd entry)."""
        return _view(NDArray, self)

    def as_np_ndarray(self):
        """This array itself (it already is an np array)."""
        return self

    def as_in_ctx(self, ctx):
        """The array on ``ctx`` (every ferrograd array lives on the CPU: returns ``self``)."""
        return self.as_in_context(ctx)

    def copyto(self, other):
        """Copies into the np array ``other`` (returned), or to a context (a new np array)."""
        if isinstance(other, NDArray) and not isinstance(other, ndarray):
            raise TypeError(f"copyto does not support type {type(other)}")
        return _wrap(super().copyto(other))

    @property
    def T(self):  # noqa: N802 - NumPy's name
        """The transpose (axes reversed)."""
        return _wrap(super().T)

    def flatten(self, order="C"):
        """A 1-D copy of the array (NumPy semantics; ``nd.NDArray.flatten`` keeps axis 0)."""
        if order != "C":
            raise NotImplementedError("flatten: only order='C' is supported")
        return self.reshape(-1)

    # --- operators ------------------------------------------------------------------------

    __add__ = _binary("__add__")
    __radd__ = _binary("__radd__")
    __sub__ = _binary("__sub__")
    __rsub__ = _binary("__rsub__")
    __mul__ = _binary("__mul__")
    __rmul__ = _binary("__rmul__")
    __truediv__ = _binary("__truediv__", true_divide=True)
    __rtruediv__ = _binary("__rtruediv__", true_divide=True)
    __floordiv__ = _binary("__floordiv__")
    __rfloordiv__ = _binary("__rfloordiv__")
    __mod__ = _binary("__mod__")
    __rmod__ = _binary("__rmod__")
    __pow__ = _binary("__pow__")
    __rpow__ = _binary("__rpow__")
    __matmul__ = _binary("__matmul__")
    __rmatmul__ = _binary("__rmatmul__")
    __eq__ = _binary("__eq__", compare=True)
    __ne__ = _binary("__ne__", compare=True)
    __lt__ = _binary("__lt__", compare=True)
    __le__ = _binary("__le__", compare=True)
    __gt__ = _binary("__gt__", compare=True)
    __ge__ = _binary("__ge__", compare=True)
    __iadd__ = _inplace("__iadd__")
    __isub__ = _inplace("__isub__")
    __imul__ = _inplace("__imul__")
    __itruediv__ = _inplace("__itruediv__")
    __ifloordiv__ = _inplace("__ifloordiv__")
    __imod__ = _inplace("__imod__")
    __ipow__ = _inplace("__ipow__")
    __neg__ = _unary("__neg__")
    __pos__ = _unary("__pos__")
    __abs__ = _unary("__abs__")

    def __getitem__(self, key):
        return _wrap(super().__getitem__(key))

    def __setitem__(self, key, value):
        _reject_legacy(value)
        super().__setitem__(key, value)


# Native methods that return arrays get a re-wrapping twin; these are handled above, in
# ferrograd.np (NumPy-signature methods such as sum/argmax/reshape), or return no arrays.
_NOT_WRAPPED = {"asnumpy", "asscalar", "item", "tolist", "to_numpy", "wait_to_read",
                "wait_to_write", "as_nd_ndarray", "as_np_ndarray", "attach_grad", "backward",
                "detach", "copyto", "flatten", "as_in_ctx"}


def _method(name, native):
    def method(self, *args, **kwargs):
        return _wrap(native(self, *args, **kwargs))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = getattr(native, "__doc__", None)
    return method


def _wrap_native_methods():
    """Adds a re-wrapping method to ``ndarray`` for every public native/fluent NDArray method."""
    for name in dir(NDArray):
        if name.startswith("_") or name in _NOT_WRAPPED or name in ndarray.__dict__:
            continue
        native = getattr(NDArray, name)
        if callable(native):
            setattr(ndarray, name, _method(name, native))


_wrap_native_methods()


def _as_np_ndarray(self):
    """An np array view of this array (same storage and autograd entry)."""
    return _view(ndarray, self)


NDArray.as_np_ndarray = _as_np_ndarray
