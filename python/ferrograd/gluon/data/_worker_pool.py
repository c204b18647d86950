"""DataLoader worker processes, each fed through its own pair of pipes.

Batch ``k`` of an iteration goes to worker ``k % n``; a worker answers its tasks in order, so the
main thread reads each batch straight from that worker's result pipe. There are no helper threads
in the main process: ``multiprocessing.Pool`` hands results over through threads that need the
GIL, and a training step holding the GIL starved them (the loop then waited on batches that were
long done). Waiting here is a ``poll`` on the pipe and the worker's exit sentinel (one system
call on a poll object made once per worker: ``multiprocessing.connection.wait`` builds a
selector per call, several times the cost of the call itself), which releases the GIL and
notices a dead worker at once.

Workers run at a lower scheduling priority (``nice`` +10, or ``FERROGRAD_DATALOADER_NICE``; 0
keeps the parent's): they use the CPU the training loop leaves idle, and a worker woken for its
next batch no longer preempts the loop's own thread (measured on 2 cores: the loop's wait for
data fell from 7-9% of a 2 ms step to 5%). When the loop waits for data, its cores are idle and
the workers get them whatever their priority.
"""

import multiprocessing
import os
import random
import select
import traceback
from multiprocessing import connection

import numpy as np

from ... import ndarray as nd
from . import _shared_batch


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


def _worker_loop(tasks, results, inherited, dataset, make_batch, seed):
    # Close the other workers' pipe ends this fork inherited: otherwise a worker would keep
    # another's task pipe open and neither would see EOF when the main process goes away.
    for conn in inherited:
        conn.close()
    _lower_priority()
    _seed_worker(seed)
    while True:
        try:
            task = tasks.recv()
        except (EOFError, OSError):
            return  # the main process is gone
        if task is None:
            return
        key, samples = task
        try:
            reply = (key, True, make_batch(dataset, samples))
        except Exception as err:  # noqa: BLE001 - every error is sent to the main process
            reply = (key, False, (err, traceback.format_exc()))
        try:
            results.send(reply)
        except Exception as err:  # noqa: BLE001 - e.g. a batch that does not pickle
            _shared_batch.discard(reply[2] if reply[1] else None)
            results.send((key, False, (TypeError(f"DataLoader: cannot send the batch to the "
                                                 f"main process: {err}"),
                                       traceback.format_exc())))


def _poller(conn, proc):
    """A poll object watching a worker's result pipe and exit sentinel (None where the platform
    has no ``poll``)."""
    if not hasattr(select, "poll"):
        return None
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    poller.register(proc.sentinel, select.POLLIN)
    return poller


def _raise_worker_error(payload):
    err, trace = payload
    cause = WorkerError(f"in a DataLoader worker process:\n{trace}")
    try:
        raise err from cause
    except TypeError:  # an exception class that cannot take a cause
        raise RuntimeError(f"DataLoader worker failed: {err!r}") from cause


class WorkerPool:
    """``n`` forked processes running ``make_batch(dataset, samples)`` on the tasks they get."""

    def __init__(self, n, dataset, make_batch, base_seed):
        fork = multiprocessing.get_context("fork")
        self.processes = []
        self._tasks = []
        self._results = []
        # Replies of other iterations: kept while their iterator lives, freed once it is done.
        self._stash = {}
        self._live = set()
        parent_ends = []
        for i in range(n):
            task_recv, task_send = fork.Pipe(duplex=False)
            result_recv, result_send = fork.Pipe(duplex=False)
            inherited = parent_ends + [task_send, result_recv]
            proc = fork.Process(target=_worker_loop, daemon=True,
                                args=(task_recv, result_send, inherited, dataset, make_batch,
                                      (base_seed + i) % 2 ** 31))
            proc.start()
            task_recv.close()
            result_send.close()
            parent_ends += [task_send, result_recv]
            self.processes.append(proc)
            self._tasks.append(task_send)
            self._results.append(result_recv)
        self._pollers = [_poller(conn, proc)
                         for conn, proc in zip(self._results, self.processes, strict=True)]

    def __len__(self):
        return len(self.processes)

    def open_iteration(self, iteration):
        self._live.add(iteration)

    def close_iteration(self, iteration):
        """Forgets an iteration: its replies already read are freed, later ones as they come."""
        self._live.discard(iteration)
        for key in [k for k in self._stash if k[0] == iteration]:
            reply = self._stash.pop(key)
            if reply[1]:
                _shared_batch.discard(reply[2])

    def submit(self, worker, key, samples):
        try:
            self._tasks[worker].send((key, samples))
        except OSError:
            proc = self.processes[worker]
            raise WorkerDied(f"DataLoader: worker process {worker} (pid {proc.pid}) is gone "
                             f"(exit code {proc.exitcode}); create a new DataLoader") from None

    def receive(self, worker, key, timeout):
        """The batch for ``key`` (``(iteration, index)``) from ``worker``; raises the worker's
        exception, ``TimeoutError`` after ``timeout`` seconds, ``WorkerDied`` if it died."""
        while key not in self._stash:
            conn, proc = self._results[worker], self.processes[worker]
            poller = self._pollers[worker]
            if poller is None:
                events = [(c, 0) for c in connection.wait([conn, proc.sentinel], timeout)]
                ready = any(c is conn for c, _ in events)
            else:
                events = poller.poll(timeout * 1000)
                ready = any(fd == conn.fileno() for fd, _ in events)
            if not events:
                raise multiprocessing.TimeoutError
            try:
                if not ready:
                    raise EOFError
                reply = conn.recv()
            except (EOFError, OSError):
                proc.join(0.1)
                raise WorkerDied(f"DataLoader: worker process {worker} (pid {proc.pid}) exited "
                                 f"unexpectedly with exit code {proc.exitcode}") from None
            if reply[0][0] in self._live:
                self._stash[reply[0]] = reply
            elif reply[1]:
                _shared_batch.discard(reply[2])
        _, ok, payload = self._stash.pop(key)
        if not ok:
            _raise_worker_error(payload)
        return payload

    def terminate(self):
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
        for reply in self._stash.values():
            if reply[1]:
                _shared_batch.discard(reply[2])
        self._stash = {}
