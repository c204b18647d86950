"""Chainer-style gradient checkers (the API of Chainer 7's ``chainer.gradient_check``).

* :func:`numerical_grad` computes centred finite differences of a function over every element of
  its inputs.
* :func:`check_backward` compares the gradient that ferrograd's autograd computes with a finite
  difference **along one random direction** through all checked inputs and params at once. It
  costs one recorded forward/backward plus two (five with ``detect_nondifferentiable``) plain
  forwards, whatever the size of the inputs.
* :func:`check_double_backward` applies the same check to the first-order gradient (computed with
  ``create_graph=True``), which checks second derivatives w.r.t. the inputs and the output
  gradients.
* :func:`assert_allclose` is ``numpy.testing.assert_allclose`` with a longer failure report.

Functions under test receive ferrograd NDArrays and return an NDArray or a tuple/list of them.
Random directions come from NumPy's global generator, so ``numpy.random.seed`` makes a check
reproducible.
"""

import numpy as np

from . import autograd
from . import ndarray as nd
from ._ferrograd import NDArray

__all__ = ["NondifferentiableError", "assert_allclose", "numerical_grad", "check_backward",
           "check_double_backward"]


class NondifferentiableError(Exception):
    """The function is not differentiable at the point where a numeric gradient was asked for."""


# ----------------------------------------------------------------------------------------------
# small helpers


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _to_numpy(a):
    """A NumPy view of an array-like (an NDArray is copied out with its dtype)."""
    if isinstance(a, NDArray):
        return a.asnumpy()
    return np.asarray(a)


def _is_float(dtype):
    return np.dtype(dtype).kind == "f"


def _shape_dtype(a):
    return f"{a.shape}:{np.dtype(a.dtype).name}"


def _to_nd(a):
    """A fresh NDArray holding a copy of the NumPy array ``a``, keeping its dtype."""
    return nd.array(a, dtype=a.dtype)


def _assign(dst, value):
    """Overwrites every element of the NDArray ``dst`` with the NumPy array ``value``."""
    if dst.ndim == 0:
        dst[()] = value.item()
    else:
        dst[:] = value


def _same_training_mode():
    """Keeps the caller's training flag (Dropout/BatchNorm behave alike on both sides)."""
    return autograd.is_training()


# ----------------------------------------------------------------------------------------------
# assert_allclose


def _allclose_report(x, y, atol, rtol):
    lines = ["assert_allclose failed:", f"  shape: {x.shape} {y.shape}",
             f"  dtype: {x.dtype} {y.dtype}"]
    if x.shape == y.shape and x.dtype.kind in "biuf" and y.dtype.kind in "biuf":
        xf = x.astype(np.float64)
        yf = y.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(xf - yf)
            tol = atol + rtol * np.abs(yf)
            excess = err - tol
        both_nan = np.isnan(xf) & np.isnan(yf)
        excess = np.where(both_nan, -np.inf, np.where(np.isnan(excess), np.inf, excess))
        i = tuple(int(k) for k in np.unravel_index(int(np.argmax(excess)), x.shape)) \
            if x.size else None
        if i is not None:
            rel = "inf" if yf[i] == 0 else abs(err[i] / yf[i])
            lines += [f"  i: {i}", f"  x[i]: {x[i]}", f"  y[i]: {y[i]}",
                      f"  relative error[i]: {rel}", f"  absolute error[i]: {err[i]}",
                      f"  relative tolerance * |y[i]|: {rtol * abs(yf[i])}",
                      f"  absolute tolerance: {atol}", f"  total tolerance: {tol[i]}"]
    with np.printoptions(threshold=10000):
        lines += [f"x: {np.array2string(x)}", f"y: {np.array2string(y)}"]
    return "\n".join(lines)


def assert_allclose(x, y, atol=1e-5, rtol=1e-4, verbose=True):
    """Asserts ``|x - y| <= atol + rtol * |y|`` elementwise (NaN equals NaN).

    ``x`` and ``y`` may be NumPy arrays, NDArrays or scalars. On failure the ``AssertionError``
    carries NumPy's report followed by the shapes, dtypes, the worst element (its values, errors
    and tolerances) and both arrays in full.
    """
    x = _to_numpy(x)
    y = _to_numpy(y)
    try:
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, verbose=verbose)
    except AssertionError as e:
        raise AssertionError(f"{e}\n\n{_allclose_report(x, y, atol, rtol)}") from None


