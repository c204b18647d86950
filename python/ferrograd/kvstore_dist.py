"""The distributed key-value store ``mx.kv.create('dist_sync')`` (also ``'dist_device_sync'``
and ``'horovod'``), built on MPI allreduce instead of MXNet's parameter servers.

Every worker keeps a full copy of the store. ``init`` checks that all workers declare the same
keys, shapes and dtypes and takes rank 0's values; ``push`` sums the pushed values over the
local devices and then over all workers (an allreduce), and the stored value becomes that sum,
or the optimizer set by ``set_optimizer`` updates it with that sum. Every worker applies the same
update to the same values, so the stores stay identical without a server.

Pushes are lazy: gradients are packed into buckets and reduced on a communication thread while
the caller goes on; the first operation that reads the store (``pull``, ``pushpull``, ``barrier``,
saving states) waits for them. The bucket size is ``bucket_bytes`` (default 25 MB, or
``FERROGRAD_DIST_BUCKET_MB``).

With ``overlap_backward`` on (``FERROGRAD_DIST_OVERLAP=1``), a Trainer with one context per
worker registers its parameters here and each gradient is submitted the moment backward has
finished it, so most of the communication hides behind the rest of backward. The gradient then
must not be changed between ``backward`` and ``trainer.step`` (no in-place clipping: clip after
``trainer.allreduce_grads()`` with ``update_on_kvstore=False`` instead), and the gradient arrays
receive the summed gradient.
"""

import os

import numpy as np

from . import distributed as _dist
from .base import MXNetError, ShapeError
from .kvstore import KVStore, _group, _reduce

DIST_TYPES = ("dist_sync", "dist_device_sync", "horovod", "dist_sync_device")
ASYNC_TYPES = ("dist_async", "dist_device_async", "dist")


class DistKVStore(KVStore):
    """A store shared by all MPI processes of the job (synchronous data parallelism)."""

    # set_optimizer keeps the caller's optimizer object (no server copy): a changed
    # rescale_grad or learning rate applies at once
    runs_trainer_optimizer = True

    def __init__(self, kind="dist_sync", bucket_bytes=None):
        if kind not in DIST_TYPES:
            raise MXNetError(f"kvstore.create: {kind!r} is not a synchronous distributed kind "
                             f"({', '.join(DIST_TYPES)})")
        super().__init__(kind)
        self._comm = _dist.init()
        self._reducer = _dist.GradientReducer(bucket_bytes=bucket_bytes, op="sum")
        self._pending = {}  # key -> summed local gradient being reduced
        self.overlap_backward = os.environ.get("FERROGRAD_DIST_OVERLAP", "0") == "1"
        self._early = {}  # key -> gradient submitted during backward
        self.gradients_during_backward = 0  # how many were submitted before backward ended

    @property
    def rank(self):
        return self._comm.Get_rank()

    @property
    def num_workers(self):
        return self._comm.Get_size()

    # -- data -------------------------------------------------------------------------------------
    def init(self, key, value):
        """Stores rank 0's ``value`` under ``key`` on every worker; all workers must pass the same
        keys with the same shapes and dtypes (else every worker raises ShapeError)."""
        keys, vals = _group("init", key, value)
        for k in keys:
            self._check_key("init", k)
            if k in self._store:
                raise MXNetError(f"kvstore.init: duplicate init of key {k!r}")
        self._flush()
        mine = [(k, tuple(vs[0].shape), str(np.dtype(vs[0].dtype))) for k, vs in
                zip(keys, vals, strict=True)]
        for r, theirs in enumerate(self._comm.allgather(mine)):
            if theirs != mine:
                raise ShapeError(f"kvstore.init ({self.type}): workers disagree on the "
                                 f"parameters: worker {self.rank} has {_describe(mine)} but "
                                 f"worker {r} has {_describe(theirs)}")
        copies = [vs[0].copy() for vs in vals]
        _dist.broadcast(copies, root=0, check=False)
        for k, c in zip(keys, copies, strict=True):
            self._store[k] = c

    def push(self, key, value, priority=0):
        """Sums the values of each key over the devices and the workers, then stores the sum or
        updates the stored value with it (optimizer or updater). Completes lazily: see the
        module docstring."""
        keys, vals = _group("push", key, value)
        for k, vs in zip(keys, vals, strict=False):
            self._stored("push", k)
            early = self._early.pop(k, None)
            if early is not None:  # already being reduced since backward produced it
                self._pending[k] = early
                continue
            if k in self._pending:
                self._flush()
            total = _reduce(vs)  # a fresh array: reduced in place
            self._pending[k] = total
            self._reducer.submit(k, total)

    # -- overlap with backward ------------------------------------------------------------------
    def watch_backward(self, arrays_by_key):
        """Called by Trainer with ``{key: parameter data array}`` (one context per worker): when
        ``overlap_backward`` is on, their gradients are reduced as backward produces them.
        Returns whether overlap is active."""
        from .distributed import _overlap

        if not self.overlap_backward or not _overlap.supported():
            return False
        return bool(_overlap.watch(self, arrays_by_key))

    def _gradient_ready(self, key, grad):
        if key in self._early:
            raise MXNetError(
                f"kvstore {self.type!r}: the gradient of key {key!r} was produced twice before "
                "it was pushed (two backward passes per step, or grad_req='add'); set "
                "FERROGRAD_DIST_OVERLAP=0 for such loops"
            )
        self._early[key] = grad
        self.gradients_during_backward += 1
        self._reducer.submit(key, grad)

    def _flush(self):
        """Waits for the pushed sums and applies them, in push order."""
        if not self._pending:
            return
        if self._early:  # produced by backward but never pushed: no worker may skip a push
            missing = sorted(map(str, self._early))
            self._early.clear()
            raise MXNetError(f"kvstore {self.type!r}: gradients of keys {missing} were produced "
                             "by backward but not pushed before the store was read")
        pending, self._pending = self._pending, {}
        self._reducer.wait()
        for k, total in pending.items():
            stored = self._store[k]
            if self._updater_func is not None:
                self._updater_func(k, total, stored)
            else:
                stored[:] = total

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        self._flush()
        super().pull(key, out, priority, ignore_sparse)

    def set_gradient_compression(self, compression_params):
        raise MXNetError(
            f"kvstore.set_gradient_compression: gradient compression is not offered by "
            f"ferrograd's {self.type!r} store (MPI allreduce of full-precision gradients)"
        )

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Writes this worker's optimizer states (identical on every worker) to ``fname``."""
        self._flush()
        super().save_optimizer_states(fname, dump_optimizer)

    def load_optimizer_states(self, fname):
        """Reads states written by :meth:`save_optimizer_states` (each worker its file)."""
        self._flush()
        super().load_optimizer_states(fname)

    def barrier(self):
        """Finishes pending pushes, then waits for every worker."""
        self._flush()
        self._comm.Barrier()

    _barrier = barrier

    @property
    def bucket_stats(self):
        """Timings of the gradient buckets (``comm`` and ``exposed`` seconds, ``buckets``)."""
        return self._reducer.stats


def _describe(sig):
    return "[" + ", ".join(f"{k!r}: {s} {d}" for k, s, d in sig) + "]"


def async_error(name):
    return MXNetError(
        f"kvstore.create: {name!r} (asynchronous parameter-server training) is not offered by "
        "ferrograd; distributed training is synchronous allreduce over MPI: use 'dist_sync' "
        "(or its synonyms 'dist_device_sync', 'horovod')"
    )
