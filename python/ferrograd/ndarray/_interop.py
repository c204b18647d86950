"""Zero-copy interop with NumPy and DLPack (``nd.from_numpy``, ``nd.from_dlpack``).

Imports share memory with their source, like ``torch.from_numpy``: writes through either side are
seen by the other. Exports (``x.to_numpy()``, ``np.asarray(x)``, ``memoryview(x)``,
``x.__dlpack__()``) are zero-copy **read-only** views of a *snapshot*: a later in-place write to
``x`` copies its buffer first (copy-on-write), so an exported array never changes because of
ferrograd. ``x.asnumpy()`` stays a private writable copy, as in MXNet.
"""

import weakref as _weakref

import numpy as _np

from .. import _ferrograd

# Arrays that from_numpy made read-only (by id; entries vanish with the array). Importing one of
# them again shares it writable, as the first import did: the lock only keeps NumPy from writing.
_locked = _weakref.WeakValueDictionary()


def from_numpy(ndarray, zero_copy=True):
    """Returns an NDArray backed by the memory of the NumPy array ``ndarray``.

    With ``zero_copy=True`` (the default) no data is copied and the arrays share memory, as in
    MXNet 1.x:

    - ``ndarray`` must be C-contiguous (else :class:`ValueError`; pass ``zero_copy=False`` or
      ``np.ascontiguousarray(ndarray)``);
    - ``ndarray`` is made read-only, so that it changes only through the NDArray: a write
      through the NDArray is seen by ``ndarray`` (while the NDArray's buffer is not shared with
      a snapshot: an in-place write to an array whose buffer is also held by an export or a
      saved autograd tensor copies first and then no longer reaches ``ndarray``);
    - an already read-only ``ndarray`` is shared for reading; the first write from ferrograd
      copies (``ndarray`` never changes).

    Memory that cannot be shared is copied into a new buffer: misaligned or byte-swapped arrays
    and bool arrays holding bytes other than 0/1.

    ``zero_copy=False`` always copies (``nd.array(ndarray, dtype=ndarray.dtype)``) and accepts
    any layout. Supported dtypes: float32, float64, float16, int32, int64, int8, uint8, bool;
    other dtypes raise :class:`~ferrograd.base.DTypeError`.
    """
    if not zero_copy:
        return _ferrograd._from_numpy(ndarray, False)
    if isinstance(ndarray, _np.ndarray) and not ndarray.flags["C_CONTIGUOUS"]:
        raise ValueError(
            f"from_numpy: zero_copy=True needs a C-contiguous array (got strides "
            f"{ndarray.strides} for shape {ndarray.shape}); pass np.ascontiguousarray(...) or "
            "zero_copy=False")
    if not isinstance(ndarray, _np.ndarray):
        return _ferrograd._from_numpy(ndarray, True)  # raises the TypeError
    relock = _locked.get(id(ndarray)) is ndarray
    if relock:
        ndarray.flags.writeable = True
    try:
        res = _ferrograd._from_numpy(ndarray, True)
    finally:
        if ndarray.flags.writeable:
            ndarray.flags.writeable = False
            _locked[id(ndarray)] = ndarray
    return res


def from_dlpack(dlpack):
    """Returns an NDArray sharing the memory of a DLPack tensor.

    ``dlpack`` is any object with ``__dlpack__`` (NumPy arrays, PyTorch CPU tensors, ferrograd
    NDArrays) or a DLPack capsule, which is consumed (a capsule can be imported once). Only CPU
    tensors are accepted. A tensor flagged read-only (DLPack 1.0) is copied on ferrograd's first
    write; strides are respected, and memory that cannot be described in whole elements is copied.
    """
    return _ferrograd._from_dlpack(dlpack)


def to_dlpack_for_read(data):
    """A DLPack capsule over a read-only snapshot of ``data`` (MXNet's ``nd.to_dlpack_for_read``).

    The legacy capsule format has no read-only flag: consumers must not write to it.
    """
    return data.__dlpack__()


def to_dlpack_for_write(data):
    """A DLPack capsule over ``data``'s memory (MXNet's ``nd.to_dlpack_for_write``).

    The capsule shares the buffer ``data`` holds now, so a consumer's writes are seen by
    ``data`` until ferrograd next writes to ``data`` while the capsule's tensor is alive: that
    write copies the buffer first (copy-on-write), after which the two no longer share memory.
    """
    return data.__dlpack__()


__all__ = ["from_numpy", "from_dlpack", "to_dlpack_for_read", "to_dlpack_for_write"]
