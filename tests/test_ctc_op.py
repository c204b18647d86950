"""The ``CTCLoss`` op: NDArray and Symbol forms against MXNet 1.9.1's numbers
(tests/fixtures/gen_mxnet_ctc_op.py), gluon ``CTCLoss`` on Symbols and hybridized, the cases MXNet
got wrong, and bad input."""

import json
import os

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import gluon, nd

with open(os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_ctc_op.json")) as _f:
    CASES = json.load(_f)
IDS = [json.dumps(c["kwargs"], sort_keys=True) for c in CASES]


def _input_names(kwargs):
    names = ["data", "label"]
    if kwargs.get("use_data_lengths"):
        names.append("data_lengths")
    if kwargs.get("use_label_lengths"):
        names.append("label_lengths")
    return names


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ndarray_matches_mxnet(case):
    arrays = [nd.array(a) for a in case["inputs"]]
    arrays[0].attach_grad()
    with mx.autograd.record():
        loss = nd.CTCLoss(*arrays, **case["kwargs"])
    loss.backward(nd.array(case["head"]))
    np.testing.assert_allclose(loss.asnumpy(), case["loss"], rtol=1e-5)
    np.testing.assert_allclose(arrays[0].grad.asnumpy(), case["grad"], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ndarray_by_keyword_matches_mxnet(case):
    # Lengths by keyword, the other one omitted (a gap in the optional inputs), as MXNet allows.
    names = _input_names(case["kwargs"])
    arrays = {n: nd.array(a) for n, a in zip(names, case["inputs"], strict=True)}
    loss = nd.CTCLoss(**arrays, **case["kwargs"])
    np.testing.assert_allclose(loss.asnumpy(), case["loss"], rtol=1e-5)


def test_a_missing_required_input_is_named():
    with pytest.raises(TypeError, match="missing required input.*label"):
        nd.CTCLoss(data=nd.zeros((3, 1, 4)), label_lengths=nd.array([1]), use_label_lengths=True)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_symbol_matches_mxnet(case):
    names = _input_names(case["kwargs"])
    out = mx.sym.CTCLoss(*[mx.sym.var(n) for n in names], name="ctc", **case["kwargs"])
    assert out.list_arguments() == names
    assert len(out.list_outputs()) == 1
    values = dict(zip(names, (np.array(a, np.float32) for a in case["inputs"]), strict=True))
    exe = out.simple_bind(mx.cpu(), grad_req={n: "write" if n == "data" else "null"
                                              for n in names},
                          **{k: v.shape for k, v in values.items()})
    for k, v in values.items():
        exe.arg_dict[k][:] = v
    exe.forward(is_train=True)
    exe.backward(nd.array(case["head"]))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), case["loss"], rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), case["grad"], rtol=1e-4,
                               atol=1e-6)


def test_names_aliases_and_json_round_trip():
    assert nd.contrib.CTCLoss is nd.CTCLoss and nd.contrib.ctc_loss is nd.ctc_loss
    with mx.name.NameManager():
        auto = mx.sym.contrib.CTCLoss(mx.sym.var("d"), mx.sym.var("l"))
    assert auto.name == "ctcloss0"
    made = mx.sym.CTCLoss(name="c", use_data_lengths=True, blank_label="last")
    assert made.list_arguments() == ["c_data", "c_label", "c_data_lengths"]
    back = mx.sym.load_json(made.tojson())
    assert back.list_arguments() == made.list_arguments()
    node = json.loads(back.tojson())["nodes"][-1]
    assert node["op"] == "CTCLoss"
    assert node["attrs"] == {"use_data_lengths": "True", "blank_label": "last"}
    assert made.infer_shape(c_data=(7, 2, 5), c_label=(2, 3), c_data_lengths=(2,))[1] == [(2,)]


def test_empty_label_is_the_all_blank_path():
    # MXNet returned 0 here; the probability of "nothing" is that of blanks at every step.
    scores = np.random.RandomState(0).normal(size=(4, 1, 3))
    loss = nd.CTCLoss(nd.array(scores, dtype="float64"), nd.array([[0, 0]])).asnumpy()
    logp = scores[:, 0] - np.log(np.exp(scores[:, 0]).sum(1, keepdims=True))
    np.testing.assert_allclose(loss, [-logp[:, 0].sum()], rtol=1e-12)


def test_impossible_alignment_is_infinite_with_zero_gradient():
    x = nd.ones((2, 1, 4))
    x.attach_grad()
    with mx.autograd.record():
        loss = nd.CTCLoss(x, nd.array([[1, 1]]))  # needs 1, blank, 1: three steps
    loss.backward()
    assert np.isinf(loss.asnumpy()).all()
    assert (x.grad.asnumpy() == 0).all()


