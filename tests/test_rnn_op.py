"""The fused RNN operator: MXNet 1.9.1's numbers (fixture), a NumPy reference written here, finite
differences, float32, the symbol path and bad input."""

import os

import ferrograd as mx
import numpy as np
import pytest

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_rnn.npz")
GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def param_size(mode, layers, dirs, inp, hid):
    g = GATES[mode]
    return sum(dirs * g * hid * ((inp if l == 0 else dirs * hid) + hid + 2) for l in range(layers))


def numpy_rnn(x, params, h0, c0, mode, layers, dirs, hid):
    """Straightforward loops over MXNet's packing: all W_i2h/W_h2h per layer and direction, then
    all b_i2h/b_h2h; gates LSTM i,f,g,o and GRU r,z,n."""
    seq, _, inp = x.shape
    g = GATES[mode]
    off = 0
    weights, biases = {}, {}
    for l in range(layers):
        for d in range(dirs):
            width = inp if l == 0 else dirs * hid
            mid = off + g * hid * width
            weights[l, d] = (params[off:mid].reshape(g * hid, width),
                             params[mid:mid + g * hid * hid].reshape(g * hid, hid))
            off += g * hid * (width + hid)
    for l in range(layers):
        for d in range(dirs):
            biases[l, d] = params[off:off + g * hid], params[off + g * hid:off + 2 * g * hid]
            off += 2 * g * hid
    layer_in, hy, cy = x, [], []
    for l in range(layers):
        outs = []
        for d in range(dirs):
            (wi, wh), (bi, bh) = weights[l, d], biases[l, d]
            h = h0[l * dirs + d]
            c = None if c0 is None else c0[l * dirs + d]
            ys = [None] * seq
            for t in (range(seq) if d == 0 else reversed(range(seq))):
                a, b = layer_in[t] @ wi.T + bi, h @ wh.T + bh
                if mode == "lstm":
                    s = a + b
                    i, f = _sigmoid(s[:, :hid]), _sigmoid(s[:, hid:2 * hid])
                    gg, o = np.tanh(s[:, 2 * hid:3 * hid]), _sigmoid(s[:, 3 * hid:])
                    c = f * c + i * gg
                    h = o * np.tanh(c)
                elif mode == "gru":
                    r = _sigmoid(a[:, :hid] + b[:, :hid])
                    z = _sigmoid(a[:, hid:2 * hid] + b[:, hid:2 * hid])
                    n = np.tanh(a[:, 2 * hid:] + r * b[:, 2 * hid:])
                    h = (1 - z) * n + z * h
                else:
                    h = np.tanh(a + b) if mode == "rnn_tanh" else np.maximum(a + b, 0)
                ys[t] = h
            outs.append(np.stack(ys))
            hy.append(h)
            cy.append(c)
        layer_in = np.concatenate(outs, axis=2)
    return layer_in, np.stack(hy), (None if c0 is None else np.stack(cy))


CASES = [(m, l, d) for m in GATES for (l, d) in [(1, 1), (2, 2)]]


@pytest.mark.parametrize("mode,layers,dirs", CASES)
def test_forward_and_gradients_match_mxnet(mode, layers, dirs):
    f = np.load(FIXTURE)
    key = f"{mode}_L{layers}_D{dirs}"
    names = ["x", "params", "h0"] + (["c0"] if mode == "lstm" else [])
    ins = [mx.nd.array(f[f"{key}/{k}"], dtype="float64") for k in names]
    for a in ins:
        a.attach_grad()
    with mx.autograd.record():
        outs = mx.nd.RNN(*ins, state_size=6, num_layers=layers, mode=mode, bidirectional=dirs == 2,
                         state_outputs=True)
    assert len(outs) == (3 if mode == "lstm" else 2)
    # MXNet's rnn_relu runs through float32 internally (errors ~1e-7); the others agree to 1e-12.
    tol = 1e-6 if mode == "rnn_relu" else 1e-10
    for k, o in zip(["y", "hy", "cy"], outs, strict=False):
        np.testing.assert_allclose(o.asnumpy(), f[f"{key}/{k}"], rtol=tol, atol=tol)
    heads = ["dy", "dhy"] + (["dcy"] if mode == "lstm" else [])
    mx.autograd.backward(list(outs), [mx.nd.array(f[f"{key}/{k}"], dtype="float64") for k in heads])
    for k, a in zip(["gx", "gparams", "gh0", "gc0"], ins, strict=False):
        np.testing.assert_allclose(a.grad.asnumpy(), f[f"{key}/{k}"], rtol=tol * 10, atol=tol * 10)


