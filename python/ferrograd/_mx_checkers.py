"""MXNet's symbolic checkers (``mx.test_utils`` §4.4): forward, backward and numeric gradients of a
Symbol, and consistency across contexts/dtypes.

The finite differences run natively (``Executor.numeric_grad`` in Rust: perturbation, forward and
reduction per element, in parallel over perturbations, on private copies of the arrays), so a
check costs no Python per perturbation.
"""

import numpy as np

from . import ndarray as nd
from . import symbol as _sym
from ._mx_compare import assert_almost_equal, default_context, default_numeric_eps, get_tols

__all__ = ["simple_forward", "check_symbolic_forward", "check_symbolic_backward", "numeric_grad",
           "check_numeric_gradient", "check_consistency"]

_FLOATS = (np.float16, np.float32, np.float64)


def _np(x):
    return x.asnumpy() if isinstance(x, nd.NDArray) else np.asarray(x)


def _as_nd(v, ctx, dtype):
    """An NDArray of ``v`` (``dtype='asnumpy'`` keeps its own dtype)."""
    if isinstance(v, nd.NDArray):
        return v if dtype == "asnumpy" else v.astype(dtype)
    v = np.asarray(v)
    return nd.array(v, ctx, dtype=v.dtype if dtype == "asnumpy" else dtype)


def _named_arrays(values, names, ctx, dtype, mismatch):
    """``{name: NDArray}`` from a list in ``names`` order or a dict with exactly ``names``."""
    if isinstance(values, dict):
        if set(values) != set(names):
            raise ValueError(mismatch(set(names), set(values)))
    else:
        values = dict(zip(names, values, strict=True))
    return {k: _as_nd(v, ctx, dtype) for k, v in values.items()}


def _parse_location(sym, location, ctx, dtype=np.float32):
    """The arguments' values (a list in argument order, or a dict with exactly the arguments)."""
    assert dtype == "asnumpy" or np.dtype(dtype).type in _FLOATS, dtype
    return _named_arrays(location, sym.list_arguments(), ctx, dtype, lambda want, got: (
        "Symbol arguments and keys of the given location do not match."
        f"symbol args:{want}, location.keys():{got}"))


