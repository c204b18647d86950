"""``contrib.PSROIPooling``, ``contrib.DeformableConvolution``,
``contrib.ModulatedDeformableConvolution``, ``contrib.Proposal`` and ``contrib.MultiProposal``.

MXNet 1.9.1's numbers (tests/fixtures/gen_detection_ops2.py) pin the conventions, gradients
included; NumPy references written here check the forward on other inputs; bad input raises a
clear error naming the op and the argument."""

import json
import math
import os
import subprocess
import sys

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, nd, sym

_FIX = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "detection_ops2.npz"))
CASES = json.loads(str(_FIX["cases"]))


def _op(dotted):
    obj = nd
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _tol(case):
    if case["dtype"] == "float64":
        return {"rtol": 1e-10, "atol": 1e-10}
    if "Proposal" in case["op"]:
        return {"rtol": 1e-5, "atol": 2e-4}  # box corners up to ~80 px
    return {"rtol": 1e-4, "atol": 2e-5}


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
    tol = _tol(case)
    for j, out in enumerate(outs):
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_allclose(out.asnumpy(), _FIX[f"{name}/out{j}"], **tol, err_msg=f"out{j}")
    if case["grad_of"]:
        outs[0].backward(nd.array(_FIX[f"{name}/head"], dtype=dtype))
        for i in case["grad_of"]:
            np.testing.assert_allclose(xs[i].grad.asnumpy(), _FIX[f"{name}/grad{i}"], **tol,
                                       err_msg=f"grad{i}")


def test_fixture_covers_every_op_and_dtype():
    seen = {(c["op"], c["dtype"]) for c in CASES}
    for op in ("contrib.PSROIPooling", "contrib.DeformableConvolution",
               "contrib.ModulatedDeformableConvolution"):
        assert {(op, "float32"), (op, "float64")} <= seen
    assert any(c["op"] == "contrib.MultiProposal" for c in CASES)
    assert any(c["kwargs"].get("iou_loss") for c in CASES)


# ---- PSROIPooling ----

def psroi_ref(x, rois, scale, od, ps, gs):
    """Average over integer bins of each bin's own channel group (float64)."""
    gs = gs or ps
    _, _, h, w = x.shape
    out = np.zeros((len(rois), od, ps, ps))
    for r, (b, *c) in enumerate(rois):
        x1, y1 = (math.floor(v + 0.5) * scale for v in c[:2])
        x2, y2 = ((math.floor(v + 0.5) + 1) * scale for v in c[2:])
        bh, bw = max(y2 - y1, 0.1) / ps, max(x2 - x1, 0.1) / ps
        for i in range(ps):
            h0 = min(max(math.floor(i * bh + y1), 0), h)
            h1 = min(max(math.ceil((i + 1) * bh + y1), 0), h)
            for j in range(ps):
                w0 = min(max(math.floor(j * bw + x1), 0), w)
                w1 = min(max(math.ceil((j + 1) * bw + x1), 0), w)
                if h1 <= h0 or w1 <= w0:
                    continue
                gi, gj = min(i * gs // ps, gs - 1), min(j * gs // ps, gs - 1)
                for o in range(od):
                    out[r, o, i, j] = x[int(b), (o * gs + gi) * gs + gj, h0:h1, w0:w1].mean()
    return out


@pytest.mark.parametrize("od,ps,gs,scale", [(2, 3, 3, 1.0), (1, 4, 2, 0.5), (3, 2, 1, 0.25),
                                            (2, 3, 0, 0.75)])
def test_psroi_pooling_numpy(od, ps, gs, scale):
    rng = np.random.RandomState(od * 10 + ps)
    g = gs or ps
    x = rng.uniform(-1, 1, (2, od * g * g, 6, 5))
    rois = np.array([[0, 1, 1, 4, 3], [1, 0.2, 1.3, 9.7, 8.1], [0, -4, -3, 30, 20],
                     [1, 6, 5, 2, 1], [0, 3.2, 2.9, 3.3, 3.1]])
    want = psroi_ref(x, rois, scale, od, ps, gs)
    y = nd.contrib.PSROIPooling(nd.array(x, dtype="float64"), nd.array(rois, dtype="float64"),
                                spatial_scale=scale, output_dim=od, pooled_size=ps, group_size=gs)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-12, atol=1e-12)


