"""``mx.contrib.autograd``: MXNet's first, legacy autograd API, on :mod:`ferrograd.autograd`.

Here one flag does two jobs: ``set_is_training(True)`` and ``train_section()`` turn on both
recording and training mode, ``test_section()`` turns both off. ``grad_and_loss(func)`` wraps a
function of NDArrays into one returning ``(gradients, outputs)``.

Like MXNet's module it has no ``__all__``: ``from mxnet.contrib.autograd import *`` gives the
public names below (including ``test_section``, which pytest therefore collects as a test).
"""

import functools

from .. import autograd as _autograd
from .._ferrograd import NDArray
from ..base import check_call, string_types  # noqa: F401 - star-exported, as MXNet's module
from ..ndarray import array, zeros_like  # noqa: F401


def set_is_training(is_train):
    """Sets recording and training mode together; returns the previous recording state."""
    _autograd.set_training(is_train)
    return _autograd.set_recording(is_train)


class TrainingStateScope:
    """Scope that sets recording + training to ``enter_state`` and restores them on exit."""

    def __init__(self, enter_state):
        self._enter_state = bool(enter_state)
        self._prev_recording = None
        self._prev_training = None

    def __enter__(self):
        self._prev_training = _autograd.set_training(self._enter_state)
        self._prev_recording = _autograd.set_recording(self._enter_state)
        return self

    def __exit__(self, *exc):
        _autograd.set_recording(self._prev_recording)
        _autograd.set_training(self._prev_training)


def train_section():
    """Scope in which operations are recorded, in training mode (``with train_section():``)."""
    return TrainingStateScope(True)


def test_section():
    """Scope with recording and training mode off, e.g. inside a ``train_section``."""
    return TrainingStateScope(False)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Marks NDArrays as variables whose gradients are written into ``gradients``."""
    _autograd.mark_variables(variables, gradients, grad_reqs)


def backward(outputs, out_grads=None, retain_graph=False):
    """Backpropagates from ``outputs`` (an NDArray or a list) with head gradients
    ``out_grads`` (None means ones) into the marked variables."""
    _autograd.backward(outputs, out_grads, retain_graph=retain_graph)


def compute_gradient(outputs):
    """Backpropagates from ``outputs`` with head gradients of ones (``backward(outputs)``)."""
    backward(outputs)


def _chosen(args, argnum):
    if argnum is None:
        return list(args)
    positions = argnum if isinstance(argnum, list) else [argnum]
    return [args[i] for i in positions]


def grad_and_loss(func, argnum=None):
    """Wraps ``func`` so that calling it returns ``(gradients, outputs)``: the gradients of its
    outputs with respect to the arguments at positions ``argnum`` (an int, a list, or None for
    all), which must be NDArrays, and what ``func`` returned."""

    @functools.wraps(func)
    def wrapped(*args):
        variables = _chosen(args, argnum)
        for i, v in enumerate(variables):
            if not isinstance(v, NDArray):
                raise TypeError(f"grad_and_loss: argument {i} to differentiate must be an "
                                f"NDArray, got {type(v).__name__}")
        grads = [zeros_like(v) for v in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs

    return wrapped


def grad(func, argnum=None):
    """Like :func:`grad_and_loss`, but the wrapped function returns only the gradients."""
    with_loss = grad_and_loss(func, argnum)

    @functools.wraps(with_loss)
    def wrapped(*args):
        return with_loss(*args)[0]

    return wrapped
