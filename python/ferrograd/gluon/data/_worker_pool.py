"""DataLoader worker processes: tasks in through a pipe each, batches back through a ring of
slots in shared memory (``_reply_ring``; other replies through a result pipe each).

Batch ``k`` of an iteration goes to worker ``k % n``; a worker answers its tasks in order, so the
main thread takes each batch straight from that worker's ring. The main thread makes no system
call for a batch that is ready:

- tasks travel in groups (one message, one pipe write and one wake-up of the worker for several
  batches: waking a sleeping process cost the main thread tens of microseconds per write on
  virtual machines);
- a worker runs at most ``ahead`` replies (its ring's slots) ahead of what the main thread has
  read from it: the main thread counts the replies it reads in shared memory, which frees their
  slots, and a worker with no credit left looks at that count every ``CREDIT_POLL_S`` (so the
  main thread never has to wake it);
- a main thread waiting for a reply looks at the ring every ``WAIT_POLL_S`` and checks that the
  worker is alive; a worker skips the queued tasks of an iteration closed in the meantime.

There are no helper threads in the main process: ``multiprocessing.Pool`` hands results over
through threads that need the GIL, and a training step holding the GIL starved them.

Workers run at a lower scheduling priority (``nice`` +10, or ``FERROGRAD_DATALOADER_NICE``; 0
keeps the parent's): they use the CPU the training loop leaves idle, and a worker woken for its
next batch no longer preempts the loop's own thread (measured on 2 cores: the loop's wait for
data fell from 7-9% of a 2 ms step to 5%). When the loop waits for data, its cores are idle and
the workers get them whatever their priority.
"""

import ctypes
import multiprocessing
import os
import random
import time
import traceback
from multiprocessing import sharedctypes

import numpy as np

from ... import ndarray as nd
from . import _reply_ring, _shared_batch

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None


# How often a worker that is ``ahead`` batches in front of the main thread looks again, and how
# often the main thread looks for a reply that is not there yet.
CREDIT_POLL_S = 0.0002
WAIT_POLL_S = 0.0001
# How long a worker that has run out of tasks keeps looking for more before it sleeps.
LINGER_S = 0.01
# Closed iterations are remembered in a ring of this many slots (by id modulo the size): a
# worker skips a queued task of a remembered one (an older id may be forgotten: then the task is
# computed and its reply discarded, as before).
_CLOSED_RING = 64


class WorkerError(Exception):
    """The traceback of an exception raised in a worker (attached as the ``__cause__`` of the
    exception the main process re-raises)."""


class WorkerDied(RuntimeError):
    """A worker process ended without answering (killed, or crashed in native code)."""


def _lower_priority():
    try:
        step = int(os.environ.get("FERROGRAD_DATALOADER_NICE", "10"))
    except ValueError:
        step = 10
    if step > 0:
        try:
            os.nice(step)
        except OSError:  # not permitted here: run at the parent's priority
            pass


def _seed_worker(seed):
    # A forked worker starts with its parent's random states: each gets its own stream.
    random.seed(seed)
    np.random.seed(seed)
    nd.random.seed(seed)


class _Shared:
    """What the main process and the workers share: replies read from each worker, the ring of
    closed iterations, and a stop flag."""

    def __init__(self, n):
        self.read = sharedctypes.RawArray(ctypes.c_int64, n)
        self.closed = sharedctypes.RawArray(ctypes.c_int64, [-1] * _CLOSED_RING)
        self.stop = sharedctypes.RawValue(ctypes.c_int64, 0)

    def is_closed(self, iteration):
        return self.closed[iteration % _CLOSED_RING] == iteration


