"""``mx.attribute.AttrScope``: attributes attached to every symbol created inside the scope."""

import threading
import warnings

__all__ = ["AttrScope", "current"]

_state = threading.local()


def _deprecated_current():
    warnings.warn("AttrScope.current has been deprecated. It is advised to use the `with` "
                  "statement with AttrScope.", DeprecationWarning, stacklevel=3)


class _ScopeMeta(type):
    """Gives the class MXNet's (deprecated) ``AttrScope.current`` property, per thread."""

    @property
    def current(cls):
        _deprecated_current()
        return current()

    @current.setter
    def current(cls, scope):
        _deprecated_current()
        _state.current = scope


class AttrScope(metaclass=_ScopeMeta):
    """``with AttrScope(ctx_group='dev1'):`` adds ``ctx_group='dev1'`` to new symbols.

    Keys are stored as given; MXNet's hidden keys (``ctx_group``, ``lr_mult``, ...) become
    ``__key__`` when a symbol receives them. Values must be strings, as MXNet stores every
    attribute as a string. Scopes nest, per thread; the inner one's values win.
    """

    def __init__(self, **kwargs):
        for v in kwargs.values():
            if not isinstance(v, str):
                raise ValueError("Attributes need to be string")
        self._attr = dict(kwargs)
        self._old = None

    def get(self, attr):
        """The scope's attributes merged with ``attr`` (``attr`` wins)."""
        merged = dict(self._attr)
        merged.update(attr or {})
        return merged

    def __enter__(self):
        self._old = current()
        self._attr = {**self._old._attr, **self._attr}
        _state.current = self
        return self

    def __exit__(self, *exc):
        _state.current = self._old


def current():
    """This thread's innermost scope."""
    s = getattr(_state, "current", None)
    if s is None:
        s = _state.current = AttrScope()
    return s