def test_psroi_pooling_rois_get_zero_gradient():
    x = nd.array(np.random.RandomState(1).uniform(size=(1, 8, 4, 4)))
    rois = nd.array([[0, 0, 0, 3, 3], [0, 1, 1, 2, 3]])
    x.attach_grad()
    rois.attach_grad()
    with autograd.record():
        y = nd.contrib.PSROIPooling(x, rois, spatial_scale=1.0, output_dim=2, pooled_size=2)
    y.backward()
    np.testing.assert_array_equal(rois.grad.asnumpy(), 0)
    # Each output's unit gradient spreads over its (non-empty) bin with total weight 1.
    np.testing.assert_allclose(x.grad.asnumpy().sum(), y.size, rtol=1e-6)


@pytest.mark.parametrize("data,rois,kwargs,match", [
    ((1, 8, 4, 4), (3, 4), {}, r"PSROIPooling: rois must be \(R, 5\).*\(3, 4\)"),
    ((1, 6, 4, 4), (3, 5), {}, r"PSROIPooling: data has 6 channels, but output_dim"),
    ((1, 8, 4, 4), (3, 5), dict(spatial_scale=2.0), r"PSROIPooling: parameter 'spatial_scale'"),
    ((1, 8, 4, 4), (3, 5), dict(group_size=-1), r"PSROIPooling: parameter 'group_size'"),
    ((8, 4, 4), (3, 5), {}, r"PSROIPooling: data must be 4-D.*\(8, 4, 4\)"),
])
def test_psroi_pooling_bad_input(data, rois, kwargs, match):
    kw = {**dict(spatial_scale=1.0, output_dim=2, pooled_size=2), **kwargs}
    with pytest.raises(mx.MXNetError, match=match):
        nd.contrib.PSROIPooling(nd.zeros(data), nd.zeros(rois), **kw).asnumpy()


def test_psroi_pooling_batch_index_out_of_range():
    # MXNet reads outside the data here; ferrograd refuses.
    for b in (2, -1):
        with pytest.raises(mx.MXNetError, match="PSROIPooling: roi 0 has batch_index"):
            nd.contrib.PSROIPooling(nd.zeros((2, 8, 4, 4)), nd.array([[b, 0, 0, 2, 2]]),
                                    spatial_scale=1.0, output_dim=2, pooled_size=2).asnumpy()


# ---- Deformable convolutions ----

def bilinear(p, y, x, v1):
    h, w = p.shape
    inside = (y >= 0 and x >= 0) if v1 else (y > -1 and x > -1)
    if not (inside and y < h and x < w):
        return 0.0
    y0, x0 = math.floor(y), math.floor(x)
    if v1 and y0 >= h - 1:
        y0, y = h - 1, float(h - 1)
    if v1 and x0 >= w - 1:
        x0, x = w - 1, float(w - 1)
    ly, lx = y - y0, x - x0
    v = 0.0
    for cy, wy in ((y0, 1 - ly), (y0 + 1, ly)):
        for cx, wx in ((x0, 1 - lx), (x0 + 1, lx)):
            if 0 <= cy < h and 0 <= cx < w:
                v += wy * wx * p[cy, cx]
    return v