# ----------------------------------------------------------------------------------------------
# numerical_grad

_NONDIFF_HEADER = "Tried to compute the numeric gradient on a non-differentiable point."


def _eval_outputs(f, n_grads):
    """Calls ``f()`` and returns its outputs as float64 NumPy copies (None stays None)."""
    ys = _as_tuple(f())
    if len(ys) != n_grads:
        raise ValueError(f"numerical_grad: f returned {len(ys)} outputs but {n_grads} "
                         "grad_outputs were given")
    return [None if y is None else np.array(_to_numpy(y), dtype=np.float64) for y in ys]


def _residual_projector(ts):
    """The matrix that maps samples at points ``ts`` to the residuals of a least-squares
    quadratic fit."""
    a = np.vander(np.asarray(ts, dtype=np.float64), 3)
    return np.eye(len(ts)) - a @ np.linalg.pinv(a)


_FIVE_POINTS = (-1.0, -0.5, 0.0, 0.5, 1.0)
_PROJECTOR = _residual_projector(_FIVE_POINTS)
_SAMPLE_NAMES = ("x-eps    ", "x-eps/2  ", "x        ", "x+eps/2  ", "x+eps    ")


def _check_differentiable(samples, i_in, i_out, x, index, eps, diff_atol, diff_rtol):
    """Raises NondifferentiableError if the 5 samples of output ``i_out`` are not smooth."""
    shape = samples[0].shape
    ys = np.stack([s.reshape(-1) for s in samples])  # (5, number of output elements)
    finite = np.isfinite(ys)

    def fail(extra):
        lines = [_NONDIFF_HEADER, "", f"i_in: {i_in}", f"i_out: {i_out}", f"x: {x}",
                 f"index on x: {index}", f"eps: {eps}"] + extra
        lines += [f"y[{name}]: {s}" for name, s in zip(_SAMPLE_NAMES, samples, strict=True)]
        raise NondifferentiableError("\n".join(lines))

    if np.any(finite.any(axis=0) != finite.all(axis=0)):
        fail(["Some outputs are finite at some sample points and non-finite at others."])
    usable = finite.all(axis=0)
    ys = np.where(usable, ys, 0.0)
    ymax = ys.max(axis=0)
    ymin = ys.min(axis=0)
    rms = np.sqrt(np.sum((_PROJECTOR @ ys) ** 2, axis=0) / len(_FIVE_POINTS))
    tol = diff_atol + diff_rtol * (ymax - ymin)
    if np.any((rms > tol) & (ymax != ymin) & usable):
        fail([f"diff_rtol: {diff_rtol}", f"diff_atol: {diff_atol}",
              f"ymax: {ymax.reshape(shape)}", f"ymin: {ymin.reshape(shape)}",
              f"diff_atol + diff_rtol * (ymax-ymin): {tol.reshape(shape)}",
              f"fitting errors: {rms.reshape(shape)}"])


class _ElementWriter:
    """Reads the original values of one input once and writes single elements in place."""

    def __init__(self, x):
        self.x = x
        self.is_nd = isinstance(x, NDArray)
        self.dtype = np.dtype(x.dtype)
        self.original = x.asnumpy() if self.is_nd else x.copy()

    def set(self, index, value):
        value = self.dtype.type(value)
        self.x[index] = float(value) if self.is_nd else value


