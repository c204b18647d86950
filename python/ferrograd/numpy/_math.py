"""Math, reductions and shape functions of ``ferrograd.np`` over the native operators.

Every function runs the same native ops as ``ferrograd.nd`` (so it is recorded and differentiable
under ``autograd.record()`` exactly like nd code) and returns np arrays. NumPy's dtype rules are
applied where MXNet's legacy ops differ: float-valued functions (``exp``, ``sqrt``, ``mean``, ...)
of integer arrays compute in float32, comparisons give bool arrays, ``argmax`` gives int64.
"""

import math as _math
import operator as _operator

import numpy as _onp

from .. import _ferrograd
from .. import ndarray as _nd
from .._ferrograd import NDArray
from ..base import ShapeError
from ._creation import _as_array, _dtype_name, _finish, array
from ._ndarray import _is_float_scalar, _reject_legacy, _to_float, _wrap, ndarray

# --- elementwise functions ------------------------------------------------------------------

# Results are float even for integer input (NumPy); the native ops would keep the int dtype.
_FLOAT_UNARY = ["exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "sin", "cos",
                "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
                "arccosh", "arctanh", "degrees", "radians"]
# Results keep the input dtype.
_SAME_UNARY = ["abs", "negative", "sign", "square", "floor", "ceil", "trunc", "rint", "fix",
               "reciprocal"]


def _unary(name, to_float):
    op = getattr(_nd, name)

    def fn(x, out=None):
        x = _as_array(x)
        return _finish(_wrap(op(_to_float(x) if to_float else x)), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Elementwise ``{name}`` of ``x`` (an np array or array-like), as in NumPy; "
                  "written into ``out`` when given.")
    return fn


def _binary_operands(x1, x2):
    """Both operands checked; array-likes become np arrays unless the other side is an array."""
    _reject_legacy(x1)
    _reject_legacy(x2)
    if not isinstance(x1, NDArray) and not isinstance(x2, NDArray):
        x1 = array(x1)
    return x1, x2


