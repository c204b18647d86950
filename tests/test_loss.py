"""gluon.loss against NumPy formulas written here: values with weight, sample_weight and
batch_axis, gradients through autograd, symbolic execution, CTC against brute-force alignment
enumeration, and bad input."""

import itertools
import json
import os

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import gluon, nd

RNG = np.random.default_rng(17)
PRED = RNG.uniform(-2, 2, size=(4, 3)).astype(np.float32)
LABEL = RNG.uniform(-2, 2, size=(4, 3)).astype(np.float32)
SIGNS = np.sign(RNG.uniform(-1, 1, size=(4, 3))).astype(np.float32)
BINARY = (RNG.uniform(size=(4, 3)) > 0.5).astype(np.float32)
SAMPLE_W = np.array([[0.5], [1.0], [2.0], [0.0]], dtype=np.float32)


def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _log_softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))


def _huber(p, y, rho=1.0):
    d = np.abs(y - p)
    return np.where(d > rho, d - 0.5 * rho, 0.5 / rho * d ** 2)


# (loss factory, inputs, NumPy per-element loss before weighting and the per-sample mean)
ELEMENTWISE = [
    ("l2", lambda: gluon.loss.L2Loss(), (PRED, LABEL), lambda p, y: 0.5 * (y - p) ** 2),
    ("l2w", lambda: gluon.loss.L2Loss(weight=3.0), (PRED, LABEL), lambda p, y: 1.5 * (y - p) ** 2),
    ("l1", lambda: gluon.loss.L1Loss(), (PRED, LABEL), lambda p, y: np.abs(y - p)),
    ("l1w", lambda: gluon.loss.L1Loss(weight=0.5), (PRED, LABEL),
     lambda p, y: 0.5 * np.abs(y - p)),
    ("bce", lambda: gluon.loss.SigmoidBCELoss(), (PRED, BINARY),
     lambda p, y: -(y * np.log(_sigmoid(p)) + (1 - y) * np.log(1 - _sigmoid(p)))),
    ("bce_sig", lambda: gluon.loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=True),
     (_sigmoid(PRED), BINARY),
     lambda p, y: -(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))),
    ("huber", lambda: gluon.loss.HuberLoss(), (PRED, LABEL), _huber),
    ("huber_rho", lambda: gluon.loss.HuberLoss(rho=0.5), (PRED, LABEL),
     lambda p, y: _huber(p, y, 0.5)),
    ("hinge", lambda: gluon.loss.HingeLoss(), (PRED, SIGNS),
     lambda p, y: np.maximum(0, 1 - p * y)),
    ("hinge_margin", lambda: gluon.loss.HingeLoss(margin=2), (PRED, SIGNS),
     lambda p, y: np.maximum(0, 2 - p * y)),
    ("sqhinge", lambda: gluon.loss.SquaredHingeLoss(), (PRED, SIGNS),
     lambda p, y: np.maximum(0, 1 - p * y) ** 2),
    ("logistic", lambda: gluon.loss.LogisticLoss(), (PRED, SIGNS),
     lambda p, y: np.log1p(np.exp(-p * y))),
    ("logistic_bin", lambda: gluon.loss.LogisticLoss(label_format="binary"), (PRED, BINARY),
     lambda p, y: np.log1p(np.exp(-p * (2 * y - 1)))),
]