def _random_inputs(mode, layers, dirs, rng, seq=5, batch=3, inp=4, hid=3, dtype="float64"):
    x = rng.randn(seq, batch, inp)
    p = rng.randn(param_size(mode, layers, dirs, inp, hid)) * 0.4
    h0 = rng.randn(layers * dirs, batch, hid) * 0.5
    c0 = rng.randn(layers * dirs, batch, hid) * 0.5 if mode == "lstm" else None
    return x, p, h0, c0


@pytest.mark.parametrize("mode,layers,dirs", CASES + [("lstm", 3, 1), ("gru", 1, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_forward_matches_numpy(mode, layers, dirs, dtype):
    rng = np.random.RandomState(3)
    x, p, h0, c0 = _random_inputs(mode, layers, dirs, rng)
    want = numpy_rnn(x, p, h0, c0, mode, layers, dirs, 3)
    args = [mx.nd.array(v, dtype=dtype) for v in (x, p, h0) + ((c0,) if c0 is not None else ())]
    outs = mx.nd.RNN(*args, state_size=3, num_layers=layers, mode=mode, bidirectional=dirs == 2,
                     state_outputs=True)
    tol = 1e-12 if dtype == "float64" else 2e-5
    for got, w in zip(outs, want, strict=False):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got.asnumpy(), w, rtol=tol, atol=tol)
    # Without state_outputs there is one output.
    y = mx.nd.RNN(*args, state_size=3, num_layers=layers, mode=mode, bidirectional=dirs == 2)
    assert isinstance(y, mx.nd.NDArray) and y.shape == (5, 3, dirs * 3)


@pytest.mark.parametrize("mode", list(GATES))
def test_gradient_finite_differences(mode):
    rng = np.random.RandomState(5)
    x, p, h0, c0 = _random_inputs(mode, 2, 2, rng, seq=3, batch=2, inp=2, hid=2)
    vals = [x, p, h0] + ([c0] if c0 is not None else [])
    head = rng.randn(3, 2, 4)

    def loss(vs):
        y = numpy_rnn(vs[0], vs[1], vs[2], vs[3] if len(vs) > 3 else None, mode, 2, 2, 2)[0]
        return float((y * head).sum())

    ins = [mx.nd.array(v, dtype="float64") for v in vals]
    for a in ins:
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.RNN(*ins, state_size=2, num_layers=2, mode=mode, bidirectional=True)
    y.backward(mx.nd.array(head, dtype="float64"))
    eps = 1e-6
    for i, v in enumerate(vals):
        fd = np.zeros(v.size)
        for j in range(v.size):
            up, dn = [w.copy() for w in vals], [w.copy() for w in vals]
            up[i].flat[j] += eps
            dn[i].flat[j] -= eps
            fd[j] = (loss(up) - loss(dn)) / (2 * eps)
        np.testing.assert_allclose(ins[i].grad.asnumpy().ravel(), fd, rtol=1e-5, atol=1e-6)


def test_symbol_infers_parameter_and_state_shapes():
    data = mx.sym.Variable("data")
    out = mx.sym.RNN(data, state_size=7, num_layers=2, mode="lstm", bidirectional=True, name="rnn")
    args = out.list_arguments()
    assert args == ["data", "rnn_parameters", "rnn_state", "rnn_state_cell"]
    arg_shapes, out_shapes, _ = out.infer_shape(data=(6, 4, 5))
    assert arg_shapes[1] == (param_size("lstm", 2, 2, 5, 7),)
    assert arg_shapes[2] == arg_shapes[3] == (4, 4, 7)
    assert out_shapes == [(6, 4, 14)]


def test_dropout_between_layers_only_in_training():
    rng = np.random.RandomState(8)
    x, p, h0, _ = _random_inputs("rnn_tanh", 2, 1, rng)
    args = [mx.nd.array(v) for v in (x, p, h0)]
    y_eval = mx.nd.RNN(*args, state_size=3, num_layers=2, mode="rnn_tanh", p=0.5)
    want = numpy_rnn(x, p, h0, None, "rnn_tanh", 2, 1, 3)[0]
    np.testing.assert_allclose(y_eval.asnumpy(), want, rtol=2e-5, atol=2e-5)
    mx.random.seed(1)
    with mx.autograd.train_mode():
        y_train = mx.nd.RNN(*args, state_size=3, num_layers=2, mode="rnn_tanh", p=0.5)
    assert np.abs(y_train.asnumpy() - want).max() > 1e-3


def test_lstm_state_clip_bounds_the_cell():
    rng = np.random.RandomState(9)
    x, p, h0, c0 = _random_inputs("lstm", 1, 1, rng)
    args = [mx.nd.array(v * 4) for v in (x, p, h0, c0)]
    _, _, cy = mx.nd.RNN(*args, state_size=3, num_layers=1, mode="lstm", state_outputs=True,
                         lstm_state_clip_min=-0.2, lstm_state_clip_max=0.3)
    assert cy.asnumpy().min() >= -0.2 - 1e-7 and cy.asnumpy().max() <= 0.3 + 1e-7


def test_bad_input_names_op_argument_and_shapes():
    x, p, h = mx.nd.ones((3, 2, 4)), mx.nd.ones((5,)), mx.nd.zeros((1, 2, 4))
    msg = r"RNN: parameters has shape \(5,?\), expected \(160,\)"
    with pytest.raises(mx.base.MXNetError, match=msg):
        mx.nd.RNN(x, p, h, h, state_size=4, num_layers=1, mode="lstm")
    p = mx.nd.ones((160,))
    msg = r"RNN: state_cell has shape \(1, 3, 4\), expected \(1, 2, 4\)"
    with pytest.raises(mx.base.MXNetError, match=msg):
        mx.nd.RNN(x, p, h, mx.nd.zeros((1, 3, 4)), state_size=4, num_layers=1, mode="lstm")
    with pytest.raises(mx.base.MXNetError, match="mode"):
        mx.nd.RNN(x, p, h, state_size=4, num_layers=1, mode="bogus")
    with pytest.raises(mx.base.MXNetError, match="data must be 3-D"):
        mx.nd.RNN(mx.nd.ones((3, 4)), p, h, h, state_size=4, num_layers=1, mode="lstm")
    with pytest.raises(mx.base.MXNetError, match="projection_size"):
        mx.nd.RNN(x, p, h, h, state_size=4, num_layers=1, mode="lstm", projection_size=2)
    with pytest.raises(mx.base.MXNetError, match="use_sequence_length"):
        mx.nd.RNN(x, p, h, h, state_size=4, num_layers=1, mode="lstm", use_sequence_length=True)


# Large enough (steps · rows · gates · hidden ≥ 2²²) for the recurrence to split the batch rows
# over threads; 21 rows split unevenly (8 + 13).
_BIG = dict(seq=6, batch=21, inp=8, hid=96)


@pytest.mark.parametrize("mode,dirs", [("lstm", 2), ("gru", 1)])
def test_batch_rows_split_over_threads_match_numpy(mode, dirs):
    rng = np.random.RandomState(8)
    x, p, h0, c0 = _random_inputs(mode, 2, dirs, rng, **_BIG)
    p *= 0.3
    want = numpy_rnn(x, p, h0, c0, mode, 2, dirs, _BIG["hid"])
    args = [mx.nd.array(v, dtype="float64") for v in (x, p, h0) + ((c0,) if c0 is not None else ())]
    outs = mx.nd.RNN(*args, state_size=_BIG["hid"], num_layers=2, mode=mode,
                     bidirectional=dirs == 2, state_outputs=True)
    for got, w in zip(outs, want, strict=False):
        np.testing.assert_allclose(got.asnumpy(), w, rtol=1e-11, atol=1e-11)


_BIG_RNN = """
import sys
import numpy as np, ferrograd as mx
from ferrograd import autograd, nd
rng = np.random.default_rng(4)
seq, batch, inp, hid = 6, 21, 8, 96
for mode, gates in (("lstm", 4), ("gru", 3), ("rnn_tanh", 1)):
    size = 2 * gates * hid * (inp + hid + 2) + 2 * gates * hid * (2 * hid + hid + 2)
    u = lambda *s: nd.array(rng.uniform(-0.3, 0.3, s).astype(np.float32))
    xs = [u(seq, batch, inp), u(size), u(4, batch, hid)]
    xs += [u(4, batch, hid)] if mode == "lstm" else []
    for v in xs:
        v.attach_grad()
    with autograd.record():
        outs = nd.RNN(*xs, state_size=hid, num_layers=2, mode=mode, bidirectional=True,
                      state_outputs=True)
    autograd.backward(outs, [u(*o.shape) for o in outs])
    for a in list(outs) + [v.grad for v in xs]:
        sys.stdout.buffer.write(a.asnumpy().tobytes())
"""


def test_rnn_bitwise_identical_for_any_thread_count():
    import subprocess
    import sys

    runs = [subprocess.run([sys.executable, "-c", _BIG_RNN], capture_output=True, check=True,
                           env=dict(os.environ, RAYON_NUM_THREADS=t)).stdout for t in ("1", "2")]
    assert len(runs[0]) > 4 * 3 * 6 * 21 * 192
    assert runs[0] == runs[1]