def _worker_loop(tasks, results, inherited, dataset, make_batch, seed, index, shared, ring):
    # Close the other workers' pipe ends this fork inherited: otherwise a worker would keep
    # another's task pipe open and neither would see EOF when the main process goes away.
    for conn in inherited:
        conn.close()
    _lower_priority()
    _seed_worker(seed)
    parent = os.getppid()
    made = 0
    while True:
        if made:
            _linger(tasks)
        try:
            group = tasks.recv()
        except (EOFError, OSError):
            return  # the main process is gone
        if group is None:
            return
        for key, samples in group:
            while made - shared.read[index] >= ring.slots and not shared.is_closed(key[0]):
                if shared.stop.value or os.getppid() != parent:
                    return
                time.sleep(CREDIT_POLL_S)
            if shared.stop.value:
                return
            if shared.is_closed(key[0]):
                continue
            _answer(results, ring, made, key, dataset, make_batch, samples)
            made += 1


def _linger(tasks):
    """Looks for the next tasks without sleeping for ``LINGER_S`` before the blocking read: a
    process asleep on a pipe took 0.13-1.9 ms to wake up on a 2-core virtual machine, one that
    polls 0.05-0.6 ms, and the next pass's first batches were late by that much."""
    deadline = time.perf_counter() + LINGER_S
    while time.perf_counter() < deadline:
        if tasks.poll(0):
            return


def _answer(results, ring, seq, key, dataset, make_batch, samples):
    """Reply number ``seq`` of this worker: in its ring slot, or marked there and pickled into
    the result pipe."""
    try:
        reply = (key, True, make_batch(dataset, samples))
    except Exception as err:  # noqa: BLE001 - every error is sent to the main process
        reply = (key, False, (err, traceback.format_exc()))
    if reply[1] and ring.write(seq, key, reply[2]):
        return
    ring.mark_pipe(seq, key)  # before the send: a big reply fills the pipe until it is read
    try:
        results.send(reply)
    except Exception as err:  # noqa: BLE001 - e.g. a batch that does not pickle
        _shared_batch.discard(reply[2] if reply[1] else None)
        results.send((key, False, (TypeError(f"DataLoader: cannot send the batch to the main "
                                             f"process: {err}"), traceback.format_exc())))


# Room for a worker's replies in its result pipe (Linux's default is 16 pages): with a full pipe
# the worker blocks in its write, and each read of the main thread then has to wake it up (measured
# on 2 cores: reading a 17 KB reply took 40-190 us that way, 30-40 us with room).
RESULT_PIPE_BYTES = 1 << 20


def _widen(conn):
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", 1031) if fcntl is not None else None
    if setpipe is None:
        return
    try:
        fcntl.fcntl(conn.fileno(), setpipe, RESULT_PIPE_BYTES)
    except OSError:  # above the system's pipe-max-size: keep what it allows
        pass


def _raise_worker_error(payload):
    err, trace = payload
    cause = WorkerError(f"in a DataLoader worker process:\n{trace}")
    try:
        raise err from cause
    except TypeError:  # an exception class that cannot take a cause
        raise RuntimeError(f"DataLoader worker failed: {err!r}") from cause


