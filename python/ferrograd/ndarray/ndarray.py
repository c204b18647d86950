"""``mx.nd.ndarray``: the NDArray class and MXNet 1.x's legacy array helpers.

The helpers (``concatenate``, ``moveaxis``, ``onehot_encode``, ``fill_element_0index``, the DLPack
functions) predate the operator versions (``concat``, ``transpose``, ``one_hot``, ...) and are kept
so that old MXNet code runs unchanged; they are built from those operators.
"""

import numpy as _np

from .._ferrograd import NDArray
from ..base import DTypeError, MXNetError, ShapeError, ValueError_
from ._interop import from_dlpack, from_numpy, to_dlpack_for_read, to_dlpack_for_write

py_slice = slice  # MXNet's name for the builtin (``from mxnet.ndarray.ndarray import py_slice``)

# MXNet's storage-type codes (the ids its files and C API use). ferrograd stores every array
# densely ('default'); the sparse codes name what MXNet files may contain.
_STORAGE_TYPE_STR_TO_ID = {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}


def _ops():
    from . import _registry
    return _registry.make_ops()


def concatenate(arrays, axis=0, always_copy=True):
    """Joins a list of arrays along ``axis`` (the legacy form of ``nd.concat``).

    All arrays must share dtype and every axis size except ``axis``. With ``always_copy=False``
    a list of one array returns that array itself.
    """
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise ValueError_("concatenate: arrays must be a non-empty list of NDArrays")
    if not all(isinstance(a, NDArray) for a in arrays):
        raise ValueError_("concatenate: every element of arrays must be an NDArray, got "
                          + ", ".join(type(a).__name__ for a in arrays))
    if not always_copy and len(arrays) == 1:
        return arrays[0]
    first = arrays[0]
    ax = _normalize_axes(axis, first.ndim, "concatenate", "axis")[0]
    for a in arrays[1:]:
        if a.dtype != first.dtype:
            raise MXNetError(f"concatenate: dtypes differ ({_np.dtype(first.dtype).name} and "
                             f"{_np.dtype(a.dtype).name})")
        if a.ndim != first.ndim or any(
                a.shape[d] != first.shape[d] for d in range(first.ndim) if d != ax):
            raise ShapeError(f"concatenate: shapes {first.shape} and {a.shape} differ outside "
                             f"axis {axis}")
    if len(arrays) == 1:
        return first.copy()
    return _ops()["concat"](*arrays, dim=ax)


def _normalize_axes(axes, ndim, op, name):
    """``axes`` (an int or a sequence of ints) as non-negative axis numbers below ``ndim``."""
    seq = [axes] if isinstance(axes, (int, _np.integer)) else list(axes)
    out = []
    for a in seq:
        if not isinstance(a, (int, _np.integer)):
            raise ValueError_(f"{op}: {name} must be an int or a sequence of ints, got {axes!r}")
        if not -ndim <= a < ndim:
            raise ValueError_(f"{op}: {name} {a} is out of range for an array with {ndim} "
                              "dimension(s)")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError_(f"{op}: repeated axis in {name} {axes!r}")
    return out


def moveaxis(tensor, source, destination):
    """Moves axes ``source`` to positions ``destination`` (ints or equal-length sequences); the
    other axes keep their order. Returns a new array, as ``nd.transpose`` does."""
    src = _normalize_axes(source, tensor.ndim, "moveaxis", "source")
    dst = _normalize_axes(destination, tensor.ndim, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError_(f"moveaxis: source {source!r} and destination {destination!r} must "
                          "have the same number of elements")
    order = [d for d in range(tensor.ndim) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return _ops()["transpose"](tensor, axes=tuple(order))


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Splits ``ary`` along ``axis`` into equal sections (an int, which must divide the axis) or
    at the given indices (a tuple, as ``numpy.split``); a list of arrays, or one array when there
    is only one piece. One ``_split_v2`` op: its gradient joins the parts' gradients."""
    ax = _normalize_axes(axis, ary.ndim, "split_v2", "axis")[0]
    n = ary.shape[ax]
    if isinstance(indices_or_sections, (int, _np.integer)):
        k = int(indices_or_sections)
        if k <= 0 or n % k:
            raise ValueError_(f"split_v2: {k} sections do not divide axis {axis} of size {n} "
                              "equally")
        indices = [i * (n // k) for i in range(k)]
    else:
        indices = [0, *[int(i) for i in indices_or_sections]]
    parts = _ops()["_split_v2"](ary, indices=tuple(indices), axis=ax, squeeze_axis=squeeze_axis)
    if isinstance(parts, NDArray):
        return parts
    return parts[0] if len(parts) == 1 else list(parts)


def onehot_encode(indices, out):
    """Writes the one-hot rows of the 1-D ``indices`` into the 2-D ``out`` and returns ``out``
    (deprecated in MXNet; use ``nd.one_hot``)."""
    if indices.ndim != 1 or out.ndim != 2 or out.shape[0] != indices.shape[0]:
        raise ShapeError(f"onehot_encode: indices must be 1-D and out 2-D with one row per index, "
                         f"got indices {indices.shape} and out {out.shape}")
    out[:] = _ops()["one_hot"](indices, depth=out.shape[1], dtype=_np.dtype(out.dtype).name)
    return out


def reset_arrays(*data, num_arrays=None):
    """Sets every array of ``data`` to zero in place (MXNet's multi-array gradient reset);
    ``num_arrays`` must equal the number of arrays. Returns ``[]`` as MXNet does."""
    if num_arrays is None:
        raise MXNetError("reset_arrays: required parameter num_arrays is missing")
    if int(num_arrays) != len(data):
        raise MXNetError(f"reset_arrays: num_arrays={num_arrays} but {len(data)} arrays were "
                         "given")
    for i, arr in enumerate(data):
        if not isinstance(arr, NDArray):
            raise DTypeError(f"reset_arrays: argument {i} must be an NDArray, got "
                             f"{type(arr).__name__}")
        if not _np.issubdtype(arr.dtype, _np.floating):
            raise DTypeError(f"reset_arrays: only floating point arrays can be reset, argument "
                             f"{i} has dtype {_np.dtype(arr.dtype).name}")
    for arr in data:
        arr[:] = 0
    return []


def fill_element_0index(lhs, mhs, rhs, out=None):
    """A copy of the 2-D ``lhs`` with ``lhs[i, rhs[i]] = mhs[i]`` for every row ``i`` (written
    into ``out`` when given)."""
    if lhs.ndim != 2 or mhs.shape != (lhs.shape[0],) or rhs.shape != (lhs.shape[0],):
        raise ShapeError(f"fill_element_0index: lhs must be 2-D and mhs, rhs 1-D with one entry "
                         f"per row, got lhs {lhs.shape}, mhs {mhs.shape}, rhs {rhs.shape}")
    res = lhs.copy()
    rows = _np.arange(lhs.shape[0])
    cols = rhs.asnumpy().astype(_np.int64)
    if ((cols < 0) | (cols >= lhs.shape[1])).any():
        raise ValueError_(f"fill_element_0index: indices in rhs must lie in [0, {lhs.shape[1]}), "
                          f"got {cols.min()}..{cols.max()}")
    res[rows, cols] = mhs
    if out is not None:
        out[:] = res
        return out
    return res


__all__ = ["NDArray", "split_v2",
           "concatenate", "moveaxis", "onehot_encode",
           "fill_element_0index", "from_numpy", "from_dlpack", "to_dlpack_for_read",
           "to_dlpack_for_write", "py_slice"]
