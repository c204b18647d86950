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

With ``overlap_backward`` on (the default; ``FERROGRAD_DIST_OVERLAP=0`` turns it off), a
Trainer with one context per worker registers its parameters here (a Module installs
``executor_hook`` on its executor) and each gradient is submitted the moment backward has
finished it, so most of the communication hides behind the rest of
backward. The reduced values go to a separate array, never into the gradient. When the gradient
is pushed, its storage stamp (a write counter) is compared with the one taken when its bucket
copied it: a gradient written since (an in-place clip, a second backward, ``grad_req='add'``)
is reduced again with its current values, on every worker (the workers agree on the set).
"""

import os

import numpy as np

from . import _ferrograd
from . import distributed as _dist
from . import ndarray as nd
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
        self.overlap_backward = os.environ.get("FERROGRAD_DIST_OVERLAP", "1") != "0"
        self._early = {}  # key -> (gradient, array receiving its sum) submitted during backward
        self._pushed_early = {}  # key -> the array pushed for an early-submitted gradient
        self._sums = {}  # key -> the array early-submitted sums go to
        self.gradients_resent = 0  # early gradients reduced again because they were written
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
                self._pending[k] = early[1]
                self._pushed_early[k] = (early[0], vs)
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

    def executor_hook(self, keys_by_arg):
        """A ``grad_ready(i, grad)`` callback for an Executor's backward (``Module`` installs it
        with one device per worker): the gradient of argument ``i``, stored under key
        ``keys_by_arg[i]``, is reduced as soon as backward has produced it. ``None`` when
        ``overlap_backward`` is off."""
        if not self.overlap_backward:
            return None

        def grad_ready(i, grad):
            key = keys_by_arg.get(i)
            if key is not None:
                self._gradient_ready(key, grad)

        return grad_ready

    def _gradient_ready(self, key, grad):
        if key in self._early:
            return  # produced again (grad_req='add', a second backward): the push re-checks it
        # the sum's buffer is reused step after step (the previous sum was applied at the pull)
        result = self._sums.get(key)
        if result is None or result.shape != grad.shape or result.dtype != grad.dtype:
            result = self._sums[key] = nd.empty(grad.shape, dtype=grad.dtype)
        self._early[key] = (grad, result)
        self.gradients_during_backward += 1
        self._reducer.submit(key, grad, result)

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
        order = self._reducer.wait()
        if self._pushed_early:
            self._redo_written(order, pending)
        for k, total in pending.items():
            stored = self._store[k]
            if self._updater_func is not None:
                self._updater_func(k, total, stored)
            else:
                stored[:] = total

    def _redo_written(self, order, pending):
        """Reduces again the early gradients some worker wrote after sending them (the sums of
        all workers must come from the same values), and checks that every worker reduced the
        same keys in the same order."""
        pushed, self._pushed_early = self._pushed_early, {}
        written = []
        for k, (grad, vs) in pushed.items():
            now = _ferrograd._storage_stamp(grad)
            # the pushed array must be the gradient that was sent, unwritten since
            same_array = len(vs) == 1 and (vs[0] is grad or _ferrograd._storage_stamp(vs[0]) == now)
            if not same_array or now is None or now != self._reducer.sent_stamp(k):
                written.append(k)
        views = self._comm.allgather((repr(order), written))
        if any(v[0] != views[0][0] for v in views):
            raise MXNetError(
                f"kvstore {self.type!r}: workers reduced different gradients in one step (a "
                "parameter that gets a gradient on some workers only?); worker 0 reduced "
                f"{views[0][0]}, worker {self.rank} {order!r}. Set FERROGRAD_DIST_OVERLAP=0")
        redo = sorted({k for v in views for k in v[1]}, key=order.index)
        for k in redo:
            grad, vs = pushed[k]
            total = _reduce(vs)
            pending[k] = total
            self._reducer.submit(k, total)
        if redo:
            self.gradients_resent += len(redo)
            self._reducer.wait()

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
