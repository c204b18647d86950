"""Detection operators (``contrib.box_encode``, ``contrib.box_decode``) and ``UpSampling`` with
several inputs.

MXNet 1.9.1's numbers (tests/fixtures/gen_detection_ops.py) pin the conventions; NumPy
references written here check the forward; finite differences check UpSampling's gradient;
bad input raises a clear error naming the op."""

import json
import os

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, nd, sym
from ferrograd.test_utils import check_numeric_gradient

_FIX = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "detection_ops.npz"))
CASES = json.loads(str(_FIX["cases"]))


def _op(dotted):
    obj = nd
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matches_mxnet(case):
    name, dtype = case["name"], case["dtype"]
    xs = [nd.array(_FIX[f"{name}/in{i}"], dtype=dtype) for i in range(case["n_inputs"])]
    for i in case["grad_of"]:
        xs[i].attach_grad()
    with autograd.record():
        outs = _op(case["op"])(*xs, **case["kwargs"])
    outs = outs if isinstance(outs, list) else [outs]
    assert len(outs) == case["n_outputs"]
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12}
    for j, out in enumerate(outs):
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_allclose(out.asnumpy(), _FIX[f"{name}/out{j}"], **tol, err_msg=f"out{j}")
    if case["grad_of"]:
        outs[0].backward(nd.array(_FIX[f"{name}/head"], dtype=dtype))
        for i in case["grad_of"]:
            np.testing.assert_allclose(xs[i].grad.asnumpy(), _FIX[f"{name}/grad{i}"], **tol,
                                       err_msg=f"grad{i}")


# ---- UpSampling with several inputs ----

