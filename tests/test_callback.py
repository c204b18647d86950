"""mx.callback: log lines in MXNet's formats, checkpoints every `period` epochs."""

import logging

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import callback

nd = mx.nd


class _Metric:
    """A stand-in metric recording resets."""

    def __init__(self, pairs):
        self.pairs = pairs
        self.local_resets = 0

    def get_name_value(self):
        return self.pairs

    def reset_local(self):
        self.local_resets += 1


@pytest.fixture
def clock(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(callback.time, "time", lambda: now[0])
    return now


def _param(nbatch, metric=None, epoch=0):
    return mx.model.BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=metric, locals=None)


def test_speedometer_logs_speed_and_metric(caplog, clock):
    caplog.set_level(logging.INFO)
    metric = _Metric([("accuracy", 0.5), ("ce", 1.25)])
    speed = mx.callback.Speedometer(batch_size=8, frequent=2)
    speed(_param(0, metric))           # starts the clock
    clock[0] += 4.0
    speed(_param(1, metric))           # not a multiple of frequent: silent
    speed(_param(2, metric, epoch=3))  # 2 batches x 8 samples in 4 s
    assert caplog.messages == ["Epoch[3] Batch [0-2]\tSpeed: 4.00 samples/sec"
                               "\taccuracy=0.500000\tce=1.250000"]
    assert metric.local_resets == 1
    caplog.clear()
    speed(_param(0, metric))  # a new epoch restarts the clock without logging
    assert caplog.messages == []


def test_speedometer_without_reset_or_metric(caplog, clock):
    caplog.set_level(logging.INFO)
    metric = _Metric([("mse", 2.0)])
    speed = mx.callback.Speedometer(batch_size=10, frequent=1, auto_reset=False)
    speed(_param(0, metric))
    clock[0] += 2.0
    speed(_param(1, metric))
    plain = mx.callback.Speedometer(batch_size=10, frequent=1)
    plain(_param(0))
    clock[0] += 5.0
    plain(_param(1))
    assert caplog.messages == ["Epoch[0] Batch [0-1]\tSpeed: 5.00 samples/sec\tmse=2.000000",
                               "Iter[0] Batch [1]\tSpeed: 2.00 samples/sec"]
    assert metric.local_resets == 0


def test_progress_bar_and_metric_loggers(caplog):
    caplog.set_level(logging.INFO)
    mx.callback.ProgressBar(total=4, length=8)(_param(1))
    mx.callback.LogValidationMetricsCallback()(_param(2, _Metric([("acc", 0.75)]), epoch=5))
    mx.callback.LogValidationMetricsCallback()(_param(2, None))
    train = _Metric([("acc", 0.25)])
    log = mx.callback.log_train_metric(period=2, auto_reset=True)
    log(_param(1, train))
    log(_param(2, train))
    assert caplog.messages == ["[==------] 25%\r", "Epoch[5] Validation-acc=0.750000",
                               "Iter[0] Batch[2] Train-acc=0.250000"]
    assert train.local_resets == 1


def _net():
    return mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")


def test_do_checkpoint_every_period(tmp_path):
    prefix = str(tmp_path / "ck")
    save = mx.callback.do_checkpoint(prefix, period=2)
    args = {"fc_weight": nd.array(np.arange(6).reshape(2, 3)), "fc_bias": nd.zeros(2)}
    for epoch in range(4):
        save(epoch, _net(), args, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ck-0002.params", "ck-0004.params", "ck-symbol.json"]
    _, loaded, _ = mx.model.load_checkpoint(prefix, 4)
    np.testing.assert_array_equal(loaded["fc_weight"].asnumpy(), np.arange(6).reshape(2, 3))


def test_module_checkpoint_saves_the_module(tmp_path):
    mod = mx.mod.Module(_net(), ("data",), None)
    mod.bind(data_shapes=[("data", (1, 3))])
    mod.init_params(mx.init.One())
    save = mx.callback.module_checkpoint(mod, str(tmp_path / "m"), period=0)  # period >= 1
    save(0)
    _, args, _ = mx.model.load_checkpoint(str(tmp_path / "m"), 1)
    assert args["fc_weight"].asnumpy().tolist() == [[1, 1, 1]] * 2


def test_contrib_amp_imports_and_each_function_says_it_is_missing():
    from ferrograd.contrib.amp import amp

    assert len(amp.__all__) == 14
    for name in amp.__all__:
        with pytest.raises(NotImplementedError, match=f"mx.contrib.amp.{name}: automatic mixed"):
            getattr(mx.contrib.amp, name)()


def test_monitor_collects_outputs_and_arguments_every_interval(caplog):
    net = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc"),
                            act_type="relu", name="act")
    mod = mx.mod.Module(net, ("data",), None)
    mod.bind(data_shapes=[("data", (1, 3))])
    mod.init_params(mx.init.One())
    mon = mx.mon.Monitor(2, pattern="fc|act|data", sort=True)
    mod.install_monitor(mon)
    x = mx.io.DataBatch([nd.array([[1.0, -2.0, 4.0]])])
    mon.tic()
    mod.forward(x, is_train=True)
    res = mon.toc()
    # fc = [3, 3]: norm / sqrt(size) = 3; act the same; the weights are ones, the bias zeros
    assert [(step, name) for step, name, _ in res] == [
        (1, "act_output"), (1, "data"), (1, "fc_bias"), (1, "fc_output"), (1, "fc_weight")]
    values = {name: float(text) for _, name, text in res}
    assert values == pytest.approx({"act_output": 3.0, "data": np.sqrt(21 / 3),
                                    "fc_bias": 0.0, "fc_output": 3.0, "fc_weight": 1.0})
    mon.tic()  # the second batch is not monitored (interval 2)
    mod.forward(x, is_train=True)
    assert mon.toc() == []
    caplog.set_level(logging.INFO)
    mon.tic()
    mod.forward(x, is_train=True)
    mon.toc_print()
    assert caplog.messages[0].startswith("Batch:       3 act_output")
    with pytest.raises(ValueError, match="interval"):
        mx.mon.Monitor(0)
