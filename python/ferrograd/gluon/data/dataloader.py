"""``DataLoader``: batches of a dataset, loaded in the main process, in worker threads, or in
worker processes that hand batches over through shared memory (``_shared_batch``)."""

import functools
import itertools
import multiprocessing
import multiprocessing.pool
import sys
from multiprocessing import resource_tracker

import numpy as np

from ... import context
from ... import ndarray as nd
from . import _shared_batch, _worker_pool
from . import sampler as _sampler
from .dataset import take_batch

__all__ = ["DataLoader", "default_batchify_fn", "default_mp_batchify_fn"]

# Tasks queued per worker at a time (a worker computes no more than its credit allows; queued
# tasks cost only their indices).
TASK_GROUP = 16


def default_batchify_fn(data):
    """Stacks a list of samples into a batch: NDArrays with ``nd.stack``, tuples element by
    element (a list of batches), anything else through ``numpy.asarray`` into an NDArray."""
    if isinstance(data[0], nd.NDArray):
        return nd.stack(*data)
    if isinstance(data[0], tuple):
        return [default_batchify_fn(list(column)) for column in zip(*data, strict=True)]
    array = np.asarray(data)
    return nd.array(array, dtype=array.dtype)


def default_mp_batchify_fn(data):
    """The batchify of worker processes: the same batches as ``default_batchify_fn`` (in a
    worker they are stacked straight into shared memory)."""
    return default_batchify_fn(data)


def _stack_for_transfer(data):
    """Worker side of the default batchify: stack with NumPy straight into what travels to the
    main process (a shared segment, or a small array sent in the pipe)."""
    if isinstance(data[0], tuple):
        return [_stack_for_transfer(list(column)) for column in zip(*data, strict=True)]
    if isinstance(data[0], nd.NDArray):
        arrays = [d.asnumpy() for d in data]
        first = arrays[0]
    else:
        # Numbers and NumPy samples: one conversion, as default_batchify_fn does.
        stacked = np.asarray(data)
        if stacked.dtype == object:
            return nd.array(stacked)  # ragged samples: let nd.array explain
        arrays, first = None, stacked
    shape = first.shape if arrays is not None else first.shape[1:]
    nbytes = len(data) * first.dtype.itemsize * int(np.prod(shape, dtype=np.int64))
    if nbytes < _shared_batch.INLINE_BYTES or not _shared_batch.AVAILABLE:
        try:
            return _shared_batch.InlineArray(first if arrays is None else np.stack(arrays))
        except ValueError as err:
            raise _ragged(shape, err) from err
    out, shm, handle = _shared_batch.empty((len(data),) + shape, first.dtype)
    try:
        if arrays is None:
            out[...] = first
        else:
            np.stack(arrays, out=out)
    except ValueError as err:
        del out
        shm.close()
        _shared_batch.release(handle)
        raise _ragged(shape, err) from err
    del out
    shm.close()
    return handle


def _ragged(shape, err):
    return ValueError(f"DataLoader: cannot stack samples of different shapes into a batch "
                      f"(first sample shape {shape}): {err}")


def _as_in_context(data, ctx):
    if isinstance(data, nd.NDArray):
        if data.context == ctx:
            return data
        # as_in_context keeps a CPU array's context label, so copy onto the pinned context.
        return nd.array(data, ctx=ctx, dtype=data.dtype)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


def _load_batch(dataset, samples, batchify_fn):
    """The batch of ``samples``: in one pass per array and transform where the dataset allows
    it and the batchify is the default one (``dataset.take_batch``), else sample by sample."""
    if batchify_fn is default_batchify_fn:
        batch = take_batch(dataset, samples)
        if batch is not None:
            return batch
    return batchify_fn([dataset[i] for i in samples])


def _worker_batch(dataset, samples, batchify_fn):
    """Runs in a worker process: the batch of ``samples``, ready to send to the main process."""
    if batchify_fn is None:
        batch = take_batch(dataset, samples)
        if batch is None:
            batch = _stack_for_transfer([dataset[i] for i in samples])
        return _shared_batch.publish(batch)
    return _shared_batch.publish(batchify_fn([dataset[i] for i in samples]))