def upsample_ref(xs, scale, mode):
    oh, ow = xs[0].shape[2] * scale, xs[0].shape[3] * scale
    ups = [x.repeat(oh // x.shape[2], axis=2).repeat(ow // x.shape[3], axis=3) for x in xs]
    return np.concatenate(ups, axis=1) if mode == "concat" else sum(ups)


@pytest.mark.parametrize("mode", ["concat", "sum"])
@pytest.mark.parametrize("shapes,scale", [
    ([(2, 3, 2, 3), (2, 3, 4, 6)], 2),
    ([(1, 2, 1, 1), (1, 2, 3, 3), (1, 2, 1, 3)], 3),
    ([(1, 1, 2, 2), (1, 1, 1, 4)], 2),  # different factors for height and width
])
def test_upsampling_several_inputs_numpy(shapes, scale, mode):
    rng = np.random.RandomState(3)
    xs = [rng.uniform(-1, 1, s) for s in shapes]
    out = nd.UpSampling(*[nd.array(x, dtype="float64") for x in xs], scale=scale,
                        sample_type="nearest", num_args=len(xs), multi_input_mode=mode)
    np.testing.assert_array_equal(out.asnumpy(), upsample_ref(xs, scale, mode))


def test_upsampling_several_inputs_symbol():
    s = sym.UpSampling(sym.var("a"), sym.var("b"), scale=2, sample_type="nearest", num_args=2)
    assert s.list_arguments() == ["a", "b"]
    _, out_shapes, _ = s.infer_shape(a=(1, 2, 2, 2), b=(1, 3, 4, 4))
    assert out_shapes == [(1, 5, 4, 4)]
    s = sym.UpSampling(sym.var("a"), sym.var("b"), scale=2, sample_type="nearest", num_args=2,
                       multi_input_mode="sum")
    check_numeric_gradient(s, {"a": np.random.RandomState(4).uniform(-1, 1, (1, 2, 2, 2)),
                               "b": np.random.RandomState(5).uniform(-1, 1, (1, 2, 1, 4))},
                           numeric_eps=1e-4, rtol=1e-3, atol=1e-4, dtype=np.float64)


def test_upsampling_second_order_gradient():
    a = nd.array(np.random.RandomState(6).uniform(-1, 1, (1, 1, 2, 2)), dtype="float64")
    b = nd.array(np.random.RandomState(7).uniform(-1, 1, (1, 1, 1, 1)), dtype="float64")
    for x in (a, b):
        x.attach_grad()
    with autograd.record():
        y = nd.UpSampling(a, b, scale=2, sample_type="nearest", num_args=2)
        (ga,) = autograd.grad((y * y).sum(), [a], create_graph=True)
        z = ga.sum()
    z.backward()
    # d/da sum(y^2) = 2 * 4 * a (each value repeated 4 times); its sum's gradient is 8.
    np.testing.assert_allclose(ga.asnumpy(), 8 * a.asnumpy())
    np.testing.assert_allclose(a.grad.asnumpy(), np.full((1, 1, 2, 2), 8.0))


@pytest.mark.parametrize("shapes,mode,match", [
    ([(1, 2, 2, 2), (1, 1, 3, 3)], "concat", r"UpSampling.*height 3.*\(1, 1, 3, 3\)"),
    ([(1, 2, 2, 2), (1, 1, 4, 4)], "sum", "UpSampling.*same number of channels"),
    ([(1, 2, 2, 2), (2, 2, 4, 4)], "concat", "UpSampling.*batch size"),
    ([(1, 2, 2, 2), (1, 2, 2)], "concat", "UpSampling.*4-D"),
])
def test_upsampling_several_inputs_bad_input(shapes, mode, match):
    xs = [nd.zeros(s) for s in shapes]
    with pytest.raises(mx.MXNetError, match=match):
        nd.UpSampling(*xs, scale=2, sample_type="nearest", num_args=len(xs),
                      multi_input_mode=mode).wait_to_read()


def test_upsampling_num_args_must_match_the_inputs():
    with pytest.raises(mx.MXNetError, match="UpSampling: num_args=2 but 1 input"):
        nd.UpSampling(nd.zeros((1, 1, 2, 2)), scale=2, sample_type="nearest", num_args=2)


# ---- box_encode / box_decode ----

def _center(c):
    w, h = c[..., 2] - c[..., 0], c[..., 3] - c[..., 1]
    return np.stack([c[..., 0] + w / 2, c[..., 1] + h / 2, w, h], axis=-1)


def _corners(rng, shape):
    lo = rng.uniform(0, 1, shape + (2,))
    return np.concatenate([lo, lo + rng.uniform(0.1, 1, shape + (2,))], axis=-1)


def test_box_encode_numpy():
    rng = np.random.RandomState(8)
    samples = np.array([[1.0, 0.0, -1.0], [0.7, 1.0, 0.2]])
    matches = np.array([[1.0, -1.0, 5.0], [0.0, 1.0, 0.0]])
    anchors, refs = _corners(rng, (2, 3)), _corners(rng, (2, 2))
    means, stds = np.array([0.0, 0.1, 0.2, 0.3]), np.array([0.1, 0.1, 0.2, 0.2])
    t, m = nd.contrib.box_encode(*[nd.array(v, dtype="float64")
                                   for v in (samples, matches, anchors, refs, means, stds)])
    matched = np.take_along_axis(refs, np.clip(matches, 0, 1).astype(int)[..., None], axis=1)
    a, r = _center(anchors), _center(matched)
    want = np.concatenate([(r[..., :2] - a[..., :2]) / a[..., 2:], np.log(r[..., 2:] / a[..., 2:])],
                          axis=-1)
    pos = (samples > 0.5)[..., None]
    np.testing.assert_allclose(t.asnumpy(), np.where(pos, (want - means) / stds, 0.0), rtol=1e-12)
    np.testing.assert_array_equal(m.asnumpy(), np.broadcast_to(pos, (2, 3, 4)).astype(float))


@pytest.mark.parametrize("fmt", ["center", "corner"])
def test_box_decode_numpy(fmt):
    rng = np.random.RandomState(9)
    x = rng.uniform(-1, 1, (3, 5, 4))
    anchors = _corners(rng, (1, 5))
    out = nd.contrib.box_decode(nd.array(x, dtype="float64"), nd.array(anchors, dtype="float64"),
                                std0=0.5, std2=2.0, clip=0.5, format=fmt)
    a = _center(anchors) if fmt == "corner" else anchors
    xy = x[..., :2] * np.array([0.5, 1.0]) * a[..., 2:] + a[..., :2]
    half = np.exp(np.minimum(x[..., 2:] * np.array([2.0, 1.0]), 0.5)) * a[..., 2:] / 2
    np.testing.assert_allclose(out.asnumpy(), np.concatenate([xy - half, xy + half], axis=-1),
                               rtol=1e-12)


def test_box_codec_round_trip():
    # Decoding the encoded targets of positive anchors gives back their matched boxes.
    rng = np.random.RandomState(10)
    anchors, refs = _corners(rng, (1, 4)), _corners(rng, (1, 2))
    matches = np.array([[1.0, 0.0, 0.0, 1.0]])
    f64 = [nd.array(v, dtype="float64") for v in (np.ones((1, 4)), matches, anchors, refs,
                                                  np.zeros(4), np.ones(4))]
    t, _ = nd.contrib.box_encode(*f64)
    back = nd.contrib.box_decode(t, f64[2], format="corner")
    np.testing.assert_allclose(back.asnumpy(), refs[0][matches[0].astype(int)][None], rtol=1e-12)


def test_box_codec_gradients_are_zero():
    x, anchors = nd.ones((1, 2, 4)), nd.array([[[0, 0, 1, 1], [0, 0, 2, 2]]])
    x.attach_grad()
    with autograd.record():
        y = nd.contrib.box_decode(x, anchors)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros((1, 2, 4)))


@pytest.mark.parametrize("shapes,match", [
    ([(2, 4), (2, 3), (2, 3, 4), (2, 2, 4), (4,), (4,)], r"box_encode.*\(2, 4\)"),
    ([(2, 3), (2, 3), (2, 3, 4), (1, 2, 4), (4,), (4,)], r"box_encode.*refs \(B, M, 4\)"),
    ([(2, 3), (2, 3), (2, 3, 4), (2, 2, 4), (3,), (4,)], r"box_encode.*means \(4,\)"),
])
def test_box_encode_bad_shapes(shapes, match):
    with pytest.raises(mx.MXNetError, match=match):
        nd.contrib.box_encode(*[nd.zeros(s) for s in shapes])


def test_box_encode_match_out_of_range():
    args = [nd.array([[1.0]]), nd.array([[2.0]]), nd.ones((1, 1, 4)), nd.ones((1, 2, 4)),
            nd.zeros(4), nd.ones(4)]
    with pytest.raises(mx.MXNetError, match=r"box_encode: matches\[0, 0\] = 2"):
        nd.contrib.box_encode(*args)


@pytest.mark.parametrize("data,anchors", [
    ((2, 3, 4), (3, 4)), ((2, 3, 5), (1, 3, 4)), ((3, 4), (1, 3, 4)), ((2, 3, 4), (1, 2, 4)),
])
def test_box_decode_bad_shapes(data, anchors):
    with pytest.raises(mx.MXNetError, match=r"box_decode: expected data \(B, N, 4\)"):
        nd.contrib.box_decode(nd.zeros(data), nd.zeros(anchors))


# ---- MultiBoxPrior ----

def prior_ref(h, w, sizes, ratios, steps=(-1, -1), offsets=(0.5, 0.5), clip=False):
    sy = steps[0] if steps[0] > 0 else 1 / h
    sx = steps[1] if steps[1] > 0 else 1 / w
    shapes = [(s, ratios[0]) for s in sizes] + [(sizes[0], r) for r in ratios[1:]]
    cy, cx = np.meshgrid((np.arange(h) + offsets[0]) * sy, (np.arange(w) + offsets[1]) * sx,
                         indexing="ij")
    boxes = []
    for s, r in shapes:
        bw, bh = s * h / w * np.sqrt(r), s / np.sqrt(r)
        boxes.append(np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], axis=-1))
    out = np.stack(boxes, axis=2).reshape(1, -1, 4)
    return np.clip(out, 0, 1) if clip else out


