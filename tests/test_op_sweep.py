"""A broad operator sweep against MXNet 1.9.1: ``fixtures/mxnet_op_sweep.npz`` holds, for each case,
the call (op path under ``nd`` and its keywords), the inputs, MXNet's outputs (values and dtypes)
and, for differentiable cases, MXNet's input gradients under a recorded head gradient
(``fixtures/gen_mxnet_op_sweep.py`` wrote it). Each case is replayed here on ferrograd.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from ferrograd import autograd, cpu, nd
from ferrograd.base import MXNetError

FIXTURE = np.load(Path(__file__).parent / "fixtures" / "mxnet_op_sweep.npz")
META = json.loads(FIXTURE["meta"].tobytes().decode())
TOL = {np.dtype("float16"): (1e-2, 1e-2), np.dtype("float32"): (1e-4, 1e-5),
       np.dtype("float64"): (1e-8, 1e-10)}
# float32: sums of products accumulated in another order than MXNet's.
LOOSE = {"gamma", "gammaln", "erfinv", "norm", "Deconvolution", "Convolution", "Pooling",
         "BatchNorm", "InstanceNorm", "LayerNorm", "L2Normalization"}
# float64: MXNet evaluates these with float32 constants (180/pi, 2/sqrt(pi), ...) or float32
# special functions, about 1e-7 away from the exact values ferrograd gives.
LOOSE64 = {"gamma", "gammaln", "erf", "erfinv", "degrees", "radians", "LeakyReLU"}


def known_difference(c):
    """Why ferrograd still differs from MXNet in case ``c`` (a strict xfail), or None."""
    return None


def rrelu(c):
    """rrelu in inference: MXNet leaves its slope mask (output 1) uninitialised and gives the
    gradient ``head · output`` instead of ``head · slope`` where x <= 0 (docs/mxnet-users.md), so
    only output 0 is compared."""
    return c["op"] == "LeakyReLU" and c["kwargs"].get("act_type") == "rrelu"


def case_id(i):
    c = META[i]
    kw = ",".join(f"{k}={v}" for k, v in sorted(c["kwargs"].items()))
    shapes = "x".join(str(FIXTURE[f"{i}_in{j}"].shape) for j in range(c["n_in"]))
    dtypes = "/".join(str(FIXTURE[f"{i}_in{j}"].dtype) for j in range(c["n_in"]))
    return f"{i}-{c['op']}({kw})-{shapes}-{dtypes}"


def resolve(path):
    fn = nd
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn


def keywords(kwargs):
    """JSON turned tuples into lists; MXNet's tuple parameters are tuples again."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}


def precision(i):
    """The least precise float dtype among case ``i``'s inputs and outputs: MXNet computes a
    float16 input's softmax in float16 even when it writes float32, for example."""
    arrays = [FIXTURE[k] for k in FIXTURE.files if k.startswith(f"{i}_")]
    floats = [a.dtype for a in arrays if a.dtype.kind == "f"]
    return min(floats, key=lambda d: d.itemsize) if floats else np.dtype("float64")


def check_close(got, want, what, op, prec):
    assert got.shape == want.shape, f"{what}: shape {got.shape} != MXNet's {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != MXNet's {want.dtype}"
    if want.dtype.kind in "iub":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    rtol, atol = TOL[prec]
    if op in LOOSE and prec != np.float64:
        rtol, atol = rtol * 10, atol * 10
    if op in LOOSE64 and prec == np.float64:
        rtol, atol = 1e-6, 1e-7
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


@pytest.mark.parametrize("i", range(len(META)), ids=case_id)
def test_matches_mxnet(i):
    reason = known_difference(META[i])
    if reason is None:
        replay(i)
        return
    try:
        replay(i)
    except (AssertionError, AttributeError, MXNetError):
        pytest.xfail(reason)
    pytest.fail(f"now matches MXNet: remove it from known_difference ({reason})")


