"""``mx.mon.Monitor`` reports backward outputs (``<node>_backward_output<i>``): the gradient of
each op node's inputs, computed on a probe graph without touching the trained executor."""

import warnings
from functools import reduce

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import monitor_backward
from ferrograd.base import MXNetError

# MXNet 1.9.1's monitor on this network (mean absolute value of each array), written down from a
# run of MXNet itself. Its entry for the gradient of `data` (grad_req 'null') is an uninitialised
# buffer there, and its label gradient 1e-29 noise, so those two are checked against NumPy.
MXNET_STATS = {
    "act_0_backward_output": 0.009362805, "act_0_output": 0.59507716,
    "act_1_backward_output": 0.088298395, "act_1_output": 0.7621468, "data": 0.075,
    "fc_0_backward_output1": 0.00070221035, "fc_0_backward_output2": 0.009362805,
    "fc_0_bias": 0.35, "fc_0_output": 0.385, "fc_0_weight": 0.22500001,
    "fc_1_backward_output0": 0.038860314, "fc_1_backward_output1": 0.052544363,
    "fc_1_backward_output2": 0.088298395, "fc_1_bias": 0.6, "fc_1_output": 1.1654137,
    "fc_1_weight": 0.475, "softmax_backward_output0": 0.4792183, "softmax_label": 0.5,
    "softmax_output": 0.7621468,
}
W0, B0 = np.array([[.15, .20], [.25, .30]]), np.array([.35, .35])
W1, B1 = np.array([[.40, .45], [.50, .55]]), np.array([.60, .60])
X, LABEL = np.array([[0.05, 0.10]]), np.array([[0.01, 0.99]])


def _mean_abs(x):
    return mx.nd.sum(mx.nd.abs(x)) / reduce(lambda a, b: a * b, x.shape)


def _module(monitor=None):
    s = mx.sym.var("data")
    s = mx.sym.Activation(mx.sym.FullyConnected(s, num_hidden=2, name="fc_0"),
                          act_type="sigmoid", name="act_0")
    s = mx.sym.Activation(mx.sym.FullyConnected(s, num_hidden=2, name="fc_1"),
                          act_type="sigmoid", name="act_1")
    s = mx.sym.LinearRegressionOutput(s, name="softmax", grad_scale=2)
    it = mx.io.NDArrayIter(mx.nd.array(X), mx.nd.array(LABEL), batch_size=1)
    mod = mx.mod.Module(s, context=[mx.cpu()])
    mod.bind(it.provide_data, label_shapes=it.provide_label, for_training=True)
    if monitor is not None:
        mod.install_monitor(monitor)
    mod.init_params(arg_params={"fc_0_weight": mx.nd.array(W0), "fc_0_bias": mx.nd.array(B0),
                                "fc_1_weight": mx.nd.array(W1), "fc_1_bias": mx.nd.array(B1)})
    return mod, next(iter(it))


def _data_gradient():
    """d(loss)/d(data) by hand: LinearRegressionOutput's gradient is
    grad_scale * (out - label) / (outputs per sample)."""
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    h = sig(X @ W0.T + B0)
    out = sig(h @ W1.T + B1)
    d_out = 2 * (out - LABEL) / LABEL.shape[1] * out * (1 - out)
    d_h = (d_out @ W1) * h * (1 - h)
    return d_h @ W0


def test_backward_outputs_match_mxnet():
    mon = mx.mon.Monitor(1, stat_func=_mean_abs, pattern=".*", sort=True)
    mod, batch = _module(mon)
    mon.tic()
    mod.forward_backward(batch)
    stats = {name: float(text) for _, name, text in mon.toc()}
    assert len(stats) == 21
    for name, value in MXNET_STATS.items():
        assert stats[name] == pytest.approx(value, rel=1e-5), name
    assert stats["fc_0_backward_output0"] == pytest.approx(np.abs(_data_gradient()).mean(),
                                                           rel=1e-5)
    assert stats["softmax_backward_output1"] == 0.0


def test_the_trained_executor_is_unchanged_by_monitoring():
    mon = mx.mon.Monitor(1, stat_func=_mean_abs)
    watched, batch = _module(mon)
    plain, _ = _module()
    for _ in range(2):
        mon.tic()
        for mod in (watched, plain):
            mod.forward_backward(batch)
        mon.toc()
    for a, b in zip(watched._exec_group.grad_arrays, plain._exec_group.grad_arrays, strict=True):
        np.testing.assert_array_equal(a[0].asnumpy(), b[0].asnumpy())
    np.testing.assert_array_equal(watched.get_outputs()[0].asnumpy(),
                                  plain.get_outputs()[0].asnumpy())


def test_auxiliary_states_are_neither_probed_nor_updated_twice():
    data = mx.sym.var("data")
    net = mx.sym.MakeLoss(mx.sym.sum(mx.sym.BatchNorm(data, name="bn"), name="total"),
                          name="loss")
    probe, probes = monitor_backward.probe_symbol(net, {"bn_moving_mean", "bn_moving_var"})
    assert [label for label, _ in probes] == [
        "bn_backward_output0", "bn_backward_output1", "bn_backward_output2",
        "total_backward_output", "loss_backward_output"]
    assert set(probe.list_auxiliary_states()) == {"bn_moving_mean", "bn_moving_var"}

    def run(monitor):
        exe = net.simple_bind(mx.cpu(), data=(4, 3))
        exe.arg_dict["data"][:] = mx.nd.array(np.arange(12).reshape(4, 3))
        if monitor is not None:
            monitor.install(exe)
            monitor.tic()
        exe.forward(is_train=True)
        exe.backward()
        names = [name for _, name, _ in monitor.toc()] if monitor is not None else []
        return exe.aux_dict["bn_moving_mean"].asnumpy(), names

    watched, names = run(mx.mon.Monitor(1))
    plain, _ = run(None)
    np.testing.assert_array_equal(watched, plain)
    assert "bn_backward_output0" in names


def test_nothing_is_probed_while_not_collecting():
    mon = mx.mon.Monitor(2, stat_func=_mean_abs)
    mod, batch = _module(mon)
    mon.tic()
    mod.forward_backward(batch)
    assert any("backward" in name for _, name, _ in mon.toc())
    mon.tic()  # step 1 of interval 2: not collecting
    mod.forward_backward(batch)
    assert mon.toc() == []


def test_a_probe_that_cannot_be_built_warns_once_and_training_goes_on(monkeypatch):
    def fail(exe):
        raise MXNetError("no probe")

    monkeypatch.setattr("ferrograd.monitor.BackwardProbe", fail)
    mon = mx.mon.Monitor(1, stat_func=_mean_abs)
    mod, batch = _module(mon)
    mon.tic()
    with pytest.warns(UserWarning, match="backward outputs are not available.*no probe"):
        mod.forward_backward(batch)
    assert not any("backward" in name for _, name, _ in mon.toc())
    mon.tic()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod.forward_backward(batch)
    mon.toc()