@pytest.mark.parametrize("kwargs", [
    {}, dict(sizes=(0.2, 0.7), ratios=(1, 2, 0.5)),
    dict(sizes=(0.5,), ratios=(2, 3), clip=True, steps=(0.1, -1), offsets=(0.0, 1.0)),
])
def test_multibox_prior_numpy(kwargs):
    out = nd.contrib.MultiBoxPrior(nd.zeros((2, 5, 3, 5), dtype="float64"), **kwargs)
    np.testing.assert_allclose(out.asnumpy(), prior_ref(3, 5, kwargs.get("sizes", (1,)),
                                                        kwargs.get("ratios", (1,)),
                                                        kwargs.get("steps", (-1, -1)),
                                                        kwargs.get("offsets", (0.5, 0.5)),
                                                        kwargs.get("clip", False)), rtol=1e-12)


def test_multibox_prior_symbol_shape():
    s = sym.contrib.MultiBoxPrior(sym.var("data"), sizes=(0.5, 0.25), ratios=(1, 2, 0.5))
    _, out_shapes, _ = s.infer_shape(data=(4, 8, 6, 7))
    assert out_shapes == [(1, 6 * 7 * 4, 4)]


@pytest.mark.parametrize("kwargs,match", [
    (dict(sizes=(-0.5,)), "MultiBoxPrior.*sizes"),
    (dict(ratios=(0,)), "MultiBoxPrior.*ratios"),
    (dict(steps=(0.1,)), "MultiBoxPrior.*steps"),
    (dict(offsets=(0.5, 0.5, 0.5)), "MultiBoxPrior.*offsets"),
])
def test_multibox_prior_bad_parameters(kwargs, match):
    with pytest.raises(mx.MXNetError, match=match):
        nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 2, 2)), **kwargs)