def replay(i):
    c = META[i]
    prec = precision(i)
    inputs = [nd.array(FIXTURE[f"{i}_in{j}"], dtype=FIXTURE[f"{i}_in{j}"].dtype)
              for j in range(c["n_in"])]
    fn = resolve(c["op"])
    kw = keywords(c["kwargs"])
    grads = c.get("grads")
    if grads is None:
        out = fn(*inputs, **kw)
    else:
        for j in grads:
            inputs[j].attach_grad()
        with autograd.record(train_mode=c["train"]):
            out = fn(*inputs, **kw)
    outs = out if isinstance(out, (list, tuple)) else [out]
    assert len(outs) == c["n_out"], f"{len(outs)} outputs, MXNet has {c['n_out']}"
    for j, o in enumerate(outs):
        if not (rrelu(c) and j == 1):
            check_close(o.asnumpy(), FIXTURE[f"{i}_out{j}"], f"output {j}", c["op"], prec)
    if grads is None or rrelu(c):
        return
    heads = [nd.array(FIXTURE[f"{i}_head{j}"], dtype=FIXTURE[f"{i}_head{j}"].dtype)
             for j in c["heads"]]
    autograd.backward([outs[j] for j in c["heads"]], heads, train_mode=c["train"])
    for j in grads:
        check_close(inputs[j].grad.asnumpy(), FIXTURE[f"{i}_grad{j}"], f"gradient of input {j}",
                    c["op"], prec)


# --- bad input: a clear MXNetError naming the op, never a panic ---------------------------------

def a(*shape, dtype="float32"):
    return nd.array(np.ones(shape), dtype=dtype)


