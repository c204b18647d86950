"""Second-order gradients of the fused RNN operator (MXNet 1.9.1 has none).

`autograd.grad(..., create_graph=True)` on `nd.RNN` gives the gradient w.r.t. data, the flat
parameters and the initial states as a graph of differentiable ops; contracting it with random
weights and calling `backward` must agree with central differences of the first-order gradient,
which is computed without `create_graph` (the fused backward). The loss is nonlinear in every
visible output (out, hy, cy), so all three head gradients take part."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, nd

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
EPS = 1e-6
SEQ, BATCH, INP, HID = 3, 2, 3, 2


def param_size(mode, layers, dirs):
    g = GATES[mode]
    return sum(dirs * g * HID * ((INP if l == 0 else dirs * HID) + HID + 2) for l in range(layers))


def make_inputs(mode, layers, dirs, seed):
    r = np.random.RandomState(seed)
    states = layers * dirs, BATCH, HID
    xs = [r.uniform(-1, 1, (SEQ, BATCH, INP)), r.uniform(-0.6, 0.6, param_size(mode, layers, dirs)),
          r.uniform(-1, 1, states)]
    if mode == "lstm":
        xs.append(r.uniform(-1, 1, states))
    return xs


def make_loss(mode, layers, dirs, seed, **kw):
    """sum(v0·sin(2·out)) + sum(v1·sin(hy)) [+ sum(v2·cos(cy))] with fixed random v."""
    r = np.random.RandomState(seed)
    nstates = layers * dirs, BATCH, HID
    shapes = [(SEQ, BATCH, dirs * HID), nstates] + ([nstates] if mode == "lstm" else [])
    vs = [nd.array(r.uniform(-1, 1, s), dtype="float64") for s in shapes]
    funcs = [lambda y: nd.sin(2 * y), nd.sin, nd.cos]

    def loss(*xs):
        names = ["data", "parameters", "state", "state_cell"]
        outs = nd.RNN(**dict(zip(names, xs, strict=False)), state_size=HID, num_layers=layers,
                      mode=mode, bidirectional=dirs == 2, state_outputs=True, **kw)
        return sum((v * f(o)).sum() for v, f, o in zip(vs, funcs, outs, strict=False))

    return loss


def first_grads(loss, arrays, create_graph, seed=None):
    """The gradient of loss in every input; returns (gradients, inputs) (graph kept if asked)."""
    xs = [nd.array(a, dtype="float64") for a in arrays]
    for x in xs:
        x.attach_grad()
    if seed is not None:
        mx.random.seed(seed)
    with autograd.record():
        val = loss(*xs)
        gs = autograd.grad(val, xs, create_graph=create_graph, retain_graph=create_graph)
    return gs, xs


def check_second(loss, arrays, seed=0, rtol=1e-4, atol=1e-6, rng_seed=None):
    r = np.random.RandomState(seed)
    ws = [r.uniform(0.5, 2, a.shape) * r.choice([-1, 1], a.shape) for a in arrays]
    gs, xs = first_grads(loss, arrays, True, rng_seed)
    # The create_graph gradient equals the fused one (the path taken without create_graph).
    fused, _ = first_grads(loss, arrays, False, rng_seed)
    for g, f in zip(gs, fused, strict=True):
        np.testing.assert_allclose(g.asnumpy(), f.asnumpy(), rtol=1e-10, atol=1e-12)
    with autograd.record():
        total = sum((g * nd.array(w, dtype="float64")).sum() for g, w in zip(gs, ws, strict=True))
    total.backward()
    got = [x.grad.asnumpy() for x in xs]
    assert any(np.abs(g).max() > 1e-3 for g in got), "the second-order gradient is all zeros"

    def contracted(a):
        fg, _ = first_grads(loss, a, False, rng_seed)
        return sum(float((g.asnumpy() * w).sum()) for g, w in zip(fg, ws, strict=True))

    for i, a in enumerate(arrays):
        fd = np.zeros(a.size)
        for j in range(a.size):
            vals = []
            for d in (EPS, -EPS):
                b = [x.copy() for x in arrays]
                b[i].flat[j] += d
                vals.append(contracted(b))
            fd[j] = (vals[0] - vals[1]) / (2 * EPS)
        np.testing.assert_allclose(got[i].ravel(), fd, rtol=rtol, atol=atol, err_msg=f"input {i}")


@pytest.mark.parametrize("mode", ["rnn_relu", "rnn_tanh", "lstm", "gru"])
def test_single_layer_second_order(mode):
    check_second(make_loss(mode, 1, 1, 1), make_inputs(mode, 1, 1, 2))


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_bidirectional_two_layers_second_order(mode):
    check_second(make_loss(mode, 2, 2, 3), make_inputs(mode, 2, 2, 4))


def test_lstm_cell_clipping_second_order():
    kw = {"lstm_state_clip_min": -0.4, "lstm_state_clip_max": 0.4}
    check_second(make_loss("lstm", 1, 2, 5, **kw), make_inputs("lstm", 1, 2, 6))


def test_training_dropout_reuses_the_forward_masks():
    # Training mode (autograd.record): every evaluation is seeded alike, so the masks agree.
    loss = make_loss("gru", 2, 1, 7, p=0.5)
    check_second(loss, make_inputs("gru", 2, 1, 8), rng_seed=11)


def test_third_order_through_a_tanh_rnn():
    arrays = make_inputs("rnn_tanh", 1, 1, 9)
    loss = make_loss("rnn_tanh", 1, 1, 10)
    xs = [nd.array(a, dtype="float64") for a in arrays]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        (g1,) = autograd.grad(loss(*xs), [xs[0]], create_graph=True)
        (g2,) = autograd.grad((g1 * g1).sum(), [xs[0]], create_graph=True)
        total = (g2 * g2).sum()
    total.backward()
    got = xs[0].grad.asnumpy()

    def g2_of(a):
        x = nd.array(a, dtype="float64")
        x.attach_grad()
        rest = [nd.array(b, dtype="float64") for b in arrays[1:]]
        with autograd.record():
            (g1,) = autograd.grad(loss(x, *rest), [x], create_graph=True)
            (g2,) = autograd.grad((g1 * g1).sum(), [x])
        return float((g2.asnumpy() ** 2).sum())

    fd = np.zeros(arrays[0].size)
    for j in range(arrays[0].size):
        p, m = arrays[0].copy(), arrays[0].copy()
        p.flat[j] += EPS
        m.flat[j] -= EPS
        fd[j] = (g2_of(p) - g2_of(m)) / (2 * EPS)
    np.testing.assert_allclose(got.ravel(), fd, rtol=1e-4, atol=1e-6)


def test_gluon_lstm_gradient_penalty():
    # A gradient penalty through a gluon fused layer: d/dw of |d loss / d x|².
    layer = mx.gluon.rnn.LSTM(3, num_layers=1, input_size=2)
    layer.initialize()
    layer.cast("float64")
    x = nd.array(np.random.RandomState(12).uniform(-1, 1, (4, 2, 2)), dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = layer(x)
        (gx,) = autograd.grad(nd.sin(y).sum(), [x], create_graph=True)
        penalty = (gx * gx).sum()
    penalty.backward()
    grads = [p.grad() for p in layer.collect_params().values()]
    assert all(np.isfinite(g.asnumpy()).all() for g in grads)
    assert any(np.abs(g.asnumpy()).max() > 0 for g in grads)
