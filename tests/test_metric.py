"""mx.metric: values against NumPy formulas written here and against MXNet 1.9.1's own numbers
(tests/fixtures/mxnet_metrics.json, from gen_mxnet_metrics.py), local vs global statistics,
the registry, NumPy inputs and bad input."""

import json
import math
import os

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import nd

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_metrics.json")
with open(FIXTURE) as _f:
    MXNET = json.load(_f)


@pytest.mark.parametrize("case", MXNET["cases"],
                         ids=[f"{c['name']}-{c['kwargs']}" for c in MXNET["cases"]])
def test_matches_mxnet(case):
    labels, preds = MXNET["inputs"][case["data"]]
    metric = mx.metric.create(case["name"], **case["kwargs"])
    for i, (label, pred) in enumerate(zip(labels, preds, strict=True)):
        metric.update([nd.array(label)], [nd.array(pred)])
        local, global_ = case["steps"][i]
        name, value = metric.get()
        assert name == case["metric_name"]
        assert value == pytest.approx(local, rel=1e-5, abs=1e-7)
        if case["name"] == "pearsonr" and case["kwargs"].get("average") == "micro":
            # MXNet's get_global is 0 here (it never fills the global sums); ours is the value.
            assert metric.get_global()[1] == pytest.approx(value)
        else:
            assert metric.get_global()[1] == pytest.approx(global_, rel=1e-5, abs=1e-7)
        if i == 1:
            metric.reset_local()


def test_accuracy_against_numpy():
    pred = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]])
    label = np.array([1, 1, 1])
    acc = mx.metric.Accuracy()
    acc.update([nd.array(label)], [nd.array(pred)])
    assert acc.get() == ("accuracy", pytest.approx(2 / 3))
    acc.update(nd.array([0, 1]), nd.array([0, 0]))       # single arrays, class indices
    assert acc.get()[1] == pytest.approx(3 / 5)
    assert acc.num_inst == 5


def test_numpy_inputs_are_accepted():
    for name in ("acc", "mae", "mse", "rmse", "ce", "f1"):
        label = np.array([0, 1, 1, 0], dtype=np.float32)
        pred = np.array([[0.7, 0.3], [0.2, 0.8], [0.6, 0.4], [0.9, 0.1]], dtype=np.float32)
        if name in ("mae", "mse", "rmse"):
            pred = pred[:, 1]
        a = mx.metric.create(name)
        b = mx.metric.create(name)
        a.update([label], [pred])
        b.update([nd.array(label)], [nd.array(pred)])
        assert a.get()[1] == pytest.approx(b.get()[1])


def test_regression_metrics():
    label = np.array([1.0, 2.0, 3.0, 4.0])
    pred = np.array([1.5, 2.0, 2.0, 5.0])
    for name, ref in (("mae", np.abs(label - pred).mean()),
                      ("mse", ((label - pred) ** 2).mean()),
                      ("rmse", np.sqrt(((label - pred) ** 2).mean()))):
        m = mx.metric.create(name)
        m.update(nd.array(label), nd.array(pred))
        assert m.get()[1] == pytest.approx(ref)


def test_f1_formula():
    pred = nd.array([[0.3, 0.7], [0.6, 0.4], [0.1, 0.9], [0.2, 0.8]])
    label = nd.array([1, 1, 0, 1])
    m = mx.metric.F1()
    m.update([label], [pred])
    tp, fp, fn = 2, 1, 1
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    assert m.get()[1] == pytest.approx(2 * precision * recall / (precision + recall))


def test_f1_rejects_multiclass():
    with pytest.raises(ValueError, match="binary"):
        mx.metric.F1().update([nd.array([0, 1, 2])], [nd.array(np.eye(3))])