@pytest.mark.parametrize("name, make, inputs, ref", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_elementwise_losses(name, make, inputs, ref):
    loss = make()
    pred, label = inputs
    out = loss(nd.array(pred), nd.array(label)).asnumpy()
    np.testing.assert_allclose(out, ref(pred, label).mean(axis=1), rtol=1e-5, atol=1e-6)
    weighted = loss(nd.array(pred), nd.array(label), nd.array(SAMPLE_W)).asnumpy()
    np.testing.assert_allclose(weighted, (ref(pred, label) * SAMPLE_W).mean(axis=1),
                               rtol=1e-5, atol=1e-6)


def test_kl_div_sums_over_the_distribution():
    label = np.exp(_log_softmax(LABEL))
    ref = (label * (np.log(label + 1e-12) - _log_softmax(PRED))).sum(axis=1)
    out = gluon.loss.KLDivLoss()(nd.array(_log_softmax(PRED)), nd.array(label)).asnumpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    out = gluon.loss.KLDivLoss(from_logits=False)(nd.array(PRED), nd.array(label),
                                                  nd.array(SAMPLE_W)).asnumpy()
    np.testing.assert_allclose(out, ref * SAMPLE_W[:, 0], rtol=1e-5, atol=1e-6)


def test_label_reshaped_like_prediction():
    pred = np.array([[1.0], [2.0], [4.0]], dtype=np.float32)
    label = np.array([0.0, 3.0, 4.0], dtype=np.float32)
    out = gluon.loss.L2Loss()(nd.array(pred), nd.array(label)).asnumpy()
    np.testing.assert_allclose(out, [0.5, 0.5, 0.0])


def test_batch_axis_one_averages_the_other_axes():
    pred = RNG.uniform(size=(2, 5, 3)).astype(np.float32)
    label = RNG.uniform(size=(2, 5, 3)).astype(np.float32)
    out = gluon.loss.L1Loss(batch_axis=1)(nd.array(pred), nd.array(label)).asnumpy()
    np.testing.assert_allclose(out, np.abs(pred - label).mean(axis=(0, 2)), rtol=1e-6)


def test_bce_pos_weight():
    pos_w = np.array([[1.0, 2.0, 0.5]] * 4, dtype=np.float32)
    ref = -(pos_w * BINARY * np.log(_sigmoid(PRED)) + (1 - BINARY) * np.log(1 - _sigmoid(PRED)))
    for from_sigmoid, pred in ((False, PRED), (True, _sigmoid(PRED))):
        loss = gluon.loss.SigmoidBCELoss(from_sigmoid=from_sigmoid)
        out = loss(nd.array(pred), nd.array(BINARY), None, nd.array(pos_w)).asnumpy()
        np.testing.assert_allclose(out, ref.mean(axis=1), rtol=1e-4, atol=1e-6)


def test_bce_is_stable_for_large_logits():
    out = gluon.loss.SigmoidBCELoss()(nd.array([[-100.0, 100.0]]), nd.array([[1.0, 0.0]]))
    np.testing.assert_allclose(out.asnumpy(), [100.0], rtol=1e-6)


def test_softmax_ce_sparse_and_dense():
    sparse = np.array([0, 2, 1, 2], dtype=np.float32)
    logp = _log_softmax(PRED)
    ref = -logp[np.arange(4), sparse.astype(int)]
    out = gluon.loss.SoftmaxCrossEntropyLoss()(nd.array(PRED), nd.array(sparse))
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5)
    dense = np.eye(3, dtype=np.float32)[sparse.astype(int)] * 0.7 + 0.1
    out = gluon.loss.SoftmaxCELoss(sparse_label=False)(nd.array(PRED), nd.array(dense))
    np.testing.assert_allclose(out.asnumpy(), -(logp * dense).sum(axis=1), rtol=1e-5)
    out = gluon.loss.SoftmaxCELoss(from_logits=True)(nd.array(logp), nd.array(sparse))
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5)
    weighted = gluon.loss.SoftmaxCELoss(weight=2.0)(nd.array(PRED), nd.array(sparse),
                                                    nd.array(SAMPLE_W))
    np.testing.assert_allclose(weighted.asnumpy(), 2 * ref * SAMPLE_W[:, 0], rtol=1e-5)


def test_softmax_ce_axis():
    x = RNG.uniform(size=(2, 3, 4)).astype(np.float32)
    label = np.array([[0, 1, 2, 0], [2, 2, 1, 0]], dtype=np.float32)
    out = gluon.loss.SoftmaxCELoss(axis=1)(nd.array(x), nd.array(label)).asnumpy()
    logp = _log_softmax(x, axis=1)
    picked = np.take_along_axis(logp, label.astype(int)[:, None, :], axis=1)[:, 0, :]
    np.testing.assert_allclose(out, -picked.mean(axis=1), rtol=1e-5)


def test_softmax_ce_gradient_is_softmax_minus_onehot():
    label = np.array([0, 2, 1, 2])
    x = nd.array(PRED)
    x.attach_grad()
    with mx.autograd.record():
        out = gluon.loss.SoftmaxCELoss()(x, nd.array(label))
    out.backward()
    soft = np.exp(_log_softmax(PRED))
    np.testing.assert_allclose(x.grad.asnumpy(), soft - np.eye(3)[label], rtol=1e-5, atol=1e-6)


def test_triplet_loss():
    pos = RNG.uniform(size=(4, 3)).astype(np.float32)
    neg = RNG.uniform(size=(4, 3)).astype(np.float32)
    out = gluon.loss.TripletLoss(margin=0.5)(nd.array(PRED), nd.array(pos), nd.array(neg))
    ref = np.maximum(0, ((pos - PRED) ** 2 - (neg - PRED) ** 2).sum(axis=1) + 0.5)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_poisson_nll():
    rate = RNG.uniform(0.5, 3, size=(4, 3)).astype(np.float32)
    target = np.array([[0, 1, 2], [3, 0, 5], [1, 1, 1], [4, 2, 0]], dtype=np.float32)
    out = gluon.loss.PoissonNLLLoss()(nd.array(np.log(rate)), nd.array(target)).asnumpy()
    np.testing.assert_allclose(out, [np.mean(rate - target * np.log(rate))], rtol=1e-5)
    out = gluon.loss.PoissonNLLLoss(from_logits=False)(nd.array(rate), nd.array(target))
    np.testing.assert_allclose(out.asnumpy(), [np.mean(rate - target * np.log(rate + 1e-8))],
                               rtol=1e-5)
    full = gluon.loss.PoissonNLLLoss(from_logits=False, compute_full=True)
    out = full(nd.array(rate), nd.array(target)).asnumpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        stirling = target * np.log(target) - target + 0.5 * np.log(2 * np.pi * target)
    ref = rate - target * np.log(rate + 1e-8) + np.where(target > 1, stirling, 0)
    # Targets of 0 stay finite (MXNet's product with the mask gives NaN there).
    np.testing.assert_allclose(out, [ref.mean()], rtol=1e-5)


