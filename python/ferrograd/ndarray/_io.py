"""``nd.save``, ``nd.load`` and ``nd.load_frombuffer``: MXNet 1.x's NDArray file format.

Files are byte-compatible with MXNet 1.x both ways (the format is described in the Rust module
``ferrograd::io``). Sparse arrays keep their storage type both ways: a ``CSRNDArray`` or
``RowSparseNDArray`` is written as MXNet's sparse record of its components (as stored,
explicitly stored zeros included) and loads back as one, in MXNet or here, without a dense copy
on either side. Arrays saved on a GPU load onto the CPU.
"""

import os

from .. import _ferrograd
from .._ferrograd import NDArray
from ..base import DTypeError


def _fname(fname, op):
    if isinstance(fname, os.PathLike):
        fname = os.fspath(fname)
    if not isinstance(fname, str):
        raise DTypeError(f"{op}: fname must be a str or path, got {type(fname).__name__}")
    return fname


def _check_arrays(values, op):
    for v in values:
        if not isinstance(v, NDArray):
            raise DTypeError(f"{op}: only NDArrays can be saved, got {type(v).__name__}")


def save(fname, data):
    """Saves an NDArray, a list of NDArrays or a dict of str to NDArray to ``fname``.

    The file is MXNet's binary NDArray format; ``load`` (here or in MXNet) gives back a list,
    or a dict for a dict. A single NDArray is saved as a list of one.
    """
    fname = _fname(fname, "nd.save")
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        keys = list(data.keys())
        if any(not isinstance(k, str) for k in keys):
            bad = next(k for k in keys if not isinstance(k, str))
            raise DTypeError(f"nd.save: dict keys must be str, got {bad!r}")
        arrays = list(data.values())
        _check_arrays(arrays, "nd.save")
        _ferrograd._nd_save(fname, [_item(a) for a in arrays], keys)
    elif isinstance(data, list):
        _check_arrays(data, "nd.save")
        _ferrograd._nd_save(fname, [_item(a) for a in data], None)
    else:
        raise ValueError("nd.save: data must be an NDArray, a list of NDArrays or a dict of "
                         f"str to NDArray, got {type(data).__name__}")


def _item(a):
    """What the native writer takes for ``a``: a dense array, or a sparse one's components."""
    stype = getattr(a, "stype", "default")
    if stype == "default":
        return a
    if not a._pending:
        # Dense values are the truth of a sparse array that has them (native in-place writes
        # change them, not the components): store their nonzero entries.
        from .. import autograd
        from .sparse_storage import from_dense
        with autograd.pause():
            a = from_dense(a._dense(), stype)
    return (stype, tuple(a.shape), a.data, list(a._sp_aux))


def _result(items, keys):
    from .sparse_storage import _CLASSES
    arrays = [a if isinstance(a, NDArray) else _CLASSES[a[0]]._lazy(a[2], a[3], a[1])
              for a in items]
    return arrays if keys is None else dict(zip(keys, arrays, strict=True))


def load(fname):
    """Loads a file written by ``save`` (or MXNet's ``nd.save``): a list, or a dict of arrays."""
    return _result(*_ferrograd._nd_load(_fname(fname, "nd.load")))


def load_frombuffer(buf):
    """Loads the contents of an NDArray file held in memory (``bytes`` or ``bytearray``)."""
    if isinstance(buf, str):
        buf = buf.encode("latin-1")
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise DTypeError(f"nd.load_frombuffer: buf must be bytes, got {type(buf).__name__}")
    return _result(*_ferrograd._nd_load_bytes(bytes(buf)))
