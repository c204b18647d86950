"""NDArray methods written in Python: MXNet 1.x's storage and DLPack methods and its
basic-indexing contiguity helper. None is on a per-op hot path."""

from ..base import ValueError_
from . import _interop


def tostype(self, stype):
    """A copy with storage type ``stype``: 'default' (dense), 'csr' (2-D only) or 'row_sparse'."""
    from .sparse_storage import from_dense
    return from_dense(self, stype, "tostype")


def to_dlpack_for_read(self):
    """A DLPack capsule over a read-only snapshot of this array (see ``nd.to_dlpack_for_read``)."""
    return _interop.to_dlpack_for_read(self)


def to_dlpack_for_write(self):
    """A DLPack capsule sharing this array's buffer (see ``nd.to_dlpack_for_write``)."""
    return _interop.to_dlpack_for_write(self)


def _slice_geometry(key, shape):
    """(shape, strides in elements) of ``x[key]`` for a C-contiguous ``x`` of ``shape``, where
    ``key`` is an int, a slice or a tuple of them (the basic indexing MXNet's helper takes)."""
    key = key if isinstance(key, tuple) else (key,)
    if len(key) > len(shape):
        raise ValueError_(f"too many indices ({len(key)}) for an array of shape {shape}")
    strides, step = [], 1
    for n in reversed(shape):
        strides.insert(0, step)
        step *= n
    out_shape, out_strides = [], []
    for axis, n in enumerate(shape):
        k = key[axis] if axis < len(key) else slice(None)
        if isinstance(k, slice):
            start, stop, st = k.indices(n)
            out_shape.append(len(range(start, stop, st)))
            out_strides.append(strides[axis] * st)
        elif not isinstance(k, int):
            raise ValueError_(f"basic index entries must be ints or slices, got {k!r}")
    return out_shape, out_strides


def _basic_indexing_slice_is_contiguous(slc_key, shape):
    """Whether ``x[slc_key]`` of a C-contiguous array of ``shape`` is itself C-contiguous (so
    MXNet and ferrograd return a view that shares memory); NumPy's ``flags.contiguous`` rule:
    size-1 axes do not count, and an empty result is contiguous."""
    out_shape, out_strides = _slice_geometry(slc_key, shape)
    if 0 in out_shape:
        return True
    expected = 1
    for n, s in zip(reversed(out_shape), reversed(out_strides), strict=True):
        if n == 1:
            continue
        if s != expected:
            return False
        expected *= n
    return True


def split_v2(self, indices_or_sections, axis=0, squeeze_axis=False):
    """This array split along ``axis`` (see ``nd.split_v2``)."""
    from .ndarray import split_v2 as _f
    return _f(self, indices_or_sections, axis, squeeze_axis)


def _context_methods(cls):
    """``copyto(ctx)`` and ``as_in_context(ctx)`` returning arrays that report ``ctx``: MXNet
    treats each cpu(i) as its own device, so multi-context code (``split_and_load``, a Parameter
    on several contexts, Trainer aggregation) must see the slices on the contexts it asked for.
    Every cpu(i) shares one memory here, so the copy is the native one."""
    native_copyto = cls.copyto

    def copyto(self, other):
        out = native_copyto(self, other)
        if out is not other and (other.device_type, other.device_id) != ("cpu", 0):
            out._set_context(other)
        return out

    def as_in_context(self, context):
        """This array when it is already on ``context``, else a copy there (MXNet semantics)."""
        if self.context == context:
            return self
        return copyto(self, context)

    copyto.__doc__ = native_copyto.__doc__
    cls.copyto = copyto
    cls.as_in_context = as_in_context


def attach(cls):
    _context_methods(cls)
    cls.split_v2 = split_v2
    cls.tostype = tostype
    cls.to_dlpack_for_read = to_dlpack_for_read
    cls.to_dlpack_for_write = to_dlpack_for_write
    cls._basic_indexing_slice_is_contiguous = staticmethod(_basic_indexing_slice_is_contiguous)
    from . import sparse_grad
    sparse_grad.attach(cls)
    return cls
