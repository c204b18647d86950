"""Gradient bucketing (tensor fusion): many small allreduces become a few large ones.

Gradients are submitted one by one (ideally as soon as backward has produced each). They are
packed into fused buffers of about ``bucket_bytes``; a full bucket is handed to a communication
thread at once, so its allreduce runs while the caller keeps working (packing the next bucket,
or the rest of backward). ``wait()`` finishes the last bucket and copies the reduced values back
into the gradients. Every process must submit the same gradients in the same order (the same
model gives the same order), since buckets are matched by position.
"""

import os
import queue
import threading

import numpy as np

from .. import _ferrograd
from . import _comm

DEFAULT_BUCKET_BYTES = 25 * 1024 * 1024


def bucket_bytes_from_env():
    """``FERROGRAD_DIST_BUCKET_MB`` (megabytes, default 25) as bytes."""
    mb = os.environ.get("FERROGRAD_DIST_BUCKET_MB")
    if mb is None:
        return DEFAULT_BUCKET_BYTES
    try:
        value = float(mb)
    except ValueError:
        raise ValueError(f"FERROGRAD_DIST_BUCKET_MB must be a number of megabytes, got {mb!r}")\
            from None
    if value < 0:
        raise ValueError(f"FERROGRAD_DIST_BUCKET_MB must be >= 0, got {mb!r}")
    return int(value * 1024 * 1024)


class _Bucket:
    def __init__(self, dtype):
        self.dtype = dtype
        self.entries = []  # (key, NDArray read, NDArray the reduced values go to)
        self.nbytes = 0
        self.fused = None
        self.done = threading.Event()
        self.error = None


class GradientReducer:
    """Allreduces submitted NDArrays in fused buckets on a background thread.

    ``bucket_bytes`` sets the bucket size (0: one allreduce per array); ``op`` is ``'sum'`` or
    ``'mean'``. Timings of the last round are kept in ``stats`` (seconds): ``comm`` (time the
    thread spent in MPI) and ``exposed`` (time ``wait`` blocked)."""

    def __init__(self, bucket_bytes=None, op="sum"):
        self.bucket_bytes = bucket_bytes_from_env() if bucket_bytes is None else int(bucket_bytes)
        if self.bucket_bytes < 0:
            raise ValueError(f"GradientReducer: bucket_bytes must be >= 0, got {bucket_bytes}")
        self.op = op
        # its own channel, never mixed with the caller's collectives
        self._comm = _comm.init().Dup()
        self._open = {}  # dtype -> bucket being filled
        self._sent = []
        self._queue = queue.Queue()
        self._thread = None
        self.stats = {"comm": 0.0, "exposed": 0.0, "buckets": 0}
        # Each key's storage stamp when its bucket last copied it (see ``sent_stamp``).
        self._stamps = {}

    # -- filling ----------------------------------------------------------------------------------
    def submit(self, key, array, result=None):
        """Adds ``array`` to the open bucket of its dtype; ``wait`` writes the reduced values
        into ``result`` (default: ``array`` itself). ``array`` is read when its bucket is sent."""
        dt = np.dtype(array.dtype)
        bucket = self._open.get(dt)
        if bucket is None:
            bucket = self._open[dt] = _Bucket(dt)
        bucket.entries.append((key, array, array if result is None else result))
        bucket.nbytes += array.size * dt.itemsize
        if bucket.nbytes >= self.bucket_bytes:
            self._send(self._open.pop(dt))

    def flush(self):
        """Sends every partly filled bucket (in dtype order, the same on every process)."""
        for dt in sorted(self._open, key=str):
            self._send(self._open[dt])
        self._open.clear()

    def sent_stamp(self, key):
        """The storage stamp (``_ferrograd._storage_stamp``) of ``key``'s array when its bucket
        copied it: compare with the array's stamp now to tell whether it was written since."""
        return self._stamps.get(key)

    def _send(self, bucket):
        for key, array, _ in bucket.entries:
            self._stamps[key] = _ferrograd._storage_stamp(array)
        views = [a.to_numpy().reshape(-1) for _, a, _ in bucket.entries]
        bucket.fused = views[0].copy() if len(views) == 1 else np.concatenate(views)
        self._sent.append(bucket)
        self.stats["buckets"] += 1
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ferrograd-allreduce",
                                            daemon=True)
            self._thread.start()
        self._queue.put(bucket)

    def _run(self):
        import time

        while True:
            bucket = self._queue.get()
            if bucket is None:
                return
            start = time.perf_counter()
            try:
                _comm.allreduce_numpy(bucket.fused, self.op, self._comm)
            except BaseException as e:  # reported to the waiting thread
                bucket.error = e
            self.stats["comm"] += time.perf_counter() - start
            bucket.done.set()

    # -- finishing ------------------------------------------------------------------------------
    def wait(self):
        """Sends what is left, waits for every bucket and writes the reduced values back.
        Returns the keys reduced, in submission order per bucket."""
        import time

        self.flush()
        start = time.perf_counter()
        keys = []
        sent, self._sent = self._sent, []
        for bucket in sent:
            bucket.done.wait()
            if bucket.error is not None:
                raise bucket.error
        self.stats["exposed"] += time.perf_counter() - start
        for bucket in sent:
            offset = 0
            for key, _, array in bucket.entries:
                n = array.size
                part = bucket.fused[offset:offset + n].reshape(array.shape)
                target = _comm.writable_view(array)
                if target is None:
                    from ..ndarray import array as nd_array

                    array[:] = nd_array(part, dtype=part.dtype)
                else:
                    np.copyto(target, part)
                offset += n
                keys.append(key)
        return keys

    def reset_stats(self):
        self.stats = {"comm": 0.0, "exposed": 0.0, "buckets": 0}

    def close(self):
        """Stops the communication thread."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