BAD = [
    ("broadcast_add", lambda: nd.broadcast_add(a(2, 3), a(4, 3)), ["(2, 3)", "(4, 3)"]),
    ("sum", lambda: nd.sum(a(2, 3), axis=5), ["axis"]),
    ("sum", lambda: nd.sum(a(2, 3), axis=(0, 0)), ["axis"]),
    ("mean", lambda: nd.mean(a(2, 3), axis=-3), ["axis"]),
    ("softmax", lambda: nd.softmax(a(2, 3), axis=2), ["axis"]),
    ("log_softmax", lambda: nd.log_softmax(a(2, 3), axis=-3), ["axis"]),
    ("argmax", lambda: nd.argmax(a(2, 3), axis=2), ["axis"]),
    ("norm", lambda: nd.norm(a(2, 3), ord=3), ["ord"]),
    ("transpose", lambda: nd.transpose(a(2, 3), axes=(0, 1, 2)), ["axes"]),
    ("transpose", lambda: nd.transpose(a(2, 3), axes=(0, 0)), ["axis"]),
    ("Reshape", lambda: nd.reshape(a(2, 3), shape=(4, 2)), ["(2, 3)"]),
    ("Reshape", lambda: nd.reshape(a(2, 3), shape=(-1, -1)), ["-1"]),
    ("take", lambda: nd.take(a(2, 3), a(2), axis=2), ["axis"]),
    ("pick", lambda: nd.pick(a(2, 3), a(2), axis=3), ["axis"]),
    ("pick", lambda: nd.pick(a(2, 3), a(3), axis=1), ["(2, 3)"]),
    ("topk", lambda: nd.topk(a(2, 3), k=4), ["k"]),
    ("topk", lambda: nd.topk(a(2, 3), axis=2), ["axis"]),
    ("sort", lambda: nd.sort(a(2, 3), axis=-3), ["axis"]),
    ("slice", lambda: nd.slice(a(2, 3), begin=(0,), end=(1,), step=(0,)), ["step"]),
    ("slice_axis", lambda: nd.slice_axis(a(2, 3), axis=2, begin=0, end=1), ["axis"]),
    ("Concat", lambda: nd.concat(a(2, 3), a(3, 3), dim=1), ["(2, 3)", "(3, 3)"]),
    ("stack", lambda: nd.stack(a(2, 3), a(3, 2)), ["(2, 3)", "(3, 2)"]),
    ("SliceChannel", lambda: nd.split(a(2, 3), num_outputs=2, axis=1), ["num_outputs"]),
    ("squeeze", lambda: nd.squeeze(a(2, 3), axis=0), ["axis"]),
    ("expand_dims", lambda: nd.expand_dims(a(2, 3), axis=4), ["axis"]),
    ("SwapAxis", lambda: nd.swapaxes(a(2, 3), dim1=0, dim2=2), ["dim"]),
    ("reverse", lambda: nd.flip(a(2, 3), axis=2), ["axis"]),
    ("tile", lambda: nd.tile(a(2, 3), reps=(-1,)), ["reps"]),
    ("repeat", lambda: nd.repeat(a(2, 3), repeats=-1), ["repeats"]),
    ("repeat", lambda: nd.repeat(a(2, 3), repeats=2, axis=2), ["axis"]),
    ("broadcast_to", lambda: nd.broadcast_to(a(2, 3), shape=(4, 3)), ["(2, 3)", "(4, 3)"]),
    ("broadcast_axis", lambda: nd.broadcast_axis(a(2, 3), axis=0, size=3), ["axis"]),
    ("where", lambda: nd.where(a(2, 3), a(2, 3), a(3, 2)), ["(2, 3)", "(3, 2)"]),
    ("where", lambda: nd.where(a(4), a(2, 3), a(2, 3)), ["(4,)", "(2, 3)"]),
    ("dot", lambda: nd.dot(a(2, 3), a(2, 3)), ["(2, 3)"]),
    ("batch_dot", lambda: nd.batch_dot(a(2, 3, 4), a(3, 4, 5)), ["(2, 3, 4)", "(3, 4, 5)"]),
    ("gather_nd", lambda: nd.gather_nd(a(2, 3), a(3, 1)), ["(2, 3)", "(3, 1)"]),
    ("one_hot", lambda: nd.one_hot(a(3), depth=-1), ["depth"]),
    ("diag", lambda: nd.diag(a(2, 3, 4), axis1=0, axis2=0), ["axis"]),
    ("Pad", lambda: nd.pad(a(1, 1, 2, 2), mode="constant", pad_width=(0, 0, 1, 1)),
     ["pad_width"]),
    ("FullyConnected", lambda: nd.FullyConnected(a(2, 3), a(4, 5), a(4), num_hidden=4),
     ["(4, 5)"]),
    ("Convolution", lambda: nd.Convolution(a(1, 3, 5, 5), a(2, 4, 3, 3), a(2), kernel=(3, 3),
                                           num_filter=2), ["(2, 4, 3, 3)"]),
    ("Convolution", lambda: nd.Convolution(a(1, 3, 2, 2), a(2, 3, 3, 3), a(2), kernel=(3, 3),
                                           num_filter=2), ["kernel"]),
    ("Deconvolution", lambda: nd.Deconvolution(a(1, 2, 3, 3), a(3, 2, 2, 2), kernel=(2, 2),
                                               num_filter=2), ["(3, 2, 2, 2)"]),
    ("Pooling", lambda: nd.Pooling(a(1, 1, 2, 2), kernel=(3, 3), pool_type="max"), ["kernel"]),
    ("BatchNorm", lambda: nd.BatchNorm(a(2, 3, 4), a(4), a(3), a(3), a(3)), ["(4,)"]),
    ("BatchNorm", lambda: nd.BatchNorm(a(2, 3), a(3), a(3), a(3), a(3), axis=2), ["axis"]),
    ("LayerNorm", lambda: nd.LayerNorm(a(2, 3), a(2), a(3)), ["(2,)"]),
    ("InstanceNorm", lambda: nd.InstanceNorm(a(2, 3, 4), a(4), a(3)), ["(4,)"]),
    ("Embedding", lambda: nd.Embedding(a(3), a(5, 2), input_dim=5, output_dim=3), ["(5, 2)"]),
    ("SoftmaxOutput", lambda: nd.SoftmaxOutput(a(4, 3), a(5)), ["(4, 3)"]),
    ("LeakyReLU", lambda: nd.LeakyReLU(a(2, 3, 4), a(4), act_type="prelu"), ["(4,)"]),
    ("L2Normalization", lambda: nd.L2Normalization(a(3), mode="spatial"), ["mode"]),
    ("elemwise_add", lambda: nd.elemwise_add(a(2, 3), a(3, 2)), ["(2, 3)", "(3, 2)"]),
    ("scatter_nd", lambda: nd.scatter_nd(a(2), a(1, 3), shape=(2, 2)), ["(2,)", "(1, 3)"]),
]


@pytest.mark.parametrize("op,call,words", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_input_is_a_clear_error(op, call, words):
    with pytest.raises(MXNetError) as info:
        call()
    msg = str(info.value)
    assert op in msg, msg
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"


# --- fixes found by the sweep, beyond the fixture's cases ---------------------------------------

def test_zero_gradient_ops_are_recorded():
    x = nd.array([[1.0, 5.0, 3.0]])
    for f in [lambda v: v > 2, lambda v: nd.argmax(v, axis=1), lambda v: nd.one_hot(v, depth=6),
              lambda v: nd.zeros_like(v), lambda v: nd.topk(v, k=2), nd.logical_not]:
        x.attach_grad()
        with autograd.record():
            y = f(x)
        y.backward()  # raised "not in a computational graph" before
        np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros((1, 3)))
    with autograd.record():
        y = (x > 2) * x + nd.argmax(x, axis=1)
    assert autograd.grad(y, [x])[0].asnumpy().tolist() == [[0.0, 1.0, 1.0]]


def test_softmax_use_length_in_a_graph_and_its_errors():
    from ferrograd import sym
    x = np.random.default_rng(0).normal(size=(3, 4))
    lengths = np.array([1, 4, 2], dtype=np.int32)
    s = sym.softmax(sym.var("x"), sym.var("n"), use_length=True, axis=-1)
    assert s.list_arguments() == ["x", "n"]
    exe = s.bind(cpu(), args={"x": nd.array(x), "n": nd.array(lengths, dtype="int32")})
    got = exe.forward()[0].asnumpy()
    want = np.zeros_like(x)
    for r, n in enumerate(lengths):
        e = np.exp(x[r, :n] - x[r, :n].max())
        want[r, :n] = e / e.sum()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert sym.softmax(sym.var("x")).list_arguments() == ["x"]  # no length without use_length
    with pytest.raises(IndexError, match="softmax: length 5 at entry 1 is outside"):
        nd.softmax(nd.array(x), nd.array([1, 5, 2], dtype="int32"), use_length=True)
    with pytest.raises(MXNetError, match="softmax: length must have an integer dtype"):
        nd.softmax(nd.array(x), nd.array([1, 2, 2]), use_length=True)
    with pytest.raises(MXNetError, match=r"softmax: length has shape \(2,\), expected \(3,\)"):
        nd.softmax(nd.array(x), nd.array([1, 2], dtype="int32"), use_length=True)
    with pytest.raises(MXNetError, match="supported by softmax only"):
        nd.log_softmax(nd.array(x), use_length=True)


def test_batchnorm_third_output_is_the_inverse_std():
    x = np.random.default_rng(1).normal(size=(4, 2, 3))
    args = [nd.array(x), nd.ones(2), nd.zeros(2), nd.array([0.5, 1.0]), nd.array([4.0, 0.25])]
    _, mean, inv_std = nd.BatchNorm(*args, output_mean_var=True, eps=1e-3)
    np.testing.assert_allclose(mean.asnumpy(), [0.5, 1.0])
    np.testing.assert_allclose(inv_std.asnumpy(), 1 / np.sqrt(np.array([4.0, 0.25]) + 1e-3),
                               rtol=1e-6)
    # Its gradient: d(1/sqrt(var + eps)) reaches the data through the batch variance.
    xa = nd.array(x, dtype="float64")
    xa.attach_grad()
    p = [nd.ones(2, dtype="float64"), nd.zeros(2, dtype="float64"), nd.zeros(2, dtype="float64"),
         nd.ones(2, dtype="float64")]
    with autograd.record():
        _, _, s = nd.BatchNorm(xa, *p, output_mean_var=True, eps=1e-3)
    s.backward(nd.array([1.0, 0.0], dtype="float64"))
    c = x[:, 0, :]
    n = c.size
    var = c.var()
    want = -0.5 * (var + 1e-3) ** -1.5 * 2 * (c - c.mean()) / n
    np.testing.assert_allclose(xa.grad.asnumpy()[:, 0, :], want, rtol=1e-6)
    np.testing.assert_allclose(xa.grad.asnumpy()[:, 1, :], 0, atol=1e-12)
