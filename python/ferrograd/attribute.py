"""``mx.attribute.AttrScope``: attributes attached to every symbol created inside the scope."""

import threading

__all__ = ["AttrScope", "current"]

_state = threading.local()


class AttrScope:
    """``with AttrScope(ctx_group='dev1'):`` adds ``__ctx_group__='dev1'`` to new symbols.

    Values must be strings, as MXNet stores every attribute as a string. Scopes nest; the inner
    one's values win.
    """

    def __init__(self, **kwargs):
        for v in kwargs.values():
            if not isinstance(v, str):
                raise ValueError("Attributes need to be string")
        self._attr = {f"__{k}__": v for k, v in kwargs.items()}
        self._old = None

    def get(self, attr):
        """The scope's attributes merged with ``attr`` (``attr`` wins)."""
        if not self._attr:
            return dict(attr or {})
        merged = dict(self._attr)
        merged.update(attr or {})
        return merged

    def __enter__(self):
        self._old = current()
        inner = AttrScope()
        inner._attr = {**self._old._attr, **self._attr}
        _state.current = inner
        return self

    def __exit__(self, *exc):
        _state.current = self._old


def current():
    s = getattr(_state, "current", None)
    if s is None:
        s = _state.current = AttrScope()
    return s