def _parse_aux_states(sym, aux_states, ctx, dtype=np.float32):
    if aux_states is None:
        return None
    return _named_arrays(aux_states, sym.list_auxiliary_states(), ctx, dtype, lambda want, got: (
        "Symbol aux_states names and given aux_states do not match."
        f"symbol aux_names:{want}, aux_states.keys:{got}"))


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Binds NumPy inputs, runs forward; one output as a NumPy array, several as a list."""
    ctx = ctx or default_context()
    exe = sym.bind(ctx, {k: nd.array(v) for k, v in inputs.items()})
    outputs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    return outputs[0] if len(outputs) == 1 else outputs


def _by_output(sym, values, what):
    if isinstance(values, dict):
        return [values[k] for k in sym.list_outputs()]
    if len(values) != len(sym.list_outputs()):
        raise ValueError(f"{what}: {len(values)} given for outputs {sym.list_outputs()}")
    return list(values)


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32):
    """Compares ``sym``'s forward outputs (``is_train=False``) with ``expected`` (list or dict
    by output name); returns the outputs."""
    ctx = ctx or default_context()
    loc = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    args_grad = {k: nd.zeros(v.shape, ctx, dtype=v.dtype) for k, v in loc.items()}
    exe = sym.bind(ctx, loc, args_grad=args_grad, aux_states=aux)
    outputs = exe.forward(is_train=False)
    for name, want, got in zip(sym.list_outputs(), _by_output(sym, expected, "expected"),
                               outputs, strict=True):
        assert_almost_equal(_np(want), got.asnumpy(), rtol, atol,
                            names=(f"EXPECTED_{name}", f"FORWARD_{name}"), equal_nan=equal_nan)
    return outputs


def _grad_reqs(names, grad_req):
    if isinstance(grad_req, str):
        return dict.fromkeys(names, grad_req)
    if isinstance(grad_req, (list, tuple)):
        return dict(zip(names, grad_req, strict=True))
    return dict(grad_req)


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """Runs forward (training) and backward with ``out_grads`` and compares the gradients of the
    arguments in ``expected`` (list in argument order, or a partial dict). Gradient buffers start
    random, so 'add' is checked as ``expected == grad - initial`` and 'null' as untouched.
    ``grad_stypes`` (name -> 'row_sparse'/'csr'/'default') gives a gradient's storage type: such
    a buffer starts empty (zeros) and is returned as an array of that storage type."""
    ctx = ctx or default_context()
    loc = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    names = sym.list_arguments()
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(names, expected, strict=True))
    rng = np.random.default_rng()
    from .ndarray.sparse_storage import check_stype, sparse_view
    stypes = {k: check_stype(v, "check_symbolic_backward") for k, v in (grad_stypes or {}).items()}
    initial = {k: (np.zeros(loc[k].shape, loc[k].dtype) if stypes.get(k, "default") != "default"
                   else rng.normal(size=loc[k].shape).astype(loc[k].dtype)) for k in expected}
    grads = {k: nd.array(v, ctx, dtype=v.dtype) for k, v in initial.items()}
    reqs = _grad_reqs(names, grad_req)
    exe = sym.bind(ctx, loc, args_grad=grads, grad_req=reqs, aux_states=aux)
    exe.forward(is_train=True)
    if out_grads is not None:
        if isinstance(out_grads, dict):
            out_grads = [out_grads[k] for k in sym.list_outputs()]
        elif not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        out_grads = [None if g is None else _as_nd(g, ctx, dtype) for g in out_grads]
    exe.backward(out_grads)
    for name, want in expected.items():
        got = grads[name].asnumpy()
        req = reqs.get(name, "null")
        labels = (f"EXPECTED_{name}", f"BACKWARD_{name}")
        if req == "write":
            assert_almost_equal(_np(want), got, rtol, atol, names=labels, equal_nan=equal_nan)
        elif req == "add":
            assert_almost_equal(_np(want), got - initial[name], rtol, atol, names=labels,
                                equal_nan=equal_nan)
        elif req == "null":
            assert_almost_equal(initial[name], got, rtol, atol, names=labels,
                                equal_nan=equal_nan)
        else:
            raise ValueError(f"Invalid grad_req {req} for argument {name}")
    return {k: sparse_view(g, stypes.get(k, "default")) for k, g in grads.items()}


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=np.float32):
    """Central differences of ``sum(outputs[0])`` for every float argument in ``location``
    (a dict name -> array): ``sum(f(x + eps/2) - f(x - eps/2)) / eps`` per element, differencing
    the unsummed output before summing (as MXNet does). The arrays are
    copied into the executor first; aux states are reset before every forward. Returns
    ``{name: numpy array}`` (integer arguments are skipped)."""
    names = executor._symbol.list_arguments()
    # NumPy values are converted in the executor's dtype (nd.array alone would round float64
    # locations to float32).
    for k, v in location.items():
        dst = executor.arg_dict[k]
        dst[:] = v if isinstance(v, nd.NDArray) else nd.array(np.asarray(v), dtype=dst.dtype)
    for k, v in (aux_states or {}).items():
        dst = executor.aux_dict[k]
        dst[:] = v if isinstance(v, nd.NDArray) else nd.array(np.asarray(v), dtype=dst.dtype)
    targets = [names.index(k) for k in location
               if np.dtype(executor.arg_dict[k].dtype).type in _FLOATS]
    flat = executor.handle.numeric_grad(targets, float(eps), bool(use_forward_train))
    return {names[i]: g.reshape(executor.arg_arrays[i].shape).astype(np.dtype(dtype))
            for i, g in zip(targets, flat, strict=True)}


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=np.float32):
    """Checks ``sym``'s backward against finite differences along a random positive projection
    of its (single) output: ``make_loss(sym * proj)``, as MXNet does. The loss stays unsummed so
    that the finite differences are taken per output element before summing; a pre-summed float32
    scalar would quantise them to steps of ``ulp(sum) / eps``."""
    assert dtype in _FLOATS or np.dtype(dtype).type in _FLOATS, dtype
    dtype = np.dtype(dtype).type
    ctx = ctx or default_context()
    loc = _parse_location(sym, location, ctx, dtype)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype)
    names = sym.list_arguments()
    if grad_nodes is None:
        reqs = dict.fromkeys(names, "write")
    elif isinstance(grad_nodes, (list, tuple)):
        reqs = dict.fromkeys(grad_nodes, "write")
    else:
        reqs = dict(grad_nodes)
    for k in reqs:
        if k not in names:
            raise ValueError(f"grad node {k} is not an argument of the symbol {names}")
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in loc.items()})
    assert out_shapes is not None and len(out_shapes) == 1, \
        "check_numeric_gradient needs a symbol with exactly one output"
    proj = _sym.var("__random_proj")
    loss = _sym.make_loss(sym * proj, name="__numeric_loss")
    proj_value = np.random.rand(*out_shapes[0]) + 0.1
    full = dict(loc, __random_proj=nd.array(proj_value, ctx, dtype=dtype))
    rng = np.random.default_rng()
    initial = {k: rng.normal(0, 0.01, size=loc[k].shape).astype(dtype) for k in reqs}
    grads = {k: nd.array(v, ctx, dtype=dtype) for k, v in initial.items()}
    exe = loss.bind(ctx, full, args_grad=grads, grad_req=reqs, aux_states=aux)
    aux_copy = None if aux is None else {k: v.copy() for k, v in aux.items()}
    exe.forward(is_train=True)
    exe.backward()
    eps = numeric_eps if numeric_eps is not None else default_numeric_eps()[np.dtype(dtype)]
    if np.dtype(dtype) != np.float64:
        assert eps >= 1e-5
    check = {k: loc[k] for k in reqs}
    fd = numeric_grad(exe, check, aux_copy, eps=eps, use_forward_train=use_forward_train,
                      dtype=dtype)
    if aux_copy is not None:  # the forward passes above moved BatchNorm's statistics
        for k, v in aux_copy.items():
            exe.aux_dict[k][:] = v
    rtol, atol = get_tols(np.zeros(1, dtype), np.zeros(1, dtype), rtol, atol)
    for name, req in reqs.items():
        got = grads[name].asnumpy()
        labels = (f"NUMERICAL_{name}", f"BACKWARD_{name}")
        if req == "write":
            assert_almost_equal(fd[name], got, rtol, atol, names=labels)
        elif req == "add":
            assert_almost_equal(fd[name], got - initial[name], rtol, atol, names=labels)
        elif req == "null":
            assert_almost_equal(initial[name], got, rtol, atol, names=labels)
        else:
            raise ValueError(f"Invalid grad_req {req} for argument {name}")


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False, rand_type=np.float64):
    """Runs ``sym`` bound per entry of ``ctx_list`` (``{'ctx': ..., '<arg>': shape,
    'type_dict': {...}}``) on the same random inputs and compares outputs and gradients with the
    most precise executor's. Returns that ground truth (name -> NDArray)."""
    assert len(ctx_list) > 1, "check_consistency needs at least two contexts"
    syms = sym if isinstance(sym, (list, tuple)) else [sym] * len(ctx_list)
    exes = [s.simple_bind(grad_req=grad_req, **dict(c)) for s, c in zip(syms, ctx_list,
                                                                       strict=True)]
    arg_params = dict(arg_params or {})
    aux_params = dict(aux_params or {})
    rng = np.random.default_rng()
    for name, arr in sorted(exes[0].arg_dict.items()):
        if name not in arg_params:
            v = (rng.uniform(-0.92 * scale, 0.92 * scale, arr.shape) if use_uniform
                 else rng.normal(0, scale, arr.shape))
            arg_params[name] = v.astype(rand_type)
    for name, arr in exes[0].aux_dict.items():
        aux_params.setdefault(name, np.zeros(arr.shape, rand_type))
    for exe in exes:
        for k, v in arg_params.items():
            exe.arg_dict[k][:] = nd.array(_np(v), dtype=exe.arg_dict[k].dtype)
        for k, v in aux_params.items():
            exe.aux_dict[k][:] = nd.array(_np(v), dtype=exe.aux_dict[k].dtype)
    precision = [np.dtype(e.outputs[0].dtype).itemsize for e in exes]
    gt_index = int(np.argmax(precision))
    least = exes[int(np.argmin(precision))].outputs[0].dtype

    def compare(phase, values_of):
        truth = ground_truth if ground_truth is not None else values_of(exes[gt_index])
        for i, exe in enumerate(exes):
            if i == gt_index and ground_truth is None:
                continue
            for name, value in values_of(exe).items():
                if value is None or truth.get(name) is None:
                    continue
                try:
                    assert_almost_equal(truth[name].asnumpy(), value.asnumpy(), rtol, atol,
                                        names=(f"{phase}_GT_{name}", f"{phase}_{i}_{name}"),
                                        equal_nan=equal_nan)
                except AssertionError as e:
                    print(f"{phase} Err: ctx {i} vs ctx {gt_index} at {name}")
                    if raise_on_err:
                        raise e
        return truth

    for exe in exes:
        exe.forward(is_train=False)
    compare("Predict", lambda e: dict(zip(e._out_names, e.outputs, strict=True)))
    head = [o.astype(least) for o in exes[0].outputs]
    for exe in exes:
        exe.forward(is_train=True)
        exe.backward([h.astype(exe.outputs[j].dtype) for j, h in enumerate(head)])

    def train_values(e):
        out = dict(zip(e._out_names, e.outputs, strict=True))
        out.update({k: v for k, v in e.grad_dict.items() if v is not None})
        return out

    return compare("Train", train_values)
