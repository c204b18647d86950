"""``mx.monitor`` (``mx.mon``): statistics of every op output and argument during training.

Install on executors (``Module.install_monitor`` or ``Module.fit(monitor=...)``); between
``tic()`` and ``toc()`` every ``interval``-th batch, each forward op output whose name matches
``pattern`` is summarised by ``stat_func`` (default: ``norm(x) / sqrt(x.size)``), then ``toc``
adds the arguments and auxiliary states. Backward outputs (``<node>_backward_output<i>``, the
gradient of each op node's inputs) come from a probe copy of the graph run on the collecting
batches only (``monitor_backward``).
"""

import logging
import math
import re
import warnings

from . import ndarray as nd
from .base import MXNetError
from .monitor_backward import BackwardProbe
from .ndarray import NDArray

__all__ = ["Monitor"]


def _default_stat(x):
    return nd.norm(x) / math.sqrt(x.size)


class Monitor:
    """Collects ``(step, name, stat)`` for matching arrays every ``interval`` batches."""

    def __init__(self, interval, stat_func=None, pattern=".*", sort=False, monitor_all=False):
        self.interval = int(interval)
        if self.interval < 1:
            raise ValueError(f"Monitor: interval must be at least 1, got {interval}")
        self.stat_func = stat_func or _default_stat
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []

    def stat_helper(self, name, array):
        """The executor's monitor callback."""
        if self.activated and self.re_prog.match(name):
            self.queue.append((self.step, name, self.stat_func(array)))

    def install(self, exe):
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        exe._backward_monitor = self._backward_helper
        self.exes.append(exe)

    def _backward_helper(self, exe, out_grads, is_train):
        """The executor's backward hook: the gradients of every op node's inputs, computed by a
        probe graph while collecting (see ``monitor_backward``)."""
        if not self.activated:
            return
        probes = self.__dict__.setdefault("_probes", {})
        probe = probes.get(id(exe))
        try:
            if probe is None or probe.signature != BackwardProbe.signature_of(exe):
                probe = probes[id(exe)] = BackwardProbe(exe)
            probe.run(exe, out_grads, is_train, self.stat_helper)
        except MXNetError as e:
            # A statistic must never stop training: say once why backward outputs are missing.
            exe._backward_monitor = None
            warnings.warn(f"Monitor: backward outputs are not available for this executor: {e}",
                          stacklevel=2)

    def tic(self):
        """Starts collecting if this batch is one of every ``interval``."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """Stops collecting; returns ``[(step, name, text)]`` including the arguments and
        auxiliary states, sorted by name with ``sort``."""
        if not self.activated:
            return []
        for exe in self.exes:
            named = list(zip(exe._arg_names, exe.arg_arrays, strict=True))
            named += list(zip(exe._aux_names, exe.aux_arrays, strict=True))
            for name, array in named:
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda entry: entry[1])
        results = []
        for step, name, stats in self.queue:
            stats = stats if isinstance(stats, list) else [stats]
            text = ""
            for value in stats:
                if not isinstance(value, NDArray):
                    raise TypeError(f"Monitor: stat_func must return NDArrays, got "
                                    f"{type(value).__name__} for '{name}'")
                text += (str(value.asscalar()) if value.shape in ((1,), ()) else
                         str(value.asnumpy())) + "\t"
            results.append((step, name, text))
        self.queue = []
        return results

    def toc_print(self):
        """``toc`` and log each entry."""
        for step, name, text in self.toc():
            logging.info(f"Batch: {step:7d} {name:30s} {text:s}")