def _thread_worker_fn(samples, batchify_fn, dataset):
    return _load_batch(dataset, samples, batchify_fn)


class _MultiWorkerIter:
    """Iterates batches computed by workers, in order, keeping at least ``prefetch`` batches in
    flight. With worker processes (see ``_worker_pool``):

    - the first batch is loaded in this process: workers idle since the last pass take up to
      milliseconds to wake (more on a virtual machine), and that batch has nothing to hide
      behind, while the workers start on the next ones at once;
    - batch ``k`` goes to worker ``k % n``, which answers its tasks in order.

    A thread pool takes tasks one by one as they come."""

    _next_id = itertools.count()

    def __init__(self, loader, prefetch):
        self._loader = loader  # keeps the pool alive while this iterator is in use
        self._pool = loader._worker_pool
        self._threads = loader._thread_pool
        self._timeout = loader._timeout
        self._prefetch = max(prefetch, 1)
        self._id = next(self._next_id)
        self._pending = {}
        self._rcvd_idx = 0
        self._sent_idx = 0
        self._iter = iter(loader._batch_sampler)
        self._first = None
        if self._threads:
            for _ in range(self._prefetch):
                self._push_to_thread()
            return
        self._pool.open_iteration(self._id)
        self._first = next(self._iter, None)
        if self._first is not None:
            self._sent_idx = 1
        self._fill()

    def __len__(self):
        return len(self._loader._batch_sampler)

    def _push_to_thread(self):
        indices = next(self._iter, None)
        if indices is not None:
            self._pending[self._sent_idx] = self._pool.apply_async(
                _thread_worker_fn, (indices, self._loader._batchify_fn, self._loader._dataset))
            self._sent_idx += 1

    def _fill(self):
        """Once fewer than ``prefetch`` tasks past the next batch are queued, queues
        ``TASK_GROUP`` more per worker, each worker's in one message. The workers' credit (see
        ``_worker_pool``) keeps them within ``prefetch`` batches of what is read."""
        if self._sent_idx >= self._rcvd_idx + 1 + self._prefetch:
            return
        workers = len(self._pool)
        groups = [[] for _ in range(workers)]
        end = self._rcvd_idx + 1 + self._prefetch + TASK_GROUP * workers
        while self._sent_idx < end:
            indices = next(self._iter, None)
            if indices is None:
                break
            # NumPy integers from a custom sampler pickle ~50x slower than Python ints.
            samples = [i.item() if isinstance(i, np.integer) else i for i in indices]
            groups[self._sent_idx % workers].append(((self._id, self._sent_idx), samples))
            self._sent_idx += 1
        for worker, tasks in enumerate(groups):
            if tasks:
                self._pool.submit(worker, tasks)

    def __next__(self):
        if self._threads:
            self._push_to_thread()
        else:
            self._fill()
        if self._rcvd_idx == self._sent_idx:
            raise StopIteration
        index = self._rcvd_idx
        self._rcvd_idx += 1
        try:
            if self._threads:
                batch = self._pending.pop(index).get(self._timeout)
            elif index == 0:
                indices, self._first = self._first, None
                batch = _load_batch(self._loader._dataset, indices, self._loader._batchify_fn)
            else:
                batch = self._pool.receive(index % len(self._pool), (self._id, index),
                                           self._timeout)
        except multiprocessing.TimeoutError:
            self.close()
            raise multiprocessing.TimeoutError(
                f"DataLoader: a worker produced no batch within timeout={self._timeout} seconds "
                "(a slow dataset/transform, or a worker that died); raise the timeout or "
                "check the dataset") from None
        except BaseException:
            self.close()
            raise
        if self._loader._pin_memory:
            batch = _as_in_context(batch, context.cpu_pinned(self._loader._pin_device_id))
        return batch

    next = __next__

    def __iter__(self):
        return self

    def close(self):
        """Stops the iteration; its batches in flight are freed as they come back (without
        waiting for them)."""
        self._pending = {}
        self._iter = iter(())
        self._rcvd_idx = self._sent_idx
        if not self._threads and self._pool is not None:
            self._pool.close_iteration(self._id)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class DataLoader:
    """Loads ``dataset`` in batches.

    ``batch_size``/``shuffle``/``sampler``/``last_batch`` build a ``BatchSampler`` unless
    ``batch_sampler`` is given. ``batchify_fn(list_of_samples)`` makes a batch (default: stack).
    ``num_workers > 0`` loads batches in that many worker processes (forked: the dataset and
    ``batchify_fn`` need not pickle), handing arrays over through shared memory, or in threads
    with ``thread_pool=True``; ``prefetch`` batches (default ``2 * num_workers``) are kept in
    flight and ``timeout`` seconds bounds the wait for one. With worker processes the first
    batch of each pass is loaded in the calling process while the workers start on the next
    ones (idle workers are slow to wake, and that batch could not be prefetched);
    ``timeout`` applies to the workers' batches. ``pin_memory`` puts batches in
    ``cpu_pinned(pin_device_id)`` memory.
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False,
                 pin_device_id=0, prefetch=None, thread_pool=False, timeout=120,
                 auto_reload=False):
        if not timeout > 0:
            raise ValueError(f"DataLoader: timeout must be positive, given {timeout}")
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        self._timeout = timeout
        self._auto_reload = auto_reload
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError("DataLoader: batch_size must be specified unless batch_sampler "
                                 "is specified")
            if sampler is None:
                sampler = (_sampler.RandomSampler(len(dataset)) if shuffle
                           else _sampler.SequentialSampler(len(dataset)))
            elif shuffle:
                raise ValueError("DataLoader: shuffle must not be specified if sampler is "
                                 "specified")
            batch_sampler = _sampler.BatchSampler(sampler, batch_size, last_batch or "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError("DataLoader: batch_size, shuffle, sampler and last_batch must not be "
                             "specified if batch_sampler is specified.")
        self._batch_sampler = batch_sampler
        self._num_workers = max(int(num_workers), 0)
        self._prefetch = max(0, int(prefetch) if prefetch is not None else 2 * self._num_workers)
        self._worker_pool = None
        self._user_batchify = batchify_fn not in (None, default_batchify_fn,
                                                  default_mp_batchify_fn)
        self._batchify_fn = batchify_fn if self._user_batchify else default_batchify_fn
        if self._num_workers > 0:
            self._start_pool()

    def _start_pool(self):
        if self._thread_pool or not _shared_batch.AVAILABLE or sys.platform == "win32":
            self._thread_pool = True
            self._worker_pool = multiprocessing.pool.ThreadPool(self._num_workers)
            return
        # Workers register their segments with this process's resource tracker, which then
        # frees any that a killed run leaves behind.
        resource_tracker.ensure_running()
        worker_batchify = self._batchify_fn if self._user_batchify else None
        base_seed = int(np.random.randint(0, 2 ** 31 - 1))
        # In flight: up to ``prefetch`` batches past the next one, shared among the workers.
        ahead = -(-(self._prefetch + 1) // self._num_workers)
        self._worker_pool = _worker_pool.WorkerPool(
            self._num_workers, self._dataset,
            functools.partial(_worker_batch, batchify_fn=worker_batchify), base_seed, ahead)

    def __iter__(self):
        if self._num_workers == 0:
            return self._same_process_iter()
        return _MultiWorkerIter(self, self._prefetch)

    def _same_process_iter(self):
        for indices in self._batch_sampler:
            batch = _load_batch(self._dataset, indices, self._batchify_fn)
            if self._pin_memory:
                batch = _as_in_context(batch, context.cpu_pinned(self._pin_device_id))
            yield batch

    def __len__(self):
        return len(self._batch_sampler)

    def __del__(self):
        pool, self._worker_pool = getattr(self, "_worker_pool", None), None
        if pool is not None:
            try:
                pool.terminate()
                if self._thread_pool:
                    pool.join()
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass
