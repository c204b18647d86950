"""gluon.rnn: fused layers against the NumPy reference and against unrolled cells with the same
weights, MXNet's parameter names, layouts, states, hybridize, unroll options and modifier cells."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, gluon
from test_rnn_op import numpy_rnn


def _packed(layer, layers, dirs):
    """The layer's parameters in the RNN operator's packing."""
    ps = {k[len(layer.prefix):]: v.data().asnumpy() for k, v in layer.collect_params().items()}
    return np.concatenate([ps[f"{d}{i}_{g}_{t}"].ravel() for t in ("weight", "bias")
                           for i in range(layers) for d in "lr"[:dirs] for g in ("i2h", "h2h")])


@pytest.mark.parametrize("cls,mode", [(gluon.rnn.LSTM, "lstm"), (gluon.rnn.GRU, "gru"),
                                      (gluon.rnn.RNN, "rnn_relu")])
def test_fused_layer_matches_numpy_and_names_params_like_mxnet(cls, mode):
    layer = cls(5, num_layers=2, bidirectional=True, prefix="enc_")
    names = list(layer.collect_params().keys())
    assert names[:4] == ["enc_l0_i2h_weight", "enc_l0_h2h_weight", "enc_l0_i2h_bias",
                         "enc_l0_h2h_bias"]
    assert "enc_r1_h2h_bias" in names and len(names) == 16
    layer.initialize(mx.init.Uniform(0.5))
    x = mx.nd.random.uniform(-1, 1, shape=(6, 3, 4))
    y = layer(x)
    assert y.shape == (6, 3, 10)
    assert layer.l0_i2h_weight.shape == ({"lstm": 4, "gru": 3}.get(mode, 1) * 5, 4)
    zeros = np.zeros((4, 3, 5))
    want = numpy_rnn(x.asnumpy().astype(np.float64), _packed(layer, 2, 2).astype(np.float64), zeros,
                     zeros if mode == "lstm" else None, mode, 2, 2, 5)[0]
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-4, atol=1e-5)
    assert repr(layer).startswith(f"{cls.__name__}(4 -> 5, TNC, num_layers=2, bidirectional")


def test_states_layout_and_hybridize():
    layer = gluon.rnn.LSTM(4, layout="NTC", input_size=3)
    layer.initialize()
    x = mx.nd.random.uniform(shape=(2, 7, 3))
    states = layer.begin_state(2)
    assert [s.shape for s in states] == [(1, 2, 4), (1, 2, 4)]
    out, new_states = layer(x, states)
    assert out.shape == (2, 7, 4) and [s.shape for s in new_states] == [(1, 2, 4)] * 2
    np.testing.assert_allclose(new_states[0].asnumpy()[0], out.asnumpy()[:, -1], rtol=1e-6)
    layer.hybridize()
    out2, _ = layer(x, states)
    np.testing.assert_allclose(out2.asnumpy(), out.asnumpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(mx.base.MXNetError, match="invalid recurrent state shape"):
        gluon.rnn.LSTM(4, input_size=3).initialize() or None
        bad = gluon.rnn.LSTM(4, input_size=3)
        bad.initialize()
        bad(mx.nd.ones((5, 2, 3)), [mx.nd.zeros((1, 3, 4)), mx.nd.zeros((1, 3, 4))])


@pytest.mark.parametrize("fused,cell", [(gluon.rnn.LSTM, gluon.rnn.LSTMCell),
                                        (gluon.rnn.GRU, gluon.rnn.GRUCell)])
def test_fused_layer_equals_unrolled_cell_and_gradients_agree(fused, cell):
    layer = fused(4, input_size=3)
    layer.initialize(mx.init.Uniform(0.4))
    c = cell(4, input_size=3)
    c.initialize()
    for g in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
        getattr(c, g).set_data(getattr(layer, "l0_" + g).data())
    x = mx.nd.random.uniform(-1, 1, shape=(5, 2, 3))
    x.attach_grad()
    with autograd.record():
        y = layer(x)
        (y * y).sum().backward()
    gx_fused = x.grad.asnumpy().copy()
    with autograd.record():
        out, _ = c.unroll(5, x, layout="TNC", merge_outputs=True)
        (out * out).sum().backward()
    np.testing.assert_allclose(out.asnumpy(), y.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), gx_fused, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c.h2h_weight.grad().asnumpy(), layer.l0_h2h_weight.grad().asnumpy(),
                               rtol=1e-4, atol=1e-5)


def test_bidirectional_cell_equals_fused_bidirectional_layer():
    layer = gluon.rnn.GRU(3, bidirectional=True, input_size=2)
    layer.initialize(mx.init.Uniform(0.5))
    bi = gluon.rnn.BidirectionalCell(gluon.rnn.GRUCell(3, input_size=2),
                                     gluon.rnn.GRUCell(3, input_size=2))
    bi.initialize()
    for d, child in (("l", "l_cell"), ("r", "r_cell")):
        for g in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
            getattr(bi._children[child], g).set_data(getattr(layer, f"{d}0_{g}").data())
    x = mx.nd.random.uniform(shape=(4, 2, 2))
    out, states = bi.unroll(4, x, layout="TNC", merge_outputs=True)
    np.testing.assert_allclose(out.asnumpy(), layer(x).asnumpy(), rtol=1e-5, atol=1e-6)
    assert len(states) == 2


def test_unroll_list_inputs_valid_length_and_begin_state():
    cell = gluon.rnn.RNNCell(3, input_size=2)
    cell.initialize()
    steps = [mx.nd.random.uniform(shape=(2, 2)) for _ in range(4)]
    outs, states = cell.unroll(4, steps)
    assert isinstance(outs, list) and len(outs) == 4
    merged, _ = cell.unroll(4, steps, merge_outputs=True)
    assert merged.shape == (2, 4, 3)
    masked, mstates = cell.unroll(4, steps, valid_length=mx.nd.array([2, 4]), merge_outputs=True)
    got = masked.asnumpy()
    assert np.all(got[0, 2:] == 0)
    np.testing.assert_allclose(got[0, :2], merged.asnumpy()[0, :2], rtol=1e-6)
    np.testing.assert_allclose(mstates[0].asnumpy()[0], outs[1].asnumpy()[0], rtol=1e-6)
    np.testing.assert_allclose(mstates[0].asnumpy()[1], outs[3].asnumpy()[1], rtol=1e-6)
    # RNNCell by hand: h1 = tanh(W x + b + U h0 + c).
    w, u = cell.i2h_weight.data().asnumpy(), cell.h2h_weight.data().asnumpy()
    h1 = np.tanh(steps[0].asnumpy() @ w.T + np.zeros((2, 3)) @ u.T)
    np.testing.assert_allclose(outs[0].asnumpy(), h1, rtol=1e-5, atol=1e-6)


def test_sequential_residual_dropout_zoneout_cells():
    seq = gluon.rnn.HybridSequentialRNNCell()
    seq.add(gluon.rnn.LSTMCell(4, input_size=4))
    seq.add(gluon.rnn.DropoutCell(0.5))
    seq.add(gluon.rnn.ResidualCell(gluon.rnn.GRUCell(4, input_size=4)))
    seq.initialize()
    assert len(seq.state_info(2)) == 3
    x = mx.nd.random.uniform(shape=(2, 5, 4))
    out, states = seq.unroll(5, x, merge_outputs=True)
    assert out.shape == (2, 5, 4) and len(states) == 3
    base = gluon.rnn.GRUCell(4, input_size=4)
    res = gluon.rnn.ResidualCell(base)
    res.initialize()
    h = [mx.nd.zeros((2, 4))]
    o, _ = res(x[:, 0], h)
    o2, _ = base.__class__.forward(base, x[:, 0], h)
    np.testing.assert_allclose(o.asnumpy(), o2.asnumpy() + x[:, 0].asnumpy(), rtol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="already modified"):
        gluon.rnn.ZoneoutCell(base)
    z = gluon.rnn.ZoneoutCell(gluon.rnn.RNNCell(4, input_size=4), 1.0, 1.0)
    z.initialize()
    with autograd.record():
        out, st = z.unroll(3, x[:, :3], merge_outputs=True)
    # Zoneout 1.0 keeps every previous value: outputs and states stay at zero.
    assert np.all(out.asnumpy() == 0) and np.all(st[0].asnumpy() == 0)
    with pytest.raises(NotImplementedError, match="unroll"):
        gluon.rnn.BidirectionalCell(gluon.rnn.RNNCell(2), gluon.rnn.RNNCell(2))(x[:, 0], [])


def test_save_load_round_trip_and_errors(tmp_path):
    a = gluon.rnn.LSTM(3, num_layers=2, input_size=2)
    a.initialize()
    f = str(tmp_path / "lstm.params")
    a.save_parameters(f)
    b = gluon.rnn.LSTM(3, num_layers=2, input_size=2)
    b.load_parameters(f)
    x = mx.nd.random.uniform(shape=(3, 1, 2))
    np.testing.assert_allclose(a(x).asnumpy(), b(x).asnumpy())
    with pytest.raises(ValueError, match="layout"):
        gluon.rnn.LSTM(3, layout="CTN")
    with pytest.raises(NotImplementedError, match="projection_size"):
        gluon.rnn.LSTM(3, projection_size=2)


def test_loads_mxnet_checkpoint_and_matches_its_output():
    import os
    here = os.path.join(os.path.dirname(__file__), "fixtures")
    f = np.load(os.path.join(here, "mxnet_rnn.npz"))
    layer = gluon.rnn.LSTM(4, num_layers=2, bidirectional=True, layout="NTC", input_size=3)
    layer.load_parameters(os.path.join(here, "mxnet_gluon_lstm.params"))
    y = layer(mx.nd.array(f["gluon_lstm/x"]))
    np.testing.assert_allclose(y.asnumpy(), f["gluon_lstm/y"], rtol=1e-5, atol=1e-6)
