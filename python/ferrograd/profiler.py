"""Per-operator profiling, as ``mx.profiler`` in MXNet.

While the profiler runs, every operator call (imperative ``nd.*`` calls, executors, hybridized
blocks, and the backward passes of all three) is timed natively. :func:`dumps` gives the
aggregate table (count, total, min, max and average time per operator) or the same figures as
JSON; :func:`dump` writes a Chrome trace (``chrome://tracing`` or Perfetto) to the configured
file. ``Task``, ``Frame``, ``Event``, ``Counter`` and ``Marker`` add user events to both::

    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename="prof.json")
    mx.profiler.set_state("run")
    ...                                 # the work to measure
    mx.profiler.set_state("stop")
    print(mx.profiler.dumps())          # per-op totals
    mx.profiler.dump()                  # trace file

Times are wall-clock on the calling thread; operators run synchronously here, so an operator's
time is its own (MXNet's asynchronous engine also needed ``WaitForVar`` rows; there are none).
"""

from __future__ import annotations

import json
import threading
import warnings

from . import _ferrograd as _native
from .base import MXNetError

__all__ = ["set_config", "set_state", "state", "dump", "dumps", "pause", "resume", "Domain",
           "Task", "Frame", "Event", "Counter", "Marker", "dump_profile", "profiler_set_config",
           "profiler_set_state"]

_DEFAULTS = {
    "filename": "profile.json",
    "profile_all": False,
    "profile_symbolic": True,
    "profile_imperative": True,
    "profile_memory": True,
    "profile_api": True,
    "continuous_dump": False,
    "dump_period": 1.0,
    "aggregate_stats": False,
    "profile_process": "worker",
}
_config = dict(_DEFAULTS)
_lock = threading.Lock()
_status = {"state": "stop", "paused": False}
_counters: list[tuple[str, str, int, float]] = []  # (domain, name, time_ns, value)
_SORT_KEYS = {"total": 1, "avg": 4, "min": 2, "max": 3, "count": 0}


def set_config(**kwargs) -> None:
    """Configure the profiler (MXNet's keywords: ``filename``, ``profile_all``,
    ``profile_symbolic``, ``profile_imperative``, ``profile_memory``, ``profile_api``,
    ``continuous_dump``, ``dump_period``, ``aggregate_stats``, ``profile_process``).

    Operators are recorded when ``profile_all``, ``profile_symbolic`` or ``profile_imperative``
    is true. Memory and C-API rows are not kept (there is no C API in between here).
    """
    unknown = sorted(set(kwargs) - set(_DEFAULTS))
    if unknown:
        raise MXNetError(f"profiler.set_config: unknown parameter(s) {unknown}; "
                         f"known: {sorted(_DEFAULTS)}")
    with _lock:
        _config.update(kwargs)
        _apply()


def _records_operators() -> bool:
    return bool(_config["profile_all"] or _config["profile_symbolic"]
                or _config["profile_imperative"])


def _recording() -> bool:
    """Whether events are being kept (running and not paused)."""
    return _status["state"] == "run" and not _status["paused"]


def _apply() -> None:
    _native._profiler_set_running(_recording() and _records_operators())


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """Start (``'run'``) or stop (``'stop'``) recording."""
    if state not in ("run", "stop"):
        raise MXNetError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    with _lock:
        _status["state"] = state
        _status["paused"] = False
        _apply()


def state() -> str:
    """``'run'`` or ``'stop'``."""
    return _status["state"]


def pause(profile_process: str = "worker") -> None:
    """Stop recording for a while, keeping what was recorded (see :func:`resume`)."""
    with _lock:
        _status["paused"] = True
        _apply()


def resume(profile_process: str = "worker") -> None:
    """Continue recording after :func:`pause`."""
    with _lock:
        _status["paused"] = False
        _apply()


def _aggregate(events) -> dict[str, dict[str, list[float]]]:
    """``{category: {name: [count, total, min, max]}}`` in milliseconds."""
    table: dict[str, dict[str, list[float]]] = {}
    for name, cat, _start, dur, _tid in events:
        if cat.endswith(":marker"):  # instants: in the trace only
            continue
        ms = dur / 1e6
        row = table.setdefault(cat, {}).get(name)
        if row is None:
            table[cat][name] = [1, ms, ms, ms]
        else:
            row[0] += 1
            row[1] += ms
            row[2] = min(row[2], ms)
            row[3] = max(row[3], ms)
    return table


def dumps(reset: bool = False, format: str = "table", sort_by: str = "total",
          ascending: bool = False) -> str:
    """The aggregate statistics: per category (``operator`` for operators, a domain's name for
    user events), each name's call count and total/min/max/average time in milliseconds.

    ``format`` is ``'table'`` or ``'json'``; ``sort_by`` one of ``total``, ``avg``, ``min``,
    ``max``, ``count``. ``reset=True`` clears the recorded events afterwards.
    """
    if format not in ("table", "json"):
        raise MXNetError(f"profiler.dumps: format must be 'table' or 'json', got {format!r}")
    if sort_by not in _SORT_KEYS:
        raise MXNetError(f"profiler.dumps: sort_by must be one of {sorted(_SORT_KEYS)}, "
                         f"got {sort_by!r}")
    table = _aggregate(_native._profiler_events(reset))
    rows = {cat: sorted(((n, c, t, lo, hi, t / c) for n, (c, t, lo, hi) in names.items()),
                        key=lambda r: r[_SORT_KEYS[sort_by] + 1], reverse=not ascending)
            for cat, names in sorted(table.items())}
    if format == "json":
        return json.dumps({
            "Time": {cat: {n: {"Count": c, "Total": round(t, 4), "Min": round(lo, 4),
                               "Max": round(hi, 4), "Avg": round(avg, 4)}
                           for n, c, t, lo, hi, avg in r} for cat, r in rows.items()},
            "Unit": {"Time": "ms"},
        }, indent=4)
    lines = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
    for cat, r in rows.items():
        lines += [cat, "=================",
                  f"{'Name':<30}{'Total Count':>11}{'Time (ms)':>17}{'Min Time (ms)':>17}"
                  f"{'Max Time (ms)':>17}{'Avg Time (ms)':>17}",
                  f"{'----':<30}{'-----------':>11}{'---------':>17}{'-------------':>17}"
                  f"{'-------------':>17}{'-------------':>17}"]
        lines += [f"{n:<30}{c:>11}{t:>17.4f}{lo:>17.4f}{hi:>17.4f}{avg:>17.4f}"
                  for n, c, t, lo, hi, avg in r]
        lines.append("")
    return "\n".join(lines) + "\n"