def test_cosine_embedding_loss():
    a = RNG.normal(size=(4, 3)).astype(np.float32)
    b = RNG.normal(size=(4, 3)).astype(np.float32)
    label = np.array([1, -1, 1, -1], dtype=np.float32)
    out = gluon.loss.CosineEmbeddingLoss(margin=0.1)(nd.array(a), nd.array(b), nd.array(label))
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    ref = np.where(label == 1, 1 - cos, np.maximum(0, cos - 0.1))
    assert out.shape == (4, 1)
    np.testing.assert_allclose(out.asnumpy()[:, 0], ref, rtol=1e-5, atol=1e-6)


def test_sdml_loss():
    x1 = RNG.normal(size=(3, 2)).astype(np.float32)
    x2 = RNG.normal(size=(3, 2)).astype(np.float32)
    out = gluon.loss.SDMLLoss(smoothing_parameter=0.3)(nd.array(x1), nd.array(x2)).asnumpy()
    dist = ((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1)
    logp = _log_softmax(-dist, axis=1)
    labels = np.eye(3) * 0.7 + (1 - np.eye(3)) * 0.15
    ref = (labels * (np.log(labels + 1e-12) - logp)).sum(axis=1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_l2_gradient():
    x = nd.array(PRED)
    x.attach_grad()
    with mx.autograd.record():
        out = gluon.loss.L2Loss()(x, nd.array(LABEL))
    out.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), (PRED - LABEL) / 3, rtol=1e-5, atol=1e-6)


SPARSE = np.array([0, 2, 1, 2], dtype=np.float32)
SYMBOLIC = [
    ("l2", gluon.loss.L2Loss, (PRED, LABEL)),
    ("l2_vectors", gluon.loss.L2Loss, (PRED[:, 0], LABEL[:, 0])),
    ("l1_column_vs_vector", gluon.loss.L1Loss, (PRED[:, :1], LABEL[:, 0])),
    ("huber", gluon.loss.HuberLoss, (PRED, LABEL)),
    ("bce", gluon.loss.SigmoidBCELoss, (PRED, BINARY)),
    ("bce_pos_weight", gluon.loss.SigmoidBCELoss, (PRED, BINARY, None, BINARY + 1)),
    ("softmax_ce", gluon.loss.SoftmaxCELoss, (PRED, SPARSE)),
    ("softmax_ce_weighted", gluon.loss.SoftmaxCELoss, (PRED, SPARSE, SAMPLE_W)),
    ("kl", gluon.loss.KLDivLoss, (PRED, np.exp(_log_softmax(LABEL)))),
    ("logistic", gluon.loss.LogisticLoss, (PRED, SIGNS)),
    ("triplet", gluon.loss.TripletLoss, (PRED, LABEL, LABEL * 2)),
    ("poisson_full", lambda: gluon.loss.PoissonNLLLoss(compute_full=True), (PRED, BINARY * 3)),
    ("cosine", gluon.loss.CosineEmbeddingLoss, (PRED, LABEL, SIGNS[:, 0])),
]


@pytest.mark.parametrize("name, make, values", SYMBOLIC, ids=[c[0] for c in SYMBOLIC])
def test_losses_run_symbolically(name, make, values):
    loss = make()
    names = [f"in{i}" for i in range(len(values))]
    syms = [None if v is None else mx.sym.var(n) for n, v in zip(names, values, strict=True)]
    out = loss(*syms)
    assert isinstance(out, mx.sym.Symbol)
    feed = {n: nd.array(v) for n, v in zip(names, values, strict=True) if v is not None}
    value = out.eval(**feed)[0].asnumpy()
    expected = loss(*[None if v is None else nd.array(v) for v in values]).asnumpy()
    np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)


def test_hybridized_loss_matches():
    loss = gluon.loss.SoftmaxCELoss()
    label = nd.array([0, 2, 1, 2])
    eager = loss(nd.array(PRED), label).asnumpy()
    loss.hybridize()
    np.testing.assert_allclose(loss(nd.array(PRED), label).asnumpy(), eager, rtol=1e-6)


