"""``mx.name``: automatic names for symbols (``fullyconnected0``) and name prefixes.

As in MXNet, the active manager is per thread and scopes nest with ``with``; an op given no
``name=`` is called ``<hint><counter>`` where the hint is its lower-cased op name and the counter
counts per hint.
"""

import threading

__all__ = ["NameManager", "Prefix", "current"]

_state = threading.local()


class _CurrentManagerMeta(type):
    """Makes ``NameManager.current`` read and set this thread's manager, as in MXNet."""

    @property
    def current(cls):
        return current()

    @current.setter
    def current(cls, manager):
        _state.current = manager


class NameManager(metaclass=_CurrentManagerMeta):
    """Hands out ``<hint><n>`` names; ``with NameManager():`` starts fresh counters."""

    def __init__(self):
        self._counter = {}
        self._old = None

    def get(self, name, hint):
        """``name`` itself when given, else the next automatic name for ``hint``."""
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self):
        self._old = current()
        _state.current = self
        return self

    def __exit__(self, *exc):
        _state.current = self._old

    @classmethod
    def current_manager(cls):
        return current()


class Prefix(NameManager):
    """Prepends ``prefix`` to every name, given or automatic: ``Prefix('pre_')`` gives
    ``pre_fullyconnected0`` and its arguments ``pre_fullyconnected0_weight``."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def current():
    """The active manager of this thread."""
    m = getattr(_state, "current", None)
    if m is None:
        m = _state.current = NameManager()
    return m