def test_float64_keeps_its_dtype():
    loss = nd.CTCLoss(nd.ones((3, 2, 4), dtype="float64"), nd.array([[1], [2]]))
    assert loss.dtype == np.float64
    # Uniform scores: each step is 1/4 per class; one symbol in 3 steps has 6 alignments
    # (a run of 1, 2 or 3 copies placed among blanks: 3 + 2 + 1).
    np.testing.assert_allclose(loss.asnumpy(), [-np.log(6 / 64)] * 2, rtol=1e-12)


def _ctc_net(layout):
    pred, label = mx.sym.var("pred"), mx.sym.var("label")
    return gluon.loss.CTCLoss(layout=layout)(pred, label), pred, label


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
def test_gluon_loss_on_symbols_matches_ndarrays(layout):
    rng = np.random.RandomState(3)
    scores = rng.normal(size=(2, 6, 4)).astype(np.float32)
    if layout == "TNC":
        scores = scores.transpose(1, 0, 2).copy()
    labels = np.array([[0, 1, -1], [2, 2, 1]], np.float32)
    loss = gluon.loss.CTCLoss(layout=layout)
    eager = loss(nd.array(scores), nd.array(labels)).asnumpy()
    out, _, _ = _ctc_net(layout)
    exe = out.bind(mx.cpu(), {"pred": nd.array(scores), "label": nd.array(labels)})
    exe.forward()
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), eager, rtol=1e-6)


def test_gluon_loss_hybridized_with_lengths_and_weights():
    rng = np.random.RandomState(4)
    scores = nd.array(rng.normal(size=(2, 5, 4)))
    labels = nd.array([[0, 1, 2], [2, 1, 0]])
    args = (scores, labels, nd.array([4, 5]), nd.array([2, 3]), nd.array([0.5, 2.0]))
    loss = gluon.loss.CTCLoss()
    eager = loss(*args).asnumpy()
    loss.hybridize()
    np.testing.assert_allclose(loss(*args).asnumpy(), eager, rtol=1e-6)
    plain = nd.CTCLoss(nd.swapaxes(scores, 0, 1), labels, nd.array([4, 5]), nd.array([2, 3]),
                       use_data_lengths=True, use_label_lengths=True, blank_label="last")
    np.testing.assert_allclose(eager, plain.asnumpy() * [0.5, 2.0], rtol=1e-6)


def test_module_trains_through_a_gluon_ctc_loss():
    rng = np.random.RandomState(5)
    data = nd.array(rng.uniform(-1, 1, (8, 6, 3)))
    label = nd.array(np.tile([0, 1], (8, 1)))
    x = mx.sym.var("data")
    net = mx.sym.FullyConnected(x, num_hidden=4, flatten=False, name="fc")
    loss = mx.sym.make_loss(gluon.loss.CTCLoss()(net, mx.sym.var("label")))
    mod = mx.mod.Module(loss, data_names=("data",), label_names=("label",))
    it = mx.io.NDArrayIter(data, label, batch_size=4, label_name="label")
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="adam", optimizer_params={"learning_rate": 0.05})

    def mean_loss():
        it.reset()
        total = []
        for batch in it:
            mod.forward(batch, is_train=False)
            total.append(mod.get_outputs()[0].asnumpy().mean())
        return np.mean(total)

    before = mean_loss()
    for _ in range(30):
        it.reset()
        for batch in it:
            mod.forward_backward(batch)
            mod.update()
    assert mean_loss() < 0.5 * before


@pytest.mark.parametrize("data_shape,label,match", [
    ((3, 4), [[1]], "data must have shape"),
    ((3, 2, 4), [[1]], r"label \(N, L\)"),
    ((3, 1, 4), [[4]], r"label values must lie in \[1, 4\)"),
    ((3, 1, 4), [[-2]], r"label values must lie in \[1, 4\)"),
])
def test_bad_shapes_and_labels(data_shape, label, match):
    with pytest.raises((ValueError, mx.base.MXNetError), match=match):
        nd.CTCLoss(nd.ones(data_shape), nd.array(label))


def test_bad_lengths():
    x = nd.ones((3, 1, 4))
    with pytest.raises(ValueError, match=r"data_lengths\[0\] = 4 is outside \[1, 3\]"):
        nd.CTCLoss(x, nd.array([[1]]), nd.array([4]), use_data_lengths=True)
    with pytest.raises(ValueError, match=r"label_lengths\[0\] = 3 is outside \[0, 2\]"):
        nd.CTCLoss(x, nd.array([[1, 2]]), nd.array([3]), use_label_lengths=True)
    with pytest.raises(ValueError, match="lengths"):
        nd.CTCLoss(x, nd.array([[1]]), nd.array([1, 1]), use_data_lengths=True)
    with pytest.raises((TypeError, ValueError), match="CTCLoss"):
        nd.CTCLoss(x, nd.array([[1]]), use_data_lengths=True)  # the lengths input is missing