def numerical_grad(f, inputs, grad_outputs, eps=1e-3, detect_nondifferentiable=False,
                   diff_atol=0, diff_rtol=1e-2, center_outputs=None):
    """Numeric gradients of ``sum_j <f()_j, grad_outputs_j>`` w.r.t. every element of ``inputs``.

    ``f`` takes no arguments: it reads ``inputs`` (float NumPy arrays or NDArrays) by closure.
    Each input element is moved to ``x ± eps`` in place (and restored), and the centred
    difference ``(y(x+eps) - y(x-eps)) / (2 eps)`` is taken. ``f`` returns an array or a
    tuple/list of arrays (NDArray or NumPy); ``grad_outputs`` has one entry per output: an array,
    a scalar, or None to skip that output. ``f`` runs with recording paused.

    With ``detect_nondifferentiable=True`` five points ``x + {-eps, -eps/2, 0, eps/2, eps}`` are
    used (a fourth-order stencil), and :class:`NondifferentiableError` is raised when an output
    element is finite at some points and not at others, or when the RMS residual of a quadratic
    fit to its five samples exceeds ``diff_atol + diff_rtol * (ymax - ymin)`` (constant outputs
    are exempt). ``center_outputs`` is accepted for compatibility and ignored.

    Returns a list with one gradient per input, of that input's dtype (a NumPy array for a NumPy
    input, an NDArray for an NDArray input). A non-float input raises ``RuntimeError``; a
    non-positive ``eps`` raises ``ValueError``.
    """
    del center_outputs  # ignored, as in Chainer 7
    if not eps > 0:
        raise ValueError(f"numerical_grad: eps must be positive, got {eps}")
    inputs = _as_tuple(inputs)
    for x in inputs:
        if not _is_float(x.dtype):
            raise RuntimeError("The dtype of input arrays must be kind of float")
    gys = [None if g is None else np.asarray(_to_numpy(g), dtype=np.float64)
           for g in _as_tuple(grad_outputs)]
    if detect_nondifferentiable:
        deltas = [t * eps for t in _FIVE_POINTS]
        weights = [1.0, -8.0, 0.0, 8.0, -1.0]
        denominator = 6.0 * eps
    else:
        deltas = [-eps, eps]
        weights = [-1.0, 1.0]
        denominator = 2.0 * eps

    grads = []
    with autograd.pause(train_mode=_same_training_mode()):
        for i_in, x in enumerate(inputs):
            writer = _ElementWriter(x)
            gx = np.zeros(x.shape, dtype=np.float64)
            for index in np.ndindex(*x.shape):
                orig = np.float64(writer.original[index])
                samples = []
                try:
                    for delta in deltas:
                        writer.set(index, orig + delta)
                        samples.append(_eval_outputs(f, len(gys)))
                finally:
                    writer.set(index, orig)
                total = 0.0
                for i_out, gy in enumerate(gys):
                    if gy is None or samples[0][i_out] is None:
                        continue
                    outs = [s[i_out] for s in samples]
                    if detect_nondifferentiable:
                        _check_differentiable(outs, i_in, i_out, writer.original, index, eps,
                                              diff_atol, diff_rtol)
                    dy = sum(w * y for w, y in zip(weights, outs, strict=True) if w != 0)
                    total += float(np.sum(dy * gy))
                gx[index] = total / denominator
            grads.append(_to_nd(gx.astype(writer.dtype)) if writer.is_nd
                         else gx.astype(writer.dtype))
    return grads


# ----------------------------------------------------------------------------------------------
# check_backward


def _prepare_inputs(x_data):
    return tuple(np.array(_to_numpy(x)) for x in _as_tuple(x_data))


def _prepare_params(params):
    if params is None:
        return ()
    params = _as_tuple(params)
    for j, p in enumerate(params):
        if not isinstance(p, NDArray):
            raise TypeError(f"params[{j}] must be an NDArray that func reads by closure, got "
                            f"{type(p).__name__}")
        if not _is_float(p.dtype):
            raise ValueError(f"params[{j}] must have a float dtype, got {np.dtype(p.dtype)}")
    return params


def _resolve_no_grads(no_grads, xs):
    if no_grads is None:
        return [not _is_float(x.dtype) for x in xs]
    no_grads = list(no_grads)
    if len(no_grads) != len(xs):
        raise ValueError("Length of no_grads param and xs should be same.\n"
                         f"Actual: {len(no_grads)} != {len(xs)}")
    for i, (skip, x) in enumerate(zip(no_grads, xs, strict=True)):
        if not skip and not _is_float(x.dtype):
            raise ValueError(f"inputs[{i}] has dtype {x.dtype}, which cannot be differentiated; "
                             f"set no_grads[{i}] = True")
    return [bool(s) for s in no_grads]


def _check_outputs(ys):
    for i, y in enumerate(ys):
        if y is not None and not isinstance(y, NDArray):
            raise TypeError(f"func must return NDArrays (or None); output {i} is a "
                            f"{type(y).__name__}")


def _is_loss(ys):
    return len(ys) == 1 and ys[0] is not None and ys[0].size == 1 and ys[0].ndim <= 1