def test_multibox_prior_needs_a_4d_input():
    with pytest.raises(mx.MXNetError, match=r"MultiBoxPrior.*\(2, 3\)"):
        nd.contrib.MultiBoxPrior(nd.zeros((2, 3)))


# ---- MultiBoxDetection ----

def test_multibox_detection_on_ssd_outputs():
    # Anchors from MultiBoxPrior, zero offsets: the detections are the anchors themselves.
    anchors = nd.contrib.MultiBoxPrior(nd.zeros((1, 1, 2, 2)), sizes=(0.4,))
    probs = np.array([[[0.9, 0.1, 0.3, 0.05], [0.1, 0.9, 0.7, 0.95]]])
    out = nd.contrib.MultiBoxDetection(nd.array(probs), nd.zeros((1, 16)), anchors).asnumpy()
    order = [3, 1, 2, 0]  # by descending class-1 score; the boxes do not overlap
    np.testing.assert_allclose(out[0, :, 1], probs[0, 1, order], rtol=1e-6)
    np.testing.assert_allclose(out[0, :, 2:], np.clip(anchors.asnumpy()[0, order], 0, 1), rtol=1e-6)
    np.testing.assert_array_equal(out[0, :, 0], [0, 0, 0, 0])


@pytest.mark.parametrize("shapes", [
    [(1, 2, 2), (1, 8), (1, 3, 4)], [(1, 2, 2), (1, 6), (1, 2, 4)], [(2, 2, 2), (1, 8), (1, 2, 4)],
])
def test_multibox_detection_bad_shapes(shapes):
    with pytest.raises(mx.MXNetError, match="MultiBoxDetection: expected cls_prob"):
        nd.contrib.MultiBoxDetection(*[nd.zeros(s) for s in shapes])


def test_multibox_detection_gradient_is_zero():
    xs = [nd.ones((1, 2, 2)), nd.zeros((1, 8)), nd.array([[[0, 0, 0.5, 0.5], [0.5, 0.5, 1, 1]]])]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = nd.contrib.MultiBoxDetection(*xs)
    y.backward()
    for x in xs:
        np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros(x.shape))


# ---- MultiBoxTarget ----

def test_multibox_target_matches_every_box_to_an_anchor():
    anchors = nd.array([[[0.0, 0.0, 0.5, 0.5], [0.5, 0.5, 1.0, 1.0], [0.0, 0.5, 0.5, 1.0]]])
    label = nd.array([[[3, 0.05, 0.05, 0.45, 0.5], [0, 0.6, 0.55, 0.9, 1.0]]])
    loc, mask, cls = nd.contrib.MultiBoxTarget(anchors, label, nd.zeros((1, 5, 3)))
    np.testing.assert_array_equal(cls.asnumpy(), [[4, 1, 0]])
    np.testing.assert_array_equal(mask.asnumpy(), [[1] * 8 + [0] * 4])
    # Box 0 against anchor 0: centre (0.25, 0.275) vs (0.25, 0.25), size (0.4, 0.45) vs 0.5.
    want = [0.0, 0.025 / 0.5 / 0.1, np.log(0.8) / 0.2, np.log(0.9) / 0.2]
    np.testing.assert_allclose(loc.asnumpy()[0, :4], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shapes", [
    [(2, 3, 4), (1, 2, 5), (1, 2, 3)], [(1, 3, 4), (1, 2, 4), (1, 2, 3)],
    [(1, 3, 4), (1, 2, 5), (2, 2, 3)],
])
def test_multibox_target_bad_shapes(shapes):
    with pytest.raises(mx.MXNetError, match="MultiBoxTarget: expected anchor"):
        nd.contrib.MultiBoxTarget(*[nd.zeros(s) for s in shapes])