class WorkerPool:
    """``n`` forked processes running ``make_batch(dataset, samples)`` on the tasks they get,
    each at most ``ahead`` replies ahead of the main thread's reading."""

    def __init__(self, n, dataset, make_batch, base_seed, ahead=2):
        fork = multiprocessing.get_context("fork")
        self._shared = _Shared(n)
        self._rings = [_reply_ring.Ring(max(int(ahead), 1)) for _ in range(n)]
        self.processes = []
        self._tasks = []
        self._results = []
        # Batches of other iterations (as the main process's NDArrays): kept while their
        # iterator lives, dropped once it is done.
        self._stash = {}
        self._live = set()
        parent_ends = []
        for i in range(n):
            task_recv, task_send = fork.Pipe(duplex=False)
            result_recv, result_send = fork.Pipe(duplex=False)
            _widen(result_send)
            inherited = parent_ends + [task_send, result_recv]
            proc = fork.Process(target=_worker_loop, daemon=True,
                                args=(task_recv, result_send, inherited, dataset, make_batch,
                                      (base_seed + i) % 2 ** 31, i, self._shared,
                                      self._rings[i]))
            proc.start()
            task_recv.close()
            result_send.close()
            parent_ends += [task_send, result_recv]
            self.processes.append(proc)
            self._tasks.append(task_send)
            self._results.append(result_recv)

    def __len__(self):
        return len(self.processes)

    def open_iteration(self, iteration):
        self._live.add(iteration)

    def close_iteration(self, iteration):
        """Forgets an iteration: its batches already read are dropped, later ones as they come,
        and the workers skip its tasks they have not started."""
        self._live.discard(iteration)
        self._shared.closed[iteration % _CLOSED_RING] = iteration
        for key in [k for k in self._stash if k[0] == iteration]:
            del self._stash[key]

    def submit(self, worker, tasks):
        """Queues ``tasks``, a list of ``(key, samples)``, on ``worker`` (one message)."""
        try:
            self._tasks[worker].send(tasks)
        except OSError:
            proc = self.processes[worker]
            raise WorkerDied(f"DataLoader: worker process {worker} (pid {proc.pid}) is gone "
                             f"(exit code {proc.exitcode}); create a new DataLoader") from None

    def receive(self, worker, key, timeout):
        """The batch for ``key`` (``(iteration, index)``) from ``worker``; raises the worker's
        exception, ``TimeoutError`` after ``timeout`` seconds, ``WorkerDied`` if it died."""
        while key not in self._stash:
            seq = self._shared.read[worker]
            ring = self._rings[worker]
            if not ring.ready(seq):
                self._wait(worker, seq, timeout)
            got, kind = ring.key(seq)
            live = got[0] in self._live
            if kind == _reply_ring.ARRAYS:
                reply = (True, ring.take(seq)) if live else None
            else:
                reply = self._from_pipe(worker, live)
            self._shared.read[worker] = seq + 1  # frees the slot
            if live:
                self._stash[got] = reply
        ok, payload = self._stash.pop(key)
        if not ok:
            _raise_worker_error(payload)
        return payload

    def _wait(self, worker, seq, timeout):
        """Until reply ``seq`` of ``worker`` is in its ring (checking that the worker lives)."""
        ring, proc = self._rings[worker], self.processes[worker]
        deadline = time.monotonic() + timeout
        while not ring.ready(seq):
            # Looked at again after the exit code: the worker may have answered, then exited.
            if proc.exitcode is not None and not ring.ready(seq):
                raise WorkerDied(f"DataLoader: worker process {worker} (pid {proc.pid}) exited "
                                 f"unexpectedly with exit code {proc.exitcode}")
            if time.monotonic() > deadline:
                raise multiprocessing.TimeoutError
            time.sleep(WAIT_POLL_S)

    def _from_pipe(self, worker, live):
        """A reply the worker pickled into its pipe, as ``(ok, batch or error)`` (its shared
        segments mapped, or freed if ``live`` is false)."""
        try:
            _, ok, payload = self._results[worker].recv()
        except (EOFError, OSError):
            proc = self.processes[worker]
            proc.join(0.1)
            raise WorkerDied(f"DataLoader: worker process {worker} (pid {proc.pid}) exited "
                             f"unexpectedly with exit code {proc.exitcode}") from None
        if not live:
            if ok:
                _shared_batch.discard(payload)
            return None
        return (True, _shared_batch.receive(payload)) if ok else (False, payload)

    def terminate(self):
        self._shared.stop.value = 1
        for conn in self._tasks:
            try:
                conn.send(None)
            except OSError:
                pass
        for proc in self.processes:
            proc.join(0.2)
            if proc.is_alive():
                proc.terminate()
                proc.join(1)
        for conn in self._results:  # free the segments of replies nobody read
            try:
                while conn.poll():
                    reply = conn.recv()
                    if reply[1]:
                        _shared_batch.discard(reply[2])
            except (EOFError, OSError):
                pass
        for conn in self._tasks + self._results:
            conn.close()
        self._stash = {}