def _binary(name, op, doc):
    def fn(x1, x2, out=None):
        x1, x2 = _binary_operands(x1, x2)
        return _finish(op(x1, x2), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{doc} with NumPy broadcasting; either side may be a scalar."
    return fn


def _extremum(name, nd_op):
    def fn(x1, x2, out=None):
        x1, x2 = _binary_operands(x1, x2)
        if _is_float_scalar(x2) or _is_float_scalar(x1):
            x1, x2 = _to_float(x1), _to_float(x2)
        return _finish(_wrap(nd_op(x1, x2)), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} of ``x1`` and ``x2`` (broadcasting; scalars allowed)."
    return fn


maximum = _extremum("maximum", _nd.maximum)
minimum = _extremum("minimum", _nd.minimum)

_BINARY = {
    "add": (_operator.add, "``x1 + x2``"),
    "subtract": (_operator.sub, "``x1 - x2``"),
    "multiply": (_operator.mul, "``x1 * x2``"),
    "divide": (_operator.truediv, "``x1 / x2`` (true division: integers give float32)"),
    "true_divide": (_operator.truediv, "``x1 / x2`` (integers give float32)"),
    "floor_divide": (_operator.floordiv, "``x1 // x2``"),
    "mod": (_operator.mod, "``x1 % x2`` (the sign of the divisor)"),
    "remainder": (_operator.mod, "``x1 % x2`` (the sign of the divisor)"),
    "power": (_operator.pow, "``x1 ** x2``"),
    "equal": (_operator.eq, "``x1 == x2`` as a bool array"),
    "not_equal": (_operator.ne, "``x1 != x2`` as a bool array"),
    "less": (_operator.lt, "``x1 < x2`` as a bool array"),
    "less_equal": (_operator.le, "``x1 <= x2`` as a bool array"),
    "greater": (_operator.gt, "``x1 > x2`` as a bool array"),
    "greater_equal": (_operator.ge, "``x1 >= x2`` as a bool array"),
}

# --- reductions -----------------------------------------------------------------------------


def _reduce(op, a, axis, keepdims, out):
    if axis == ():  # NumPy: reducing over no axis is a copy (nd reads () as "all axes")
        return _finish(a.copy(), out)
    return _finish(_wrap(op(a, axis=axis, keepdims=keepdims)), out)


def sum(a, axis=None, dtype=None, out=None, keepdims=False):  # noqa: A001 - NumPy's name
    """Sum of elements over ``axis`` (all axes by default: a 0-d result under NumPy shapes)."""
    a = _as_array(a)
    if dtype is not None:
        a = a.astype(_dtype_name(dtype))
    return _reduce(_nd.sum, a, axis, keepdims, out)


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """Arithmetic mean over ``axis``; integer input gives float32 (not a truncated mean)."""
    a = _as_array(a)
    a = _to_float(a) if dtype is None else a.astype(_dtype_name(dtype))
    return _reduce(_nd.mean, a, axis, keepdims, out)


def prod(a, axis=None, dtype=None, out=None, keepdims=False):
    """Product of elements over ``axis``."""
    a = _as_array(a)
    if dtype is not None:
        a = a.astype(_dtype_name(dtype))
    return _reduce(_nd.prod, a, axis, keepdims, out)


def cumsum(a, axis=None, dtype=None, out=None):
    """Running sums along ``axis`` (over the flattened array when None), accumulated in ``dtype``
    (default: ``a``'s; bool gives int64), as MXNet's ``np.cumsum``; negative axes count from the
    end."""
    a = _as_array(a)
    kw = {} if dtype is None else {"dtype": _dtype_name(dtype)}
    return _finish(_wrap(_nd.cumsum(a, axis=axis, **kw)), out)


def max(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Maximum over ``axis``."""
    return _reduce(_nd.max, _as_array(a), axis, keepdims, out)


def min(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """Minimum over ``axis``."""
    return _reduce(_nd.min, _as_array(a), axis, keepdims, out)


amax = max
amin = min


def _arg(op, a, axis, out, keepdims):
    res = _wrap(op(_as_array(a), axis=axis, keepdims=keepdims))
    return _finish(res.astype("int64"), out)


def argmax(a, axis=None, out=None, keepdims=False):
    """Indices (int64) of the maxima along ``axis`` (of the flattened array when None)."""
    return _arg(_nd.argmax, a, axis, out, keepdims)


def argmin(a, axis=None, out=None, keepdims=False):
    """Indices (int64) of the minima along ``axis`` (of the flattened array when None)."""
    return _arg(_nd.argmin, a, axis, out, keepdims)


# --- linear algebra -------------------------------------------------------------------------


def dot(a, b, out=None):
    """NumPy's ``dot``: a product for 0-d input, the inner product of 1-D arrays, the matrix
    product of 2-D arrays, and for N-D arrays a sum over the last axis of ``a`` and the
    second-to-last axis of ``b``."""
    a, b = _as_array(a), _as_array(b)
    if a.ndim == 0 or b.ndim == 0:
        return _finish(a * b, out)
    if b.ndim > 2:  # move b's contracted axis (-2) to the front: nd.dot contracts b's axis 0
        k = b.ndim - 2
        b = b.transpose((k, *range(k), k + 1))
    return _finish(_wrap(_nd.dot(a, b)), out)


def matmul(a, b, out=None):
    """NumPy's ``matmul`` (``a @ b``): matrix products broadcast over leading batch axes.

    A 1-D operand is treated as a row (``a``) or column (``b``) vector whose added axis is removed
    from the result. 0-d operands raise ``ValueError``.
    """
    a, b = _as_array(a), _as_array(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError("matmul: input operand does not have enough dimensions (0-d)")
    if a.ndim <= 2 and b.ndim <= 2:
        return _finish(_wrap(_nd.dot(a, b)), out)
    a2 = a if a.ndim > 1 else a.reshape(1, a.shape[0])
    b2 = b if b.ndim > 1 else b.reshape(b.shape[0], 1)
    try:
        batch = _onp.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        raise ShapeError(f"matmul: batch axes of shapes {a.shape} and {b.shape} do not "
                         "broadcast") from None
    n = _math.prod(batch)
    a3 = broadcast_to(a2, batch + a2.shape[-2:]).reshape(n, *a2.shape[-2:])
    b3 = broadcast_to(b2, batch + b2.shape[-2:]).reshape(n, *b2.shape[-2:])
    res = _wrap(_nd.batch_dot(a3, b3)).reshape(batch + (a2.shape[-2], b2.shape[-1]))
    if a.ndim == 1:
        res = res.squeeze(axis=-2)
    if b.ndim == 1:
        res = res.squeeze(axis=-1)
    return _finish(res, out)


# --- shapes ---------------------------------------------------------------------------------


def _new_shape(size, newshape):
    """``newshape`` with its single ``-1`` resolved (NumPy rules), checked against ``size``."""
    shape = (newshape,) if isinstance(newshape, int | _onp.integer) else tuple(newshape)
    shape = tuple(_operator.index(d) for d in shape)
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in shape):
        raise ShapeError(f"reshape: invalid new shape {shape} (only one -1 is allowed and no "
                         "other negative value)")
    known = _math.prod(d for d in shape if d != -1)
    if unknown and known and size % known == 0:
        shape = shape[:unknown[0]] + (size // known,) + shape[unknown[0] + 1:]
    if _math.prod(shape) != size or (unknown and -1 in shape):
        raise ShapeError(f"cannot reshape array of size {size} into shape {tuple(newshape)}")
    return shape


def _reshape_to(a, shape):
    """``a`` reshaped to the fully known ``shape`` (differentiable; zero-size shapes allowed)."""
    if 0 in shape:  # the native op reads 0 as "copy this axis": build the empty array directly
        return _wrap(_ferrograd._full(shape, 0.0, _dtype_name(a.dtype)))
    return _wrap(NDArray.reshape(a, shape))


def reshape(a, newshape, order="C"):
    """``a`` with a new shape (same data); one axis may be ``-1`` (inferred)."""
    if order != "C":
        raise NotImplementedError("reshape: only order='C' is supported")
    a = _as_array(a)
    return _reshape_to(a, _new_shape(a.size, newshape))


def _reshape_method(self, *shape, order="C"):
    """``x.reshape(2, 3)`` or ``x.reshape((2, 3))`` with NumPy rules (one ``-1`` allowed)."""
    if len(shape) == 1 and not isinstance(shape[0], int | _onp.integer):
        shape = shape[0]
    return reshape(self, shape, order=order)


def ravel(a, order="C"):
    """The elements of ``a`` as a 1-D array."""
    return reshape(a, -1, order=order)


def transpose(a, axes=None):
    """``a`` with its axes permuted (reversed when ``axes`` is None)."""
    a = _as_array(a)
    return _wrap(a.transpose() if axes is None else a.transpose(tuple(axes)))


def expand_dims(a, axis):
    """``a`` with a new axis of size 1 inserted at ``axis``."""
    return _wrap(_nd.expand_dims(_as_array(a), axis=axis))


def squeeze(a, axis=None):
    """``a`` without its size-1 axes (only those in ``axis`` when given)."""
    return _wrap(_as_array(a).squeeze(axis=axis))


def broadcast_to(array, shape):  # noqa: A002 - NumPy's parameter name
    """``array`` broadcast to ``shape`` (NumPy rules)."""
    shape = (shape,) if isinstance(shape, int | _onp.integer) else tuple(shape)
    a = _as_array(array)
    if a.shape == shape:
        return a
    return _wrap(_nd.broadcast_to(a, shape=shape))


def _broadcast_all(*arrays):
    shape = _onp.broadcast_shapes(*(x.shape for x in arrays))
    return [broadcast_to(x, shape) for x in arrays]


# Functions over ops the operator library is still adding: defined only when nd has the op.

if hasattr(_nd, "concat"):

    def concatenate(seq, axis=0, out=None):
        """Joins arrays along an existing ``axis`` (flattened first when ``axis`` is None)."""
        arrays = [_as_array(x) for x in seq]
        if axis is None:
            arrays, axis = [ravel(x) for x in arrays], 0
        return _finish(_wrap(_nd.concat(*arrays, dim=axis)), out)

if hasattr(_nd, "stack"):

    def stack(arrays, axis=0, out=None):
        """Joins same-shape arrays along a new ``axis``."""
        arrays = [_as_array(x) for x in arrays]
        return _finish(_wrap(_nd.stack(*arrays, axis=axis)), out)

if hasattr(_nd, "where"):

    def where(condition, x, y):
        """Elements of ``x`` where ``condition`` is true, else of ``y`` (all three broadcast)."""
        condition = _as_array(condition)
        x, y = _as_array(x), _as_array(y)
        condition, x, y = _broadcast_all(condition, x, y)
        return _wrap(_nd.where(condition.astype(_dtype_name(x.dtype)), x, y))

if hasattr(_nd, "clip"):

    def clip(a, a_min, a_max, out=None):
        """``a`` with values limited to ``[a_min, a_max]`` (one bound may be None)."""
        if a_min is None and a_max is None:
            raise ValueError("clip: one of a_min or a_max must be given")
        lo = -_onp.inf if a_min is None else float(a_min)
        hi = _onp.inf if a_max is None else float(a_max)
        return _finish(_wrap(_nd.clip(_as_array(a), a_min=lo, a_max=hi)), out)


def _namespace():
    """The generated functions of this module, by name."""
    names = {}
    for name in _FLOAT_UNARY + _SAME_UNARY:
        if hasattr(_nd, name):
            names[name] = _unary(name, name in _FLOAT_UNARY)
    if "abs" in names:
        names["absolute"] = names["abs"]
    for name, (op, doc) in _BINARY.items():
        names[name] = _binary(name, op, doc)
    return names


_GENERATED = _namespace()
globals().update(_GENERATED)

# ``ndarray`` methods with NumPy signatures (``x.sum(axis=0)``, ``x.argmax()``, ...).
for _name, _fn in {"sum": sum, "mean": mean, "prod": prod, "max": max, "min": min,
                   "argmax": argmax, "argmin": argmin, "reshape": _reshape_method,
                   "ravel": ravel, "dot": dot}.items():
    setattr(ndarray, _name, _fn)
if "clip" in globals():
    ndarray.clip = globals()["clip"]