def _resolve_grad_outputs(ys, y_grad):
    """Validates ``y_grad`` against the outputs; returns NumPy gradients (None drops an output)."""
    if y_grad is None:
        if not _is_loss(ys):
            shapes = ", ".join(str(None if y is None else y.shape) for y in ys)
            raise ValueError("y_grad argument cannot be omitted if the target function is not a "
                             "loss function, which has a single output with shape ().\n"
                             f"Actual output shapes: {shapes}")
        return [np.ones(ys[0].shape, dtype=np.dtype(ys[0].dtype))], True
    gys = [None if g is None else np.array(_to_numpy(g)) for g in _as_tuple(y_grad)]
    if len(gys) != len(ys):
        raise ValueError("Output gradients must contain equally as many elements as the number "
                         "of output elements.\n"
                         f"Output gradient count: {len(gys)}\nOutput count: {len(ys)}")
    pairs = [(y, g) for y, g in zip(ys, gys, strict=True) if y is not None and g is not None]
    if any(y.shape != g.shape or np.dtype(y.dtype) != g.dtype for y, g in pairs):
        raise ValueError("Shapes and/or dtypes of outputs and output gradients do not match.\n"
                         "Output shapes and dtypes         : "
                         + ", ".join(_shape_dtype(y) for y, _ in pairs) + "\n"
                         "Output gradient shapes and dtypes: "
                         + ", ".join(_shape_dtype(g) for _, g in pairs))
    return [None if y is None else g for y, g in zip(ys, gys, strict=True)], False


def _random_directions(shapes):
    """One random unit vector over all arrays, with every |d_i| >= 0.1/sqrt(n)."""
    sizes = [int(np.prod(s)) for s in shapes]
    n = sum(sizes)
    if n == 0:
        return [np.zeros(s) for s in shapes]
    raw = np.random.normal(size=n)
    sign = np.where(raw >= 0, 1.0, -1.0)
    flat = sign * np.sqrt(0.99 * raw * raw / np.sum(raw * raw) + 0.01 / n)
    return [d.reshape(s) for d, s in zip(np.split(flat, np.cumsum(sizes)[:-1]), shapes,
                                         strict=True)]


def _analytic_gradients(func, xs, no_grads, params, y_grad, training):
    """Runs func under record and backward; returns (gradients of checked arrays, gys)."""
    x_vars = [_to_nd(x) for x in xs]
    for v in x_vars:
        if _is_float(v.dtype):  # no_grads floats too: a gradient reaching them is an error
            v.attach_grad()
    for p in params:
        p.attach_grad()
    with autograd.record(train_mode=training):
        ys = _as_tuple(func(*x_vars))
    _check_outputs(ys)
    gys, implicit = _resolve_grad_outputs(ys, y_grad)
    heads = [y for y, g in zip(ys, gys, strict=True) if g is not None]
    if heads:
        head_grads = [None] if implicit else [_to_nd(g) for g in gys if g is not None]
        autograd.backward(heads, head_grads, train_mode=training)

    def grad_of(v):
        return np.zeros(v.shape) if v.grad is None else v.grad.asnumpy().astype(np.float64)

    for i, (v, skip) in enumerate(zip(x_vars, no_grads, strict=True)):
        if skip and v.grad is not None and np.any(v.grad.asnumpy() != 0):
            raise RuntimeError(
                f"gradient of a no_grads input must be None: inputs[{i}] is marked "
                "no_grads=True but backward gave it a non-zero gradient (Chainer: 'gradient "
                "of int variable must be None')")
    grads = [grad_of(v) for v, skip in zip(x_vars, no_grads, strict=True) if not skip]
    grads += [grad_of(p) for p in params]
    return grads, gys


def _numeric_directional(func, xs, no_grads, params, directions, gys, eps, dtype, detect, rtol):
    """The finite-difference derivative of ``<func(x + t d), gys>`` at t = 0 (a float)."""
    it = iter(directions)
    x_dirs = [None if skip else next(it) for skip in no_grads]
    p_dirs = [next(it) for _ in params]
    p_orig = [p.asnumpy() for p in params]
    delta = np.zeros((), dtype=np.float64)

    def cast(x):
        return x.dtype if dtype is None or not _is_float(x.dtype) else np.dtype(dtype)

    def g():
        t = delta[()]
        args = [_to_nd(x.astype(cast(x)) if d is None else
                       (x.astype(np.float64) + t * d).astype(cast(x)))
                for x, d in zip(xs, x_dirs, strict=True)]
        for p, p0, d in zip(params, p_orig, p_dirs, strict=True):
            _assign(p, (p0.astype(np.float64) + t * d).astype(p0.dtype))
        try:
            return _as_tuple(func(*args))
        finally:
            for p, p0 in zip(params, p_orig, strict=True):
                _assign(p, p0)

    try:
        (gx,) = numerical_grad(g, (delta,), gys, eps=eps, detect_nondifferentiable=detect,
                               diff_atol=0, diff_rtol=rtol)
    finally:
        with autograd.pause(train_mode=_same_training_mode()):
            for p, p0 in zip(params, p_orig, strict=True):
                _assign(p, p0)
    return float(gx)


