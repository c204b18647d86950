"""Zero-copy interop with NumPy and DLPack (``nd.from_numpy``, ``nd.from_dlpack``).

Imports share memory with their source, like ``torch.from_numpy``: writes through either side are
seen by the other. Exports (``x.to_numpy()``, ``np.asarray(x)``, ``memoryview(x)``,
``x.__dlpack__()``) are zero-copy **read-only** views of a *snapshot*: a later in-place write to
``x`` copies its buffer first (copy-on-write), so an exported array never changes because of
ferrograd. ``x.asnumpy()`` stays a private writable copy, as in MXNet.
"""

from .. import _ferrograd


def from_numpy(ndarray, zero_copy=True):
    """Returns an NDArray backed by the memory of the NumPy array ``ndarray``.

    With ``zero_copy=True`` (the default) no data is copied and the arrays share memory:

    - a write through the NDArray is seen by ``ndarray`` and vice versa (while the NDArray's
      buffer is not shared with a snapshot: an in-place write to an array whose buffer is also
      held by an export or a saved autograd tensor copies first and then no longer reaches
      ``ndarray``);
    - a read-only ``ndarray`` is shared for reading; the first write from ferrograd copies
      (``ndarray`` never changes);
    - strided views (transposes, slices with steps, negative strides) are shared as they are.

    Memory that cannot be shared is copied into a new contiguous buffer: misaligned or
    byte-swapped arrays, strides that are not a multiple of the item size, writable arrays whose
    elements overlap, and bool arrays holding bytes other than 0/1.

    ``zero_copy=False`` always copies (``nd.array(ndarray, dtype=ndarray.dtype)``).

    Unlike MXNet 1.x, the NumPy array is *not* made read-only, and non-C-contiguous arrays are
    accepted. Supported dtypes: float32, float64, float16, int32, int64, uint8, bool; other dtypes
    raise :class:`~ferrograd.base.DTypeError`.
    """
    return _ferrograd._from_numpy(ndarray, zero_copy)


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


__all__ = ["from_numpy", "from_dlpack", "to_dlpack_for_read"]
