"""Starting gradient allreduces during backward.

The tape calls one process-wide hook (``_ferrograd._ag_set_grad_ready_hook``) with each
gradient buffer and its variable's id as soon as backward has finished that gradient. Stores
register the variables they reduce here (``watch``); a watched gradient is submitted to its
reducer at once, so its bucket's allreduce overlaps the rest of backward.
"""

import threading
import weakref

from .. import _ferrograd

_watched = {}  # variable id -> (weakref to the owner, key)
_lock = threading.Lock()
_installed = {"on": False}


def supported():
    """Whether this build of the extension has the grad-ready hook."""
    return hasattr(_ferrograd, "_ag_set_grad_ready_hook")


def variable_id(array):
    """The tape's id of a marked variable (a Parameter's data array), or None."""
    return _ferrograd._ag_variable_id(array)


def _on_grad_ready(grad, var_id):
    entry = _watched.get(var_id)
    if entry is None:
        return
    owner = entry[0]()
    if owner is not None:
        owner._gradient_ready(entry[1], grad)


def watch(owner, arrays_by_key):
    """Routes the gradients of ``arrays_by_key`` (key -> marked NDArray) to
    ``owner._gradient_ready(key, grad)`` during backward. Returns the keys watched."""
    keys = []
    with _lock:
        for key, array in arrays_by_key.items():
            vid = variable_id(array)
            if vid is not None:
                _watched[vid] = (weakref.ref(owner), key)
                keys.append(key)
        if keys and not _installed["on"]:
            _ferrograd._ag_set_grad_ready_hook(_on_grad_ready)
            _installed["on"] = True
    return keys


def unwatch(owner):
    """Stops routing gradients to ``owner``; removes the hook when nothing is watched."""
    with _lock:
        for vid in [v for v, (ref, _) in _watched.items() if ref() in (owner, None)]:
            del _watched[vid]
        if not _watched and _installed["on"]:
            _ferrograd._ag_set_grad_ready_hook(None)
            _installed["on"] = False