def test_repr():
    assert repr(gluon.loss.L1Loss(weight=2.0)) == "L1Loss(batch_axis=0, w=2.0)"


# ---- CTC -------------------------------------------------------------------------------------

def _ctc_brute(acts, labels):
    """-log p(labels | acts) by summing over every alignment (blank = last class)."""
    steps, classes = acts.shape
    probs = np.exp(_log_softmax(acts.astype(np.float64)))
    blank = classes - 1
    total = 0.0
    for path in itertools.product(range(classes), repeat=steps):
        collapsed = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
        if [k for k in collapsed if k != blank] == list(labels):
            total += np.prod(probs[np.arange(steps), path])
    return -np.log(total)


def test_ctc_matches_alignment_enumeration():
    acts = RNG.normal(size=(5, 2, 4)).astype(np.float32)           # T, N, C
    labels = np.array([[0, 1, -1], [2, 2, -1]], dtype=np.float32)
    out = gluon.loss.CTCLoss(layout="TNC")(nd.array(acts), nd.array(labels)).asnumpy()
    ref = [_ctc_brute(acts[:, 0], [0, 1]), _ctc_brute(acts[:, 1], [2, 2])]
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_ctc_lengths_and_layouts():
    acts = RNG.normal(size=(2, 6, 4)).astype(np.float32)           # N, T, C
    labels = np.array([[1, 0, 2], [2, 1, 1]], dtype=np.float32)
    out = gluon.loss.CTCLoss()(nd.array(acts), nd.array(labels), nd.array([4, 6]),
                               nd.array([2, 3])).asnumpy()
    ref = [_ctc_brute(acts[0, :4], [1, 0]), _ctc_brute(acts[1], [2, 1, 1])]
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    tn = gluon.loss.CTCLoss(label_layout="TN")(nd.array(acts), nd.array(labels.T),
                                               nd.array([4, 6]), nd.array([2, 3]))
    np.testing.assert_allclose(tn.asnumpy(), ref, rtol=1e-5)


def test_ctc_gradient_matches_finite_differences():
    acts = RNG.normal(size=(1, 4, 3))
    labels = nd.array([[0, 1]])
    x = nd.array(acts, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        out = gluon.loss.CTCLoss()(x, labels)
    out.backward()
    eps = 1e-6
    numeric = np.zeros_like(acts)
    for idx in np.ndindex(acts.shape):
        bumped = acts.copy()
        bumped[idx] += eps
        up = _ctc_brute(bumped[0], [0, 1])
        bumped[idx] -= 2 * eps
        down = _ctc_brute(bumped[0], [0, 1])
        numeric[idx] = (up - down) / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-4, atol=1e-7)


def test_ctc_impossible_alignment_is_infinite():
    out = gluon.loss.CTCLoss()(nd.ones((1, 2, 3)), nd.array([[0, 0, 1]]))
    assert np.isinf(out.asnumpy()).all()


# ---- bad input ---------------------------------------------------------------------------------

def test_label_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(3,\).*\(4, 3\)"):
        gluon.loss.L2Loss()(nd.array(PRED), nd.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match=r"\(3,\).*\(4, 3\)"):
        gluon.loss.SoftmaxCELoss()(nd.array(PRED), nd.array([1.0, 2.0, 3.0]))


def test_bad_options():
    with pytest.raises(ValueError, match="label_format"):
        gluon.loss.LogisticLoss(label_format="onehot")
    with pytest.raises(ValueError, match="layout"):
        gluon.loss.CTCLoss(layout="CTN")
    with pytest.raises(ValueError, match=r"label values"):
        gluon.loss.CTCLoss()(nd.ones((1, 3, 3)), nd.array([[5]]))


def test_imperative_losses_run_when_hybridized():
    # CTCLoss as a Symbol and hybridized: tests/test_ctc_op.py
    sdml = gluon.loss.SDMLLoss()
    sdml.hybridize()
    assert sdml(nd.ones((2, 3)), nd.zeros((2, 3))).shape == (2,)


# ---- against MXNet 1.9.1's numbers (tests/fixtures/gen_mxnet_losses.py) --------------------

with open(os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_losses.json")) as _f:
    MXNET_CASES = json.load(_f)


@pytest.mark.parametrize("case", MXNET_CASES,
                         ids=[f"{c['loss']}-{c['kwargs']}" for c in MXNET_CASES])
def test_matches_mxnet_values_and_gradients(case):
    loss = getattr(gluon.loss, case["loss"])(**case["kwargs"])
    arrays = [None if a is None else nd.array(a) for a in case["inputs"]]
    arrays[0].attach_grad()
    with mx.autograd.record():
        value = loss(*arrays)
    value.backward()
    np.testing.assert_allclose(value.asnumpy(), case["value"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(arrays[0].grad.asnumpy(), case["grad"], rtol=1e-4, atol=1e-5)