def dump(finished: bool = True, profile_process: str = "worker") -> None:
    """Write the recorded events to the configured ``filename`` as a Chrome trace
    (``{"traceEvents": [...]}``, times in microseconds)."""
    events = _native._profiler_events(False)
    trace: list[dict] = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "cpu/0"}}]
    for name, cat, start, dur, tid in events:
        if dur == 0 and cat.endswith(":marker"):
            trace.append({"name": name, "cat": cat[:-7], "ph": "i", "ts": start / 1e3, "pid": 0,
                          "tid": tid, "s": "p"})
        else:
            trace.append({"name": name, "cat": cat, "ph": "X", "ts": start / 1e3,
                          "dur": dur / 1e3, "pid": 0, "tid": tid})
    for domain, name, t, value in list(_counters):
        trace.append({"name": name, "cat": domain, "ph": "C", "ts": t / 1e3, "pid": 0,
                      "args": {name: value}})
    with open(_config["filename"], "w") as f:
        json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)


def dump_profile() -> None:
    """Deprecated name of :func:`dump`."""
    warnings.warn("profiler.dump_profile() is deprecated; use profiler.dump()", DeprecationWarning,
                  stacklevel=2)
    dump(True)


def profiler_set_config(mode: str = "symbolic", filename: str = "profile.json") -> None:
    """Deprecated form of :func:`set_config` (``mode`` 'symbolic' or 'all')."""
    warnings.warn("profiler.profiler_set_config() is deprecated; use profiler.set_config()",
                  DeprecationWarning, stacklevel=2)
    set_config(profile_all=(mode == "all"), filename=filename)


def profiler_set_state(state: str = "stop") -> None:
    """Deprecated name of :func:`set_state`."""
    warnings.warn("profiler.profiler_set_state() is deprecated; use profiler.set_state()",
                  DeprecationWarning, stacklevel=2)
    set_state(state)


class Domain:
    """A named group of user events (the category they are aggregated under)."""

    def __init__(self, name: str):
        self.name = str(name)

    def __str__(self) -> str:
        return self.name

    def new_task(self, name: str) -> Task:
        return Task(self, name)

    def new_frame(self, name: str) -> Frame:
        return Frame(self, name)

    def new_counter(self, name: str, value=None) -> Counter:
        return Counter(self, name, value)

    def new_marker(self, name: str) -> Marker:
        return Marker(self, name)


class _Interval:
    """A user-timed interval: ``start()`` … ``stop()`` records one event (while running)."""

    def __init__(self, category: str, name: str):
        self.name = str(name)
        self._category = category
        self._start: int | None = None

    def start(self) -> None:
        self._start = _native._profiler_now_ns()

    def stop(self) -> None:
        if self._start is None:
            raise MXNetError(f"profiler: {type(self).__name__} '{self.name}' stopped before it "
                             "was started")
        end = _native._profiler_now_ns()
        if _recording():
            _native._profiler_record(self.name, self._category, self._start, end - self._start)
        self._start = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __str__(self) -> str:
        return self.name


class Task(_Interval):
    """A timed task in a :class:`Domain`."""

    def __init__(self, domain: Domain, name: str):
        super().__init__(str(domain), name)
        self.domain = domain


class Frame(_Interval):
    """A timed frame (e.g. one training iteration) in a :class:`Domain`."""

    def __init__(self, domain: Domain, name: str):
        super().__init__(str(domain), name)
        self.domain = domain


class Event(_Interval):
    """A timed event outside any domain (category ``event``)."""

    def __init__(self, name: str):
        super().__init__("event", name)


class Counter:
    """A named value over time (a ``C`` series in the trace)."""

    def __init__(self, domain: Domain, name: str, value=None):
        self.domain, self.name = domain, str(name)
        self.value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value) -> None:
        self.value = value
        if _recording():
            _counters.append((str(self.domain), self.name, _native._profiler_now_ns(), value))

    def increment(self, delta=1) -> None:
        self.set_value(self.value + delta)

    def decrement(self, delta=1) -> None:
        self.set_value(self.value - delta)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self) -> str:
        return self.name


class Marker:
    """An instant in time (``mark()``), shown as a marker in the trace."""

    def __init__(self, domain: Domain, name: str):
        self.domain, self.name = domain, str(name)

    def mark(self, scope: str = "process") -> None:
        if _recording():
            _native._profiler_record(self.name, f"{self.domain}:marker",
                                     _native._profiler_now_ns(), 0)
