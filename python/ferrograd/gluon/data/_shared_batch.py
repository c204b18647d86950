"""Moving batches from DataLoader worker processes to the main process. An array of at least
``INLINE_BYTES`` goes through POSIX shared memory: the worker writes it into a fresh
``multiprocessing.shared_memory`` segment and sends only its name, shape and dtype; the main process
maps the segment, unlinks it at once (the mapping outlives the name) and wraps it as an NDArray
without copying. A smaller array travels in the pipe itself (``InlineArray``): copying a few
kilobytes costs less than creating, mapping and unlinking a segment."""

import mmap
import os
from multiprocessing import resource_tracker, shared_memory

import numpy as np

from ... import _ferrograd
from ... import ndarray as nd
from ... import numpy as _mx_np

try:
    import _posixshmem
except ImportError:  # not POSIX: batches travel pickled
    _posixshmem = None

AVAILABLE = _posixshmem is not None

# Below this size an array is pickled into the pipe instead of a shared segment.
INLINE_BYTES = 1 << 18


class InlineArray:
    """A small array sent in the pipe (NumPy data; ``np_array``: comes back as ``mx.np``)."""

    __slots__ = ("array", "np_array")

    def __init__(self, array, np_array=False):
        self.array = array
        self.np_array = np_array

    def __getstate__(self):
        return (self.array, self.np_array)

    def __setstate__(self, state):
        self.array, self.np_array = state

    def wrap(self):
        return wrap(self.array, self.np_array)


def wrap(array, np_array, zero_copy=True):
    """Main side: an NDArray (``mx.np`` if ``np_array``) of a NumPy array only this process
    holds (fresh from the pipe, or over a mapping nobody else has): shared as is, without
    ``from_numpy``'s read-only lock and its bookkeeping, or copied with ``zero_copy=False``."""
    out = _ferrograd._from_numpy(array, zero_copy)
    return out.as_np_ndarray() if np_array else out


class SharedArray:
    """Handle of an array waiting in a shared memory segment (what a worker sends back)."""

    __slots__ = ("name", "shape", "dtype", "np_array")

    def __init__(self, name, shape, dtype, np_array=False):
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.np_array = np_array  # an ``mx.np.ndarray`` comes back as one

    def __getstate__(self):
        return (self.name, self.shape, self.dtype, self.np_array)

    def __setstate__(self, state):
        self.name, self.shape, self.dtype, self.np_array = state


def empty(shape, dtype):
    """Worker side: a NumPy array over a new segment, and its handle. The caller fills the array
    and then calls ``close`` on the returned segment."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    shm = shared_memory.SharedMemory(create=True, size=max(nbytes, 1))
    array = np.ndarray(shape, dtype=dtype, buffer=shm.buf)
    return array, shm, SharedArray(shm.name, tuple(shape), dtype.str)


def publish(value):
    """Worker side: ``value`` with every NDArray (and NumPy array produced by the default
    batchify) replaced by a ``SharedArray`` handle; lists and tuples are walked."""
    if isinstance(value, (SharedArray, InlineArray)):
        return value
    if isinstance(value, nd.NDArray):
        data = value.asnumpy()
        if data.nbytes < INLINE_BYTES:
            return InlineArray(data, isinstance(value, _mx_np.ndarray))
        array, shm, handle = empty(data.shape, data.dtype)
        array[...] = data
        del array
        shm.close()
        handle.np_array = isinstance(value, _mx_np.ndarray)
        return handle
    if isinstance(value, (list, tuple)):
        return type(value)(publish(v) for v in value)
    return value


def _attach(handle):
    fd = _posixshmem.shm_open("/" + handle.name.lstrip("/"), os.O_RDWR, mode=0o600)
    try:
        size = os.fstat(fd).st_size
        buf = mmap.mmap(fd, size)
    finally:
        os.close(fd)
    release(handle)
    dtype = np.dtype(handle.dtype)
    count = int(np.prod(handle.shape, dtype=np.int64))
    array = np.frombuffer(buf, dtype=dtype, count=count).reshape(handle.shape)
    return wrap(array, handle.np_array)


def release(handle):
    """Removes the segment's name (idempotent); the memory goes when the last mapping does."""
    try:
        _posixshmem.shm_unlink("/" + handle.name.lstrip("/"))
    except FileNotFoundError:
        return
    # The worker's SharedMemory registered the name with the (shared) resource tracker.
    resource_tracker.unregister("/" + handle.name.lstrip("/"), "shared_memory")


def receive(value):
    """Main side: ``value`` with every ``SharedArray`` handle replaced by an NDArray over it."""
    if isinstance(value, SharedArray):
        return _attach(value)
    if isinstance(value, InlineArray):
        return value.wrap()
    if isinstance(value, (list, tuple)):
        return type(value)(receive(v) for v in value)
    return value


def discard(value):
    """Main side: frees the segments of a batch that will not be used."""
    if isinstance(value, SharedArray):
        release(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            discard(v)