def dcn_ref(x, off, w, b, kernel, stride, pad, dilate, ng, dg, mask=None):
    n, c, h, wd = x.shape
    f, (kh, kw) = w.shape[0], kernel
    ho = (h + 2 * pad[0] - dilate[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (wd + 2 * pad[1] - dilate[1] * (kw - 1) - 1) // stride[1] + 1
    taps = kh * kw
    y = np.zeros((n, f, ho, wo))
    for im in range(n):
        col = np.zeros((c * taps, ho * wo))
        for ch in range(c):
            g = ch // (c // dg)
            for t in range(taps):
                i, j = divmod(t, kw)
                oc = (g * taps + t) * 2
                for oy in range(ho):
                    for ox in range(wo):
                        yy = oy * stride[0] - pad[0] + i * dilate[0] + off[im, oc, oy, ox]
                        xx = ox * stride[1] - pad[1] + j * dilate[1] + off[im, oc + 1, oy, ox]
                        m = 1.0 if mask is None else mask[im, g * taps + t, oy, ox]
                        v = bilinear(x[im, ch], yy, xx, mask is None)
                        col[ch * taps + t, oy * wo + ox] = m * v
        fg, cg = f // ng, c // ng
        for g in range(ng):
            prod = w[g * fg:(g + 1) * fg].reshape(fg, -1) @ col[g * cg * taps:(g + 1) * cg * taps]
            y[im, g * fg:(g + 1) * fg] = prod.reshape(fg, ho, wo)
    return y if b is None else y + b[None, :, None, None]


@pytest.mark.parametrize("modulated", [False, True])
@pytest.mark.parametrize("kernel,stride,pad,dilate,ng,dg", [
    ((3, 3), (1, 1), (1, 1), (1, 1), 1, 1),
    ((2, 2), (2, 1), (1, 0), (1, 2), 2, 2),
])
def test_deformable_convolution_numpy(modulated, kernel, stride, pad, dilate, ng, dg):
    rng = np.random.RandomState(5)
    x = rng.uniform(-1, 1, (2, 4, 5, 4))
    ho = (5 + 2 * pad[0] - dilate[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    wo = (4 + 2 * pad[1] - dilate[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    taps = kernel[0] * kernel[1]
    off = rng.uniform(-3, 3, (2, 2 * dg * taps, ho, wo))
    mask = rng.uniform(0, 1, (2, dg * taps, ho, wo))
    w = rng.uniform(-1, 1, (6, 4 // ng) + kernel)
    b = rng.uniform(-1, 1, 6)
    kw = dict(kernel=kernel, stride=stride, pad=pad, dilate=dilate, num_filter=6, num_group=ng,
              num_deformable_group=dg)
    a = lambda v: nd.array(v, dtype="float64")  # noqa: E731
    if modulated:
        y = nd.contrib.ModulatedDeformableConvolution(a(x), a(off), a(mask), a(w), a(b), **kw)
    else:
        y = nd.contrib.DeformableConvolution(a(x), a(off), a(w), a(b), **kw)
    want = dcn_ref(x, off, w, b, kernel, stride, pad, dilate, ng, dg, mask if modulated else None)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-11, atol=1e-11)


def test_deformable_convolution_last_row_repeats():
    # MXNet's DCNv1 sampling: a point in the last row reads that row without fading to zero.
    x = nd.array(np.arange(12.0).reshape(1, 1, 3, 4))
    off = nd.zeros((1, 2, 3, 4))
    off[0, 0, 2, 1] = 0.5  # row 2.5 of a 3-row image
    y = nd.contrib.DeformableConvolution(x, off, nd.ones((1, 1, 1, 1)), kernel=(1, 1),
                                         num_filter=1, no_bias=True)
    assert y.asnumpy()[0, 0, 2, 1] == pytest.approx(9.0)
    m = nd.contrib.ModulatedDeformableConvolution(x, off, nd.ones((1, 1, 3, 4)),
                                                  nd.ones((1, 1, 1, 1)), kernel=(1, 1),
                                                  num_filter=1, no_bias=True)
    assert m.asnumpy()[0, 0, 2, 1] == pytest.approx(4.5)  # DCNv2 fades: half of row 2


def test_deformable_convolution_symbol_infers_weights():
    data, off = sym.Variable("data"), sym.Variable("offset")
    s = sym.contrib.DeformableConvolution(data, off, kernel=(3, 3), pad=(1, 1), num_filter=5,
                                          num_deformable_group=2, name="dcn")
    assert s.list_arguments() == ["data", "offset", "dcn_weight", "dcn_bias"]
    args, outs, _ = s.infer_shape(data=(2, 4, 6, 7))
    assert args == [(2, 4, 6, 7), (2, 36, 6, 7), (5, 4, 3, 3), (5,)]
    assert outs == [(2, 5, 6, 7)]
    ex = s.simple_bind(mx.cpu(), data=(2, 4, 6, 7), offset=(2, 36, 6, 7))
    rng = np.random.RandomState(3)
    vals = {k: rng.uniform(-1, 1, v.shape) for k, v in ex.arg_dict.items()}
    y = ex.forward(is_train=True, **{k: nd.array(v) for k, v in vals.items()})[0]
    want = dcn_ref(vals["data"], vals["offset"], vals["dcn_weight"], vals["dcn_bias"], (3, 3),
                   (1, 1), (1, 1), (1, 1), 1, 2)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-4, atol=1e-5)
    ex.backward(nd.ones(y.shape))
    assert np.abs(ex.grad_dict["offset"].asnumpy()).sum() > 0
    np.testing.assert_allclose(ex.grad_dict["dcn_bias"].asnumpy(), [2 * 6 * 7] * 5, rtol=1e-6)


_BIG_DCN = """
import numpy as np, ferrograd as mx, sys
from ferrograd import autograd, nd
rng = np.random.default_rng(11)
u = lambda *s: nd.array(rng.uniform(-1, 1, s).astype(np.float32))
xs = [u(4, 8, 16, 16), u(4, 36, 16, 16), u(4, 18, 16, 16), u(8, 4, 3, 3), u(8)]
for x in xs:
    x.attach_grad()
with autograd.record():
    y = nd.contrib.ModulatedDeformableConvolution(*xs, kernel=(3, 3), pad=(1, 1), num_filter=8,
                                                  num_group=2, num_deformable_group=2)
y.backward(u(*y.shape))
sys.stdout.buffer.write(y.asnumpy().tobytes() + b"".join(x.grad.asnumpy().tobytes() for x in xs))
"""


def test_deformable_convolution_bitwise_identical_for_any_thread_count():
    # Large enough to split the images over the pool.
    outs = []
    for threads in ("1", "2"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        outs.append(subprocess.run([sys.executable, "-c", _BIG_DCN], env=env, capture_output=True,
                                   check=True).stdout)
    assert len(outs[0]) == 4 * (2 * 4 * 8 * 256 + 4 * 54 * 256 + 8 * 4 * 9 + 8)
    assert outs[0] == outs[1]


def test_modulated_deformable_convolution_gradients_exist():
    # MXNet's CPU backward raises "only implemented in GPU"; ferrograd differentiates it.
    rng = np.random.RandomState(9)
    xs = [nd.array(rng.uniform(0.1, 1, s), dtype="float64")
          for s in [(1, 2, 4, 4), (1, 8, 3, 3), (1, 4, 3, 3), (3, 2, 2, 2)]]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = nd.contrib.ModulatedDeformableConvolution(*xs, kernel=(2, 2), num_filter=3,
                                                      no_bias=True)
    y.backward()
    # The output is linear in the mask: sum(y) = sum(mask * d sum(y)/d mask).
    np.testing.assert_allclose((xs[2].grad.asnumpy() * xs[2].asnumpy()).sum(), y.asnumpy().sum(),
                               rtol=1e-10)


_Z = nd.zeros


@pytest.mark.parametrize("shapes,kwargs,match", [
    ([(1, 2, 5, 5), (1, 9, 3, 3), (2, 2, 3, 3)], {},
     r"DeformableConvolution: offset has shape \(1, 9, 3, 3\), expected \(1, 18, 3, 3\)"),
    ([(1, 2, 5, 5), (1, 18, 3, 3), (2, 1, 3, 3)], {},
     r"DeformableConvolution: weight has shape \(2, 1, 3, 3\), expected \(2, 2, 3, 3\)"),
    ([(1, 3, 5, 5), (1, 18, 3, 3), (2, 1, 3, 3)], dict(num_group=2),
     r"DeformableConvolution: data of shape \(1, 3, 5, 5\).*num_group 2"),
    ([(1, 3, 5, 5), (1, 36, 3, 3), (2, 3, 3, 3)], dict(num_deformable_group=2),
     r"DeformableConvolution: .*num_deformable_group 2"),
    ([(1, 2, 2, 2), (1, 18, 1, 1), (2, 2, 3, 3)], {},
     r"DeformableConvolution: kernel \(3, 3\).*does not fit data of shape \(1, 2, 2, 2\)"),
])
def test_deformable_convolution_bad_input(shapes, kwargs, match):
    kw = dict(kernel=(3, 3), num_filter=2, no_bias=True, **kwargs)
    with pytest.raises(mx.MXNetError, match=match):
        nd.contrib.DeformableConvolution(*[_Z(s) for s in shapes], **kw).asnumpy()


def test_modulated_deformable_convolution_bad_mask():
    with pytest.raises(mx.MXNetError, match=r"ModulatedDeformableConvolution: mask has shape"):
        nd.contrib.ModulatedDeformableConvolution(
            _Z((1, 2, 5, 5)), _Z((1, 18, 3, 3)), _Z((1, 18, 3, 3)), _Z((2, 2, 3, 3)),
            kernel=(3, 3), num_filter=2, no_bias=True).asnumpy()


# ---- Proposal, MultiProposal ----

def test_proposal_hand_computed():
    # One anchor per cell ([0, 0, 3, 3] for stride 4) on a 2x2 map, no minimum size.
    cls = nd.array(np.concatenate([np.zeros(4), [0.2, 0.9, 0.5, 0.7]]).reshape(1, 2, 2, 2))
    deltas = np.zeros((1, 4, 2, 2))
    deltas[0, 2:, 0, 1] = np.log(2)  # cell (0, 1) doubles: [2, 0, 9, 5], clipped to x <= 7
    rois, scores = nd.contrib.Proposal(
        cls, nd.array(deltas), nd.array([[8, 8, 1]]), scales=(1,), ratios=(1,),
        feature_stride=4, rpn_min_size=0, rpn_post_nms_top_n=5, threshold=0.5,
        output_score=True)
    np.testing.assert_allclose(rois.asnumpy(), [[0, 2, 0, 7, 5], [0, 4, 4, 7, 7], [0, 0, 4, 3, 7],
                                                [0, 0, 0, 3, 3], [0, 2, 0, 7, 5]], atol=1e-6)
    np.testing.assert_allclose(scores.asnumpy().ravel(), [0.9, 0.7, 0.5, 0.2, 0.9], rtol=1e-6)


def test_proposal_gradient_is_zero():
    xs = [nd.array(np.random.RandomState(0).uniform(size=s)) for s in
          [(1, 12, 3, 3), (1, 24, 3, 3)]] + [nd.array([[48, 48, 1]])]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        y = nd.contrib.Proposal(*xs, scales=(2, 4), ratios=(0.5, 1, 2), rpn_post_nms_top_n=4)
    y.backward()
    for x in xs:
        np.testing.assert_array_equal(x.grad.asnumpy(), 0)


def test_proposal_symbol_shapes():
    s = sym.contrib.MultiProposal(sym.Variable("cls"), sym.Variable("bbox"), sym.Variable("info"),
                                  rpn_post_nms_top_n=7, output_score=True)
    _, outs, _ = s.infer_shape(cls=(3, 24, 4, 4), bbox=(3, 48, 4, 4), info=(3, 3))
    assert outs == [(21, 5), (21, 1)]


@pytest.mark.parametrize("op,shapes,match", [
    ("Proposal", [(2, 24, 2, 2), (2, 48, 2, 2), (2, 3)], "Proposal: takes one image"),
    ("Proposal", [(1, 4, 2, 2), (1, 8, 2, 2), (1, 3)],
     r"Proposal: cls_prob of shape \(1, 4, 2, 2\) has 2 anchors"),
    ("MultiProposal", [(1, 24, 2, 2), (1, 24, 2, 2), (1, 3)], "MultiProposal: bbox_pred has shape"),
    ("MultiProposal", [(2, 24, 2, 2), (2, 48, 2, 2), (1, 3)], "MultiProposal: im_info has shape"),
])
def test_proposal_bad_input(op, shapes, match):
    with pytest.raises(mx.MXNetError, match=match):
        getattr(nd.contrib, op)(*[_Z(s) for s in shapes]).asnumpy()


def test_proposal_im_info_beyond_the_map():
    with pytest.raises(mx.MXNetError, match="Proposal: im_info"):
        nd.contrib.Proposal(_Z((1, 24, 2, 2)), _Z((1, 48, 2, 2)),
                            nd.array([[64, 64, 1]])).asnumpy()