def test_perplexity_ignore_label():
    pred = np.array([[0.5, 0.5], [0.2, 0.8], [0.9, 0.1]], dtype=np.float32)
    label = np.array([0, 1, 1])
    m = mx.metric.Perplexity(ignore_label=1)
    m.update([nd.array(label)], [nd.array(pred)])
    assert m.get()[1] == pytest.approx(math.exp(-np.log(0.5)))
    m = mx.metric.Perplexity(ignore_label=None)
    m.update([nd.array(label)], [nd.array(pred)])
    assert m.get()[1] == pytest.approx(math.exp(-np.log([0.5, 0.8, 0.1]).mean()), rel=1e-6)


def test_topk():
    pred = nd.array([[0.1, 0.5, 0.4], [0.6, 0.3, 0.1]])
    m = mx.metric.TopKAccuracy(top_k=2)
    m.update([nd.array([2, 2])], [pred])
    assert m.get() == ("top_k_accuracy_2", 0.5)


def test_loss_metric_and_custom():
    m = mx.metric.Loss()
    m.update(None, [nd.array([1.0, 2.0]), nd.array([3.0])])
    assert m.get() == ("loss", 2.0)

    def mean_abs(label, pred):
        assert isinstance(label, np.ndarray) and isinstance(pred, np.ndarray)
        return np.abs(label - pred).mean()

    c = mx.metric.create(mean_abs)
    c.update([nd.array([1.0, 2.0])], [nd.array([2.0, 2.0])])
    assert c.get() == ("mean_abs", 0.5)
    pair = mx.metric.np(lambda label, pred: (float((label == pred).sum()), label.size))
    pair.update([nd.array([1, 2, 3])], [nd.array([1, 0, 3])])
    assert pair.get()[0] == "custom(<lambda>)"
    assert pair.get()[1] == pytest.approx(2 / 3)


def test_composite_and_config_round_trip():
    comp = mx.metric.create(["acc", "mae"])
    assert isinstance(comp, mx.metric.CompositeEvalMetric)
    comp.update([nd.array([1, 0])], [nd.array([[0.2, 0.8], [0.6, 0.4]])])
    names, values = comp.get()
    assert names == ["accuracy", "mae"]
    assert values[0] == 1.0
    config = comp.get_config()
    again = mx.metric.create(json.dumps(config))
    assert again.get_config() == config
    assert comp.get_name_value()[0] == ("accuracy", 1.0)


def test_global_survives_reset_local():
    m = mx.metric.Accuracy()
    m.update([nd.array([1])], [nd.array([[0.0, 1.0]])])
    m.reset_local()
    m.update([nd.array([1])], [nd.array([[1.0, 0.0]])])
    assert m.get()[1] == 0.0
    assert m.get_global()[1] == 0.5
    m.reset()
    assert math.isnan(m.get_global()[1])


def test_update_dict_selects_names():
    m = mx.metric.Accuracy(output_names=["out"], label_names=["lab"])
    m.update_dict({"lab": nd.array([1]), "other": nd.array([0])},
                  {"out": nd.array([[0.0, 1.0]]), "x": nd.array([[1.0, 0.0]])})
    assert m.get()[1] == 1.0


def test_register_and_alias():
    @mx.metric.register
    @mx.metric.alias("always_one")
    class AlwaysOne(mx.metric.EvalMetric):
        def __init__(self):
            super().__init__("one")

        def update(self, labels, preds):
            self.sum_metric += 1
            self.num_inst += 1

    m = mx.metric.create("always_one")
    m.update(None, None)
    assert m.get() == ("one", 1.0)


def test_unknown_metric_lists_known_names():
    with pytest.raises(ValueError, match=r"unknown metric 'nope'.*acc"):
        mx.metric.create("nope")


def test_shape_mismatch_names_both():
    with pytest.raises(ValueError, match=r"labels 2 does not match shape of predictions 1"):
        mx.metric.Accuracy().update([nd.array([1]), nd.array([0])], [nd.array([1])])
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        mx.metric.PearsonCorrelation().update([nd.array([1, 2, 3])], [nd.array([1, 2])])
