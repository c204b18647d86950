"""``mx.util``: the NumPy-semantics switches and environment helpers of MXNet 1.9.

Two flags decide how ferrograd behaves:

* **np-shape** (``is_np_shape()``): 0-d and zero-size shapes are valid, full reductions and
  scalar indexing give shape ``()``. ``is_np_shape()`` here is the one place Python code asks.
* **np-array** (``is_np_array()``): NumPy-array semantics (``mx.np.ndarray`` results where MXNet
  gives them). It needs np-shape, so it cannot be on while np-shape is off.

Both are switched with ``set_np()``/``reset_np()``, the scopes ``np_shape()``/``np_array()`` and the
decorators ``use_np_shape``/``use_np_array``/``use_np``.

Threads, as in MXNet: the np-array flag belongs to the thread that set it. The np-shape flag is
per thread too (``set_np_shape(True)``, the scopes, ``set_np()``), except that
``set_np_shape(2)`` turns it on for every thread, including threads started later, until it is
turned off again.
"""

import functools
import inspect
import os
import threading

from . import _ferrograd

__all__ = ["is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array", "np_array",
           "use_np_array", "use_np", "set_np", "reset_np", "getenv", "setenv"]

def is_np_shape():
    """Whether NumPy shape semantics is on in this thread."""
    return bool(_ferrograd._np_shape())


def set_np_shape(active):
    """Turns NumPy shape semantics on or off and returns the previous state.

    ``active`` is a bool or MXNet's level: 0 off, 1 on for this thread, 2 on for all threads.
    Turning it off while NumPy array semantics is on raises ``ValueError``.
    """
    level = int(active)
    if level not in (0, 1, 2):
        raise ValueError(f"set_np_shape: active must be a bool or 0, 1 or 2, got {active!r}")
    if level == 0 and is_np_array():
        raise ValueError("Deactivating NumPy shape semantics while NumPy array semantics is still "
                         "active is not allowed. Please consider calling `npx.reset_np()` to "
                         "deactivate both of them.")
    prev = is_np_shape()
    if level != 1:
        # 2 also sets the process-wide switch; 0 clears both (MXNet's rule), 1 is this thread's
        _ferrograd._set_np_shape_global(level == 2)
    _ferrograd._set_np_shape(level != 0)
    return prev


class _NumpyShapeScope:
    """``with``-scope that sets np-shape semantics and restores the previous state on exit."""

    def __init__(self, is_np_shape):
        self._enter_is_np_shape = bool(is_np_shape)
        self._prev_is_np_shape = None

    def __enter__(self):
        self._prev_is_np_shape = set_np_shape(self._enter_is_np_shape)
        return self

    def __exit__(self, *exc):
        if self._prev_is_np_shape != self._enter_is_np_shape:
            set_np_shape(self._prev_is_np_shape)


def np_shape(active=True):
    """Scope (also usable as a decorator) with NumPy shape semantics on (or off)."""
    return _NumpyShapeScope(active)


class _NumpyArrayScope:
    """``with``-scope for np-array semantics. ``_current`` holds, per thread, the innermost scope
    in ``value``; a thread that never entered one has np-array semantics off."""

    _current = threading.local()

    def __init__(self, is_np_array):
        self._is_np_array = bool(is_np_array)
        self._old_scope = None

    def __enter__(self):
        current = _NumpyArrayScope._current
        self._old_scope = getattr(current, "value", None) or _NumpyArrayScope(False)
        current.value = self
        return self

    def __exit__(self, *exc):
        _NumpyArrayScope._current.value = self._old_scope


def is_np_array():
    """Whether NumPy array semantics is on in this thread."""
    scope = getattr(_NumpyArrayScope._current, "value", None)
    return bool(scope._is_np_array) if scope is not None else False


def np_array(active=True):
    """Scope (also usable as a decorator) with NumPy array semantics on (or off)."""
    return _NumpyArrayScope(active)


def _set_np_array(active):
    prev = is_np_array()
    _NumpyArrayScope._current.value = _NumpyArrayScope(active)
    return prev


def _decorate(target, make_scope, name):
    """Runs a function, or every method and property of a class, inside ``make_scope()``."""
    if inspect.isclass(target):
        for attr, member in list(vars(target).items()):
            if isinstance(member, property):
                setattr(target, attr, property(
                    _decorate(member.fget, make_scope, name) if member.fget else None,
                    _decorate(member.fset, make_scope, name) if member.fset else None,
                    member.fdel, member.__doc__))
            elif inspect.isfunction(member):
                setattr(target, attr, _decorate(member, make_scope, name))
        return target
    if not callable(target):
        raise TypeError(f"{name} can only decorate a function or a class, got "
                        f"{type(target).__name__}")

    @functools.wraps(target)
    def wrapper(*args, **kwargs):
        with make_scope():
            return target(*args, **kwargs)
    return wrapper


def use_np_shape(func):
    """Decorator: ``func`` (or every method of a class) runs with NumPy shape semantics on."""
    return _decorate(func, lambda: np_shape(True), "use_np_shape")


def use_np_array(func):
    """Decorator: ``func`` (or every method of a class) runs with NumPy array semantics on."""
    return _decorate(func, lambda: np_array(True), "use_np_array")


def use_np(func):
    """Decorator: NumPy shape and array semantics on (``use_np_shape(use_np_array(func))``)."""
    return use_np_shape(use_np_array(func))


def set_np(shape=True, array=True):
    """Turns NumPy shape and/or array semantics on in this thread (off where False).

    ``shape=False, array=True`` raises ``ValueError``: array semantics needs shape semantics.
    """
    if array and not shape:
        raise ValueError("NumPy Shape semantics is required in using NumPy array semantics.")
    _set_np_array(array)
    set_np_shape(shape)


def reset_np():
    """Turns NumPy shape and array semantics off (MXNet 1.x behaviour)."""
    set_np(shape=False, array=False)


def getenv(name):
    """The value of environment variable ``name``, or None if it is unset."""
    return os.environ.get(name)


def setenv(name, value):
    """Sets environment variable ``name`` to ``value`` (None unsets it)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)
