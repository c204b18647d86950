"""``ferrograd.npx``: NumPy-semantics switches and the neural-network ops of MXNet's ``mx.npx``.

``set_np()`` turns on NumPy shape semantics (0-d and zero-size arrays, ``x[0]`` and ``x.sum()``
of shape ``()``) and the NumPy-array flag reported by ``is_np_array()``; ``reset_np()`` restores
MXNet 1.x semantics. These switches live in :mod:`ferrograd.util` (see there for threads).
The ops (``relu``, ``batch_dot``, ``reshape``, ...) run the native ``nd`` operators on np arrays
and return np arrays; each exists once its ``nd`` operator is registered.
"""

import inspect as _inspect
import math as _math
import operator as _operator

from .. import ndarray as _nd
from ..base import ShapeError
from ..context import Context, cpu, cpu_pinned, current_context, gpu, num_gpus
from ..numpy._creation import _as_array
from ..numpy._math import _reshape_to
from ..numpy._ndarray import _reject_legacy, _wrap
from ..util import is_np_array, is_np_shape, reset_np, set_np, use_np


def waitall():
    """No-op: ferrograd executes synchronously."""


# npx name -> nd operator name. Ops missing from nd are left out until the operator library
# registers them.
_OPS = {
    "relu": "relu", "sigmoid": "sigmoid", "softmax": "softmax", "log_softmax": "log_softmax",
    "activation": "Activation", "batch_dot": "batch_dot", "pick": "pick", "one_hot": "one_hot",
    "topk": "topk", "fully_connected": "FullyConnected", "batch_norm": "BatchNorm",
    "convolution": "Convolution", "pooling": "Pooling", "dropout": "Dropout",
    "embedding": "Embedding", "layer_norm": "LayerNorm", "leaky_relu": "LeakyReLU",
}


def _check_arrays(values):
    for v in values:
        if isinstance(v, list | tuple):
            _check_arrays(v)
        else:
            _reject_legacy(v)


def _make_op(name, nd_name):
    nd_op = getattr(_nd, nd_name)

    def op(*args, **kwargs):
        _check_arrays(args)
        _check_arrays(kwargs.values())
        return _wrap(nd_op(*args, **kwargs))

    op.__name__ = op.__qualname__ = name
    try:
        op.__signature__ = _inspect.signature(nd_op)
    except (TypeError, ValueError):
        pass
    op.__doc__ = (f"``nd.{nd_name}`` on np arrays, returning np arrays.\n\n"
                  f"{getattr(nd_op, '__doc__', '') or ''}")
    return op


_AVAILABLE = {n: _make_op(n, m) for n, m in _OPS.items() if hasattr(_nd, m)}
globals().update(_AVAILABLE)


def _split_dim(d, a, b):
    """Sizes of the two axes a ``-6`` code splits an axis of size ``d`` into (one may be -1)."""
    if a == -1 and b == -1:
        raise ShapeError("npx.reshape: -6 cannot be followed by two -1")
    if a == -1:
        a = d // b if b and d % b == 0 else -2
    elif b == -1:
        b = d // a if a and d % a == 0 else -2
    if a < 0 or b < 0 or a * b != d:
        raise ShapeError(f"npx.reshape: cannot split an axis of size {d} with -6")
    return [a, b]


def _resolve(src, spec):
    """The output shape of ``npx.reshape`` codes ``spec`` applied to input shape ``src``.

    Codes: ``-1`` infer (once), ``-2`` copy this axis, ``-3`` drop this axis (its size must be 1),
    ``-4`` copy all remaining axes, ``-5`` merge two consecutive axes, ``-6 a b`` split this axis
    into ``a x b`` (one of them may be -1). Positive values are sizes; each consumes an axis.
    """
    out, i, j, infer = [], 0, 0, None

    def take(n):
        nonlocal i
        if i + n > len(src):
            raise ShapeError(f"npx.reshape: newshape {tuple(spec)} uses more axes than the input "
                             f"shape {tuple(src)} has")
        vals = src[i:i + n]
        i += n
        return vals

    while j < len(spec):
        code = spec[j]
        if code >= 0:
            out.append(code)
            i += 1
        elif code == -1:
            if infer is not None:
                raise ShapeError("npx.reshape: only one -1 is allowed")
            infer = len(out)
            out.append(1)
            i += 1
        elif code == -2:
            out += take(1)
        elif code == -3:
            if take(1)[0] != 1:
                raise ShapeError(f"npx.reshape: -3 drops an axis of size 1, but axis {i - 1} of "
                                 f"{tuple(src)} has size {src[i - 1]}")
        elif code == -4:
            out += take(len(src) - i)
        elif code == -5:
            out.append(_math.prod(take(2)))
        elif code == -6:
            if j + 2 >= len(spec):
                raise ShapeError("npx.reshape: -6 must be followed by two sizes")
            out += _split_dim(take(1)[0], spec[j + 1], spec[j + 2])
            j += 2
        else:
            raise ShapeError(f"npx.reshape: invalid code {code} in newshape {tuple(spec)}")
        j += 1
    size = _math.prod(src)
    if infer is not None:
        known = _math.prod(out)
        if known == 0 or size % known:
            raise ShapeError(f"npx.reshape: cannot infer -1 reshaping {tuple(src)} into "
                             f"{tuple(spec)}")
        out[infer] = size // known
    if _math.prod(out) != size:
        raise ShapeError(f"npx.reshape: cannot reshape {tuple(src)} into {tuple(spec)} "
                         f"(gives {tuple(out)})")
    return tuple(out)


def reshape(a, newshape, reverse=False, order="C"):
    """Reshapes ``a`` with MXNet's extended codes (see below); returns an np array.

    ``newshape`` holds sizes and the codes ``-1`` (infer), ``-2`` (copy the input axis), ``-3``
    (drop an input axis of size 1), ``-4`` (copy all remaining input axes), ``-5`` (merge two
    input axes) and ``-6, a, b`` (split an input axis into ``a x b``, one may be -1). With
    ``reverse=True`` the codes are matched from the right (not with ``-6``).
    """
    if order != "C":
        raise NotImplementedError("npx.reshape: only order='C' is supported")
    a = _as_array(a)
    spec = [newshape] if isinstance(newshape, int) else [_operator.index(d) for d in newshape]
    if reverse:
        if -6 in spec:
            raise NotImplementedError("npx.reshape: reverse=True with -6 is not supported")
        shape = _resolve(a.shape[::-1], spec[::-1])[::-1]
    else:
        shape = _resolve(a.shape, spec)
    return _reshape_to(a, shape)


__all__ = ["set_np", "reset_np", "is_np_array", "is_np_shape", "use_np", "waitall", "reshape",
           "Context", "cpu", "cpu_pinned", "gpu", "num_gpus", "current_context", *_AVAILABLE]
