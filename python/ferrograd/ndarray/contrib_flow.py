"""Imperative control flow of ``mx.nd.contrib``: ``foreach``, ``while_loop`` and ``cond``.

On NDArrays these run the user's Python functions step by step; every operation inside is
recorded by autograd as usual, so gradients flow through the loop without a special operator.
"""

from ..base import MXNetError, ValueError_


def _flatten(value, what):
    """``(list of NDArrays, was a single NDArray)`` of an NDArray or a list/tuple of them."""
    from .._ferrograd import NDArray
    if isinstance(value, NDArray):
        return [value], True
    if isinstance(value, (list, tuple)) and all(isinstance(v, NDArray) for v in value):
        return list(value), False
    raise TypeError(f"{what} must be an NDArray or a list of NDArrays, got {type(value).__name__}")


def _unflatten(values, single):
    return values[0] if single else values


def foreach(body, data, init_states):
    """Runs ``body(slice, states) -> (outputs, new_states)`` over axis 0 of ``data`` (an NDArray
    or a list of NDArrays of one length), threading the states through. Returns the outputs of
    every step stacked on a new axis 0, and the final states, each shaped as ``body`` and
    ``init_states`` gave them (a single NDArray or a list)."""
    from . import stack
    datas, data_single = _flatten(data, "foreach: data")
    states, states_single = _flatten(init_states, "foreach: init_states")
    lengths = {d.shape[0] if d.ndim else None for d in datas}
    if len(lengths) != 1 or None in lengths:
        raise ValueError_("foreach: every data array needs the same length along axis 0, got "
                          f"shapes {[d.shape for d in datas]}")
    steps, out_single, outputs = lengths.pop(), True, []
    for i in range(steps):
        sl = _unflatten([d[i] for d in datas], data_single)
        out, new_states = body(sl, _unflatten(states, states_single))
        out, out_single = _flatten(out, "foreach: the body's outputs")
        new_states, _ = _flatten(new_states, "foreach: the body's new states")
        if len(new_states) != len(states):
            raise ValueError_(f"foreach: the body returned {len(new_states)} states for "
                              f"{len(states)} initial states")
        outputs.append(out)
        states = new_states
    if not outputs:
        raise ValueError_("foreach: data has length 0 along axis 0: no outputs to stack")
    _check_counts(outputs, "foreach: the body")
    stacked = [stack(*column, axis=0) for column in zip(*outputs, strict=True)]
    return _unflatten(stacked, out_single), _unflatten(states, states_single)


def _check_counts(outputs, what):
    counts = {len(o) for o in outputs}
    if len(counts) > 1:
        raise ValueError_(f"{what} returned different numbers of outputs across steps: "
                          f"{sorted(counts)}")


def _truth(pred, what):
    from .._ferrograd import NDArray
    if isinstance(pred, NDArray):
        if pred.size != 1:
            raise ValueError_(f"{what} must give one element, got shape {pred.shape}")
        return bool(pred.asscalar())
    return bool(pred)


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Runs ``func(*loop_vars) -> (step_outputs, new_loop_vars)`` while ``cond(*loop_vars)``
    holds, at most ``max_iterations`` times. Returns the step outputs stacked on a new axis 0 and
    padded with zeros to ``max_iterations`` rows (MXNet leaves the padding uninitialised), and the
    final loop variables."""
    from . import concat, stack, zeros
    if max_iterations is None:
        raise ValueError_("while_loop: max_iterations should be specified")
    max_iterations = int(max_iterations)
    if max_iterations < 0:
        raise ValueError_(f"while_loop: max_iterations must be >= 0, got {max_iterations}")
    loop_vars, vars_single = _flatten(loop_vars, "while_loop: loop_vars")
    outputs, out_single = [], False
    for _ in range(max_iterations):
        if not _truth(cond(*loop_vars), "while_loop: cond"):
            break
        out, new_vars = func(*loop_vars)
        out, out_single = _flatten([] if out is None else out, "while_loop: func's step outputs")
        new_vars, _ = _flatten(new_vars, "while_loop: func's new loop variables")
        if len(new_vars) != len(loop_vars):
            raise ValueError_(f"while_loop: func returned {len(new_vars)} loop variables for "
                              f"{len(loop_vars)}")
        for old, new in zip(loop_vars, new_vars, strict=True):
            if old.shape != new.shape:
                raise MXNetError(f"while_loop: a loop variable changed shape from {old.shape} to "
                                 f"{new.shape}")
        outputs.append(out)
        loop_vars = new_vars
    _check_counts(outputs, "while_loop: func")
    stacked = []
    for column in zip(*outputs, strict=True):
        s = stack(*column, axis=0)
        pad = max_iterations - len(column)
        if pad:
            s = concat(s, zeros((pad,) + column[0].shape, dtype=column[0].dtype), dim=0)
        stacked.append(s)
    outputs = _unflatten(stacked, out_single) if stacked else stacked
    return outputs, _unflatten(loop_vars, vars_single)


def cond(pred, then_func, else_func):
    """``then_func()`` if ``pred`` (a one-element NDArray) is nonzero, else ``else_func()``."""
    return then_func() if _truth(pred, "cond: pred") else else_func()