def _backward_failure(e, eps, atol, rtol, xs, gys, directions, numeric, analytic):
    lines = [f"check_backward failed (eps={eps} atol={atol} rtol={rtol})"]
    for i, x in enumerate(xs):
        lines += [f"inputs[{i}]:", f"{x}"]
    for i, gy in enumerate(gys):
        lines += [f"grad_outputs[{i}]:", f"{gy}"]
    for i, d in enumerate(directions):
        lines += [f"directions[{i}]:", f"{d}"]
    lines += [f"gradients (numeric):  {numeric}", f"gradients (backward): {analytic}", "",
              "x: numeric gradient, y: backward gradient", str(e)]
    return "\n".join(lines)


def check_backward(func, x_data, y_grad, params=(), eps=1e-3, atol=1e-5, rtol=1e-4,
                   no_grads=None, dtype=None, detect_nondifferentiable=False):
    """Checks the autograd gradient of ``func`` against a finite difference.

    ``func(*xs)`` receives NDArrays (copies of ``x_data``, a single array or a tuple of NumPy
    arrays / NDArrays, dtypes kept) and returns an NDArray or a tuple/list of NDArrays (None
    entries allowed). ``y_grad`` holds one output gradient per output, of the same shape and
    dtype (None for an output drops it from the check). ``y_grad=None`` is allowed only for a
    loss: a single output with one element, of shape ``()`` or ``(1,)`` (MXNet 1.x reductions
    return ``(1,)``); its gradient is then 1.

    ``params`` are NDArrays that ``func`` reads by closure. They are checked too: the checker
    attaches gradients to them (they are left attached, holding the analytic gradient),
    perturbs them in place and restores their values exactly.

    One random unit direction ``d`` over every checked input and param is drawn (NumPy's global
    generator; ``|d_i| >= 0.1/sqrt(n)``). The analytic side is ``sum(grad * d)`` from one recorded
    forward and ``autograd.backward``; the numeric side is :func:`numerical_grad` of
    ``<func(x + t d), y_grad>`` in the scalar ``t`` (perturbation in float64, then cast to each
    input's dtype, or to ``dtype`` for every float input when given). The two scalars are
    compared with :func:`assert_allclose` (``atol``, ``rtol``); a mismatch raises
    ``AssertionError`` listing inputs, output gradients, directions and both gradients. Both
    sides run in the caller's training mode (``autograd.is_training()``).

    Integer inputs are skipped. ``no_grads`` (one bool per input) excludes inputs from the check;
    a float input marked ``True`` still gets a gradient buffer, and ``RuntimeError`` is raised if
    backward writes a non-zero gradient into it (Chainer raises when such an input receives any
    gradient). ``detect_nondifferentiable`` makes the numeric side raise
    :class:`NondifferentiableError` at a kink (with ``diff_rtol=rtol``).
    """
    if dtype is not None and not _is_float(dtype):
        raise ValueError("`dtype` is allowed only float type")
    xs = _prepare_inputs(x_data)
    params = _prepare_params(params)
    no_grads = _resolve_no_grads(no_grads, xs)
    if all(no_grads) and not params:
        raise ValueError("check_backward: nothing to check: every input is an integer or marked "
                         "in no_grads, and there are no params")
    training = _same_training_mode()
    grads, gys = _analytic_gradients(func, xs, no_grads, params, y_grad, training)
    shapes = [x.shape for x, skip in zip(xs, no_grads, strict=True) if not skip]
    directions = _random_directions(shapes + [p.shape for p in params])
    analytic = sum(float(np.sum(g * d)) for g, d in zip(grads, directions, strict=True))
    numeric = _numeric_directional(func, xs, no_grads, params, directions, gys, eps, dtype,
                                   detect_nondifferentiable, rtol)
    try:
        assert_allclose(numeric, analytic, atol=atol, rtol=rtol)
    except AssertionError as e:
        raise AssertionError(_backward_failure(e, eps, atol, rtol, xs, gys, directions, numeric,
                                               analytic)) from None


# ----------------------------------------------------------------------------------------------
# check_double_backward


def _double_backward_y_grad(func, xs, y_grad):
    if y_grad is not None:
        if any(g is None for g in _as_tuple(y_grad)):
            raise ValueError("check_double_backward: y_grad entries cannot be None (the output "
                             "gradients are inputs of the first-order gradient)")
        return _prepare_inputs(y_grad)
    with autograd.pause(train_mode=_same_training_mode()):
        ys = _as_tuple(func(*[_to_nd(x) for x in xs]))
    _check_outputs(ys)
    (gy,), _ = _resolve_grad_outputs(ys, None)
    return (gy,)


def check_double_backward(func, x_data, y_grad, x_grad_grad, params=(), params_grad_grad=(),
                          eps=1e-3, atol=1e-4, rtol=1e-3, no_grads=None, dtype=None,
                          detect_nondifferentiable=False):
    """Checks second derivatives of ``func`` (its first-order gradient must already be right).

    The first-order gradient ``first_order_grad(*xs, *gys)`` runs ``func`` under record and
    returns ``autograd.grad(ys, [float xs] + params, head_grads=gys, create_graph=True)``. It is
    then passed to :func:`check_backward` with inputs ``xs + y_grad``, output gradients
    ``x_grad_grad + params_grad_grad`` (one per float input, then one per param) and the same
    ``params``, so second derivatives are checked w.r.t. the inputs, the output gradients and the
    params along one random direction. Arguments are as in :func:`check_backward`; ``no_grads``
    has one entry per input and then one per output gradient. ``y_grad=None`` is allowed for a
    single one-element output (its gradient is then ones and is checked too).

    A mismatch raises ``AssertionError`` starting with ``check_double_backward failed`` and the
    inputs, output gradients and grad-grads, followed by the :func:`check_backward` report.
    """
    xs = _prepare_inputs(x_data)
    params = _prepare_params(params)
    gys = _double_backward_y_grad(func, xs, y_grad)
    ggxs = _as_tuple(x_grad_grad)
    ggps = _as_tuple(params_grad_grad) if params_grad_grad is not None else ()
    n_x = len(xs)
    differentiable = [_is_float(x.dtype) for x in xs]
    training = _same_training_mode()

    def first_order_grad(*args):
        x_args, gy_args = args[:n_x], args[n_x:]
        variables = [x for x, ok in zip(x_args, differentiable, strict=True) if ok]
        variables += list(params)
        for v in variables:
            if v.grad is None:  # the numeric side passes fresh, unmarked arrays
                v.attach_grad()
        with autograd.record(train_mode=training):
            ys = _as_tuple(func(*x_args))
            _check_outputs(ys)
            if len(ys) != len(gy_args) or any(y.shape != gy.shape
                                               for y, gy in zip(ys, gy_args, strict=True)):
                raise ValueError(
                    "check_double_backward: the output gradients do not match the outputs.\n"
                    f"Output shapes         : {[y.shape for y in ys]}\n"
                    f"Output gradient shapes: {[gy.shape for gy in gy_args]}")
            heads = [gy if gy.dtype == y.dtype else gy.astype(y.dtype)
                     for y, gy in zip(ys, gy_args, strict=True)]
        return tuple(autograd.grad(list(ys), variables, head_grads=heads, create_graph=True,
                                   train_mode=training))

    try:
        check_backward(first_order_grad, xs + gys, ggxs + ggps, params=params, eps=eps,
                       atol=atol, rtol=rtol, no_grads=no_grads, dtype=dtype,
                       detect_nondifferentiable=detect_nondifferentiable)
    except AssertionError as e:
        lines = [f"check_double_backward failed (eps={eps} atol={atol} rtol={rtol})"]
        for name, arrays in (("input", xs), ("grad_output", gys), ("grad_grad_input", ggxs),
                             ("grad_grad_param", ggps)):
            for i, a in enumerate(arrays):
                lines += [f"{name}[{i}]:", f"{_to_numpy(a)}"]
        lines += ["", str(e)]
        raise AssertionError("\n".join(lines)) from None
