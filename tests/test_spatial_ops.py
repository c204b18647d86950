"""Spatial sampling, ROI and correlation operators: ``contrib.BilinearResize2D``,
``contrib.AdaptiveAvgPooling2D``, ``GridGenerator``, ``BilinearSampler``, ``SpatialTransformer``,
``ROIPooling``, ``contrib.ROIAlign``, ``Correlation``.

MXNet 1.9.1's numbers (tests/fixtures/gen_mxnet_spatial_ops.py) pin its conventions (sampling
grid, ROI rounding, bin edges); NumPy references written here check the forward; finite
differences check the gradients through Symbols; bad input raises a clear error."""

import json
import os

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, nd, sym
from ferrograd.test_utils import check_numeric_gradient

with open(os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_spatial_ops.json")) as _f:
    CASES = json.load(_f)
IDS = [f"{c['op']}-{json.dumps(c['kwargs'], sort_keys=True)}" for c in CASES]


def _op(namespace, dotted):
    obj = namespace
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_matches_mxnet(case):
    dtype = case["dtype"]
    arrays = [nd.array(np.array(a), dtype=dtype) for a in case["inputs"]]
    for i in case["grads"]:
        arrays[int(i)].attach_grad()
    with autograd.record():
        out = _op(nd, case["op"])(*arrays, **case["kwargs"])
    out.backward(nd.array(np.array(case["head"]), dtype=dtype))
    # MXNet computes some weights (BilinearResize2D's source positions) in float32.
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float64" else {"rtol": 1e-4, "atol": 1e-4}
    np.testing.assert_allclose(out.asnumpy(), np.array(case["output"]), **tol)
    for i, g in case["grads"].items():
        np.testing.assert_allclose(
            arrays[int(i)].grad.asnumpy(), np.array(g), **tol, err_msg=f"input {i}"
        )


# ---- NumPy references ----


def resize_ref(x, oh, ow, align_corners=True):
    def taps(n_in, n_out):
        o = np.arange(n_out, dtype=np.float64)
        if n_out == 1:
            pos = np.zeros(1)
        elif align_corners:
            pos = o * (n_in - 1) / (n_out - 1)
        else:
            pos = np.maximum((o + 0.5) * n_in / n_out - 0.5, 0)
        lo = np.floor(pos).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, pos - lo

    (h0, h1, fh), (w0, w1, fw) = taps(x.shape[2], oh), taps(x.shape[3], ow)
    rows = x[:, :, h0] * (1 - fh)[:, None] + x[:, :, h1] * fh[:, None]
    return rows[..., w0] * (1 - fw) + rows[..., w1] * fw


def adaptive_ref(x, oh, ow):
    h, w = x.shape[2:]
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            hs, he = i * h // oh, -(-(i + 1) * h // oh)
            ws, we = j * w // ow, -(-(j + 1) * w // ow)
            out[:, :, i, j] = x[:, :, hs:he, ws:we].mean(axis=(2, 3))
    return out


def sampler_ref(x, grid):
    n, c, h, w = x.shape
    px = (grid[:, 0] + 1) * (w - 1) / 2
    py = (grid[:, 1] + 1) * (h - 1) / 2
    out = np.zeros((n, c) + grid.shape[2:])
    x0, y0 = np.floor(px).astype(int), np.floor(py).astype(int)
    for dy in (0, 1):
        for dx in (0, 1):
            xx, yy = x0 + dx, y0 + dy
            wt = (1 - abs(px - xx)) * (1 - abs(py - yy))
            ok = (xx >= 0) & (xx < w) & (yy >= 0) & (yy < h)
            for b in range(n):
                vals = x[b][:, np.clip(yy[b], 0, h - 1), np.clip(xx[b], 0, w - 1)]
                out[b] += np.where(ok[b], wt[b], 0) * vals
    return out


def affine_grid_ref(theta, h, w):
    ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    pts = np.stack([xs.ravel(), ys.ravel(), np.ones(h * w)])
    return (theta.reshape(-1, 2, 3) @ pts).reshape(-1, 2, h, w)


RNG = np.random.default_rng(20)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "kwargs,size",
    [
        ({"height": 6, "width": 9}, None),
        ({"height": 2, "width": 3, "align_corners": False}, None),
        ({"scale_height": 2.0, "scale_width": 0.5}, (8, 3)),
        ({"mode": "to_even_up"}, (4, 6)),
        ({"mode": "to_odd_down", "align_corners": False}, (3, 5)),
    ],
)
def test_bilinear_resize_numpy(kwargs, size, dtype):
    x = RNG.uniform(-1, 1, (2, 3, 4, 6))
    y = nd.contrib.BilinearResize2D(nd.array(x, dtype=dtype), **kwargs)
    oh, ow = size or (kwargs["height"], kwargs["width"])
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(
        y.asnumpy(), resize_ref(x, oh, ow, kwargs.get("align_corners", True)), rtol=1e-5, atol=1e-6
    )


def test_bilinear_resize_like_takes_only_the_size():
    x = RNG.uniform(-1, 1, (2, 3, 4, 6))
    like = nd.zeros((1, 1, 7, 2))
    y = nd.contrib.BilinearResize2D(nd.array(x), like, mode="like")
    np.testing.assert_allclose(y.asnumpy(), resize_ref(x, 7, 2), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "output_size,hw", [(3, (3, 3)), ((2, 5), (2, 5)), ((9, 8), (9, 8)), (None, (1, 1))]
)
def test_adaptive_avg_pooling_numpy(output_size, hw):
    x = RNG.uniform(-1, 1, (2, 3, 5, 7))
    kwargs = {} if output_size is None else {"output_size": output_size}
    y = nd.contrib.AdaptiveAvgPooling2D(nd.array(x, dtype="float64"), **kwargs)
    np.testing.assert_allclose(y.asnumpy(), adaptive_ref(x, *hw), rtol=1e-12)


def test_grid_generator_and_sampler_numpy():
    theta = np.array([[0.8, 0.1, 0.05, -0.2, 1.1, 0.1], [1.2, 0.0, -0.3, 0.1, 0.9, 0.0]])
    grid = nd.GridGenerator(
        nd.array(theta, dtype="float64"), transform_type="affine", target_shape=(3, 5)
    )
    np.testing.assert_allclose(grid.asnumpy(), affine_grid_ref(theta, 3, 5), rtol=1e-12, atol=1e-15)
    x = RNG.uniform(-1, 1, (2, 3, 4, 6))
    out = nd.BilinearSampler(nd.array(x, dtype="float64"), grid)
    np.testing.assert_allclose(
        out.asnumpy(), sampler_ref(x, affine_grid_ref(theta, 3, 5)), rtol=1e-12, atol=1e-12
    )
    st = nd.SpatialTransformer(
        nd.array(x, dtype="float64"),
        nd.array(theta, dtype="float64"),
        target_shape=(3, 5),
        transform_type="affine",
        sampler_type="bilinear",
    )
    np.testing.assert_allclose(st.asnumpy(), out.asnumpy(), rtol=1e-12, atol=1e-14)
    flow = RNG.uniform(-1, 1, (1, 2, 3, 4))
    warp = nd.GridGenerator(nd.array(flow), transform_type="warp").asnumpy()
    ys, xs = np.mgrid[0:3, 0:4]
    np.testing.assert_allclose(warp[0, 0], (flow[0, 0] + xs) / 1.5 - 1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(warp[0, 1], (flow[0, 1] + ys) / 1.0 - 1, rtol=1e-6, atol=1e-6)


def test_identity_transform_reproduces_the_input():
    x = RNG.uniform(-1, 1, (2, 3, 4, 5))
    loc = nd.array([[1, 0, 0, 0, 1, 0]] * 2, dtype="float64")
    y = nd.SpatialTransformer(
        nd.array(x, dtype="float64"),
        loc,
        target_shape=(4, 5),
        transform_type="affine",
        sampler_type="bilinear",
    )
    np.testing.assert_allclose(y.asnumpy(), x, rtol=1e-12, atol=1e-12)


def test_correlation_numpy():
    a, b = RNG.uniform(-1, 1, (1, 2, 5, 6)), RNG.uniform(-1, 1, (1, 2, 5, 6))
    y = nd.Correlation(
        nd.array(a, dtype="float64"),
        nd.array(b, dtype="float64"),
        kernel_size=1,
        max_displacement=1,
        pad_size=1,
    ).asnumpy()
    assert y.shape == (1, 9, 5, 6)
    pb = np.pad(b, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for t in range(9):
        dy, dx = t // 3 - 1, t % 3 - 1
        shifted = pb[:, :, 1 + dy : 6 + dy, 1 + dx : 7 + dx]
        np.testing.assert_allclose(y[:, t], (a * shifted).mean(axis=1), rtol=1e-12, atol=1e-14)


# ---- gradients through Symbols, by finite differences ----


def _loc(*shapes, lo=-1.0, hi=1.0):
    return [RNG.uniform(lo, hi, s) for s in shapes]


@pytest.mark.parametrize(
    "make,shapes,grad_nodes",
    [
        (lambda d: sym.contrib.BilinearResize2D(d[0], height=5, width=3), [(1, 2, 3, 4)], None),
        (
            lambda d: sym.contrib.BilinearResize2D(d[0], height=2, width=7, align_corners=False),
            [(2, 1, 3, 4)],
            None,
        ),
        (
            lambda d: sym.contrib.AdaptiveAvgPooling2D(d[0], output_size=(2, 3)),
            [(1, 2, 5, 7)],
            None,
        ),
        (
            lambda d: sym.GridGenerator(d[0], transform_type="affine", target_shape=(3, 4)),
            [(2, 6)],
            None,
        ),
        (lambda d: sym.GridGenerator(d[0], transform_type="warp"), [(1, 2, 3, 4)], None),
        (
            lambda d: sym.Correlation(d[0], d[1], kernel_size=3, max_displacement=1, pad_size=1),
            [(1, 2, 4, 5)] * 2,
            None,
        ),
    ],
)
def test_numeric_gradient(make, shapes, grad_nodes):
    names = [f"x{i}" for i in range(len(shapes))]
    s = make([sym.var(n) for n in names])
    loc = dict(zip(names, _loc(*shapes), strict=True))
    check_numeric_gradient(
        s, loc, grad_nodes=grad_nodes, dtype=np.float64, numeric_eps=1e-5, rtol=1e-5, atol=1e-7
    )


def test_numeric_gradient_sampler_and_transformer():
    data = sym.var("data")
    loc = {"data": _loc((1, 2, 3, 4))[0], "grid": RNG.uniform(-1.1, 1.1, (1, 2, 2, 3))}
    check_numeric_gradient(
        sym.BilinearSampler(data, sym.var("grid")),
        loc,
        dtype=np.float64,
        numeric_eps=1e-6,
        rtol=1e-4,
        atol=1e-6,
    )
    st = sym.SpatialTransformer(
        data, sym.var("loc"), target_shape=(2, 3), transform_type="affine", sampler_type="bilinear"
    )
    loc = {"data": loc["data"], "loc": np.array([[0.9, 0.1, 0.05, -0.1, 1.05, 0.02]])}
    check_numeric_gradient(st, loc, dtype=np.float64, numeric_eps=1e-6, rtol=1e-4, atol=1e-6)


def test_numeric_gradient_roi_ops_data_only():
    rois = np.array([[0, 0.5, 0.7, 3.2, 2.9], [1, 1.3, 0.2, 4.6, 3.8]])
    data = RNG.uniform(-1, 1, (2, 2, 4, 5))
    for s in [
        sym.contrib.ROIAlign(
            sym.var("data"), sym.var("rois"), pooled_size=(2, 2), spatial_scale=1.0
        ),
        sym.ROIPooling(sym.var("data"), sym.var("rois"), pooled_size=(2, 2), spatial_scale=1.0),
    ]:
        check_numeric_gradient(
            s,
            {"data": data, "rois": rois},
            grad_nodes=["data"],
            dtype=np.float64,
            numeric_eps=1e-6,
            rtol=1e-5,
            atol=1e-7,
        )


def test_roi_gradient_flows_on_the_tape_and_rois_get_zero():
    data, rois = nd.array(RNG.uniform(-1, 1, (1, 2, 4, 4))), nd.array([[0, 0, 0, 3, 3]])
    data.attach_grad()
    rois.attach_grad()
    with autograd.record():
        y = nd.contrib.ROIAlign(data, rois, pooled_size=(1, 1), spatial_scale=1.0, sample_ratio=2)
    y.backward()
    # One bin, 2x2 samples at 0.75 and 2.25 on each axis: each sample spreads 1/4 bilinearly.
    w = np.array([0.25, 0.75, 0.0, 0.0]) * 0.5 + np.array([0.0, 0.0, 0.75, 0.25]) * 0.5
    np.testing.assert_allclose(data.grad.asnumpy()[0, 0], np.outer(w, w), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(rois.grad.asnumpy(), np.zeros((1, 5)))


# ---- shape inference ----


def test_symbol_shape_inference():
    d = sym.var("data")
    _, out, _ = sym.contrib.BilinearResize2D(d, height=5, width=7).infer_shape(data=(2, 3, 4, 4))
    assert out == [(2, 3, 5, 7)]
    s = sym.contrib.BilinearResize2D(d, sym.var("like"), mode="like")
    assert s.list_arguments() == ["data", "like"]
    assert s.infer_shape(data=(2, 3, 4, 4), like=(1, 1, 9, 2))[1] == [(2, 3, 9, 2)]
    assert sym.contrib.AdaptiveAvgPooling2D(d, output_size=2).infer_shape(data=(2, 3, 8, 8))[1] == [
        (2, 3, 2, 2)
    ]
    s = sym.SpatialTransformer(
        d, sym.var("loc"), target_shape=(6, 5), transform_type="affine", sampler_type="bilinear"
    )
    assert s.infer_shape(data=(2, 3, 8, 8), loc=(2, 6))[1] == [(2, 3, 6, 5)]
    s = sym.GridGenerator(d, transform_type="affine", target_shape=(4, 3))
    assert s.infer_shape(data=(5, 6))[1] == [(5, 2, 4, 3)]
    s = sym.BilinearSampler(d, sym.var("grid"), cudnn_off=True)
    assert s.infer_shape(data=(2, 3, 8, 8), grid=(2, 2, 4, 5))[1] == [(2, 3, 4, 5)]
    s = sym.ROIPooling(d, sym.var("rois"), pooled_size=(2, 3), spatial_scale=0.5)
    assert s.infer_shape(data=(2, 3, 8, 8), rois=(7, 5))[1] == [(7, 3, 2, 3)]
    s = sym.contrib.ROIAlign(
        d, sym.var("rois"), pooled_size=(2, 2), spatial_scale=0.5, position_sensitive=True
    )
    assert s.infer_shape(data=(2, 8, 8, 8), rois=(7, 5))[1] == [(7, 2, 2, 2)]
    s = sym.Correlation(
        d, sym.var("d2"), kernel_size=3, max_displacement=4, stride1=2, stride2=2, pad_size=4
    )
    assert s.infer_shape(data=(2, 3, 7, 8), d2=(2, 3, 7, 8))[1] == [(2, 25, 3, 3)]


def test_executor_backward_matches_the_tape():
    d, g = sym.var("data"), sym.var("grid")
    s = sym.BilinearSampler(d, g)
    x, grid = RNG.uniform(-1, 1, (1, 2, 3, 4)), RNG.uniform(-1, 1, (1, 2, 2, 2))
    ex = s.simple_bind(
        mx.cpu(), data=x.shape, grid=grid.shape, type_dict={"data": np.float64, "grid": np.float64}
    )
    ex.forward(is_train=True, data=x, grid=grid)
    ex.backward(nd.ones((1, 2, 2, 2), dtype="float64"))
    xa, ga = nd.array(x, dtype="float64"), nd.array(grid, dtype="float64")
    xa.attach_grad()
    ga.attach_grad()
    with autograd.record():
        y = nd.BilinearSampler(xa, ga)
    y.backward()
    np.testing.assert_allclose(ex.grad_dict["data"].asnumpy(), xa.grad.asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(ex.grad_dict["grid"].asnumpy(), ga.grad.asnumpy(), rtol=1e-12)


# ---- bad input ----


@pytest.mark.parametrize(
    "call,match",
    [
        (
            lambda: nd.contrib.BilinearResize2D(nd.zeros((2, 3, 4)), height=2, width=2),
            r"BilinearResize2D.*\(2, 3, 4\)",
        ),
        (lambda: nd.contrib.BilinearResize2D(nd.zeros((1, 1, 2, 2)), height=0), "height"),
        (lambda: nd.contrib.BilinearResize2D(nd.zeros((1, 1, 2, 2)), mode="like"), "like"),
        (
            lambda: nd.contrib.BilinearResize2D(nd.zeros((1, 1, 2, 2)), mode="odd_scale"),
            "scale_height",
        ),
        (lambda: nd.contrib.BilinearResize2D(nd.zeros((1, 1, 2, 2)), mode="sideways"), "mode"),
        (
            lambda: nd.contrib.AdaptiveAvgPooling2D(nd.zeros((1, 1, 2, 2, 2)), output_size=1),
            r"\(1, 1, 2, 2, 2\)",
        ),
        (
            lambda: nd.contrib.AdaptiveAvgPooling2D(nd.zeros((1, 1, 2, 2)), output_size=(1, 2, 3)),
            "output_size",
        ),
        (
            lambda: nd.GridGenerator(
                nd.zeros((2, 5)), transform_type="affine", target_shape=(2, 2)
            ),
            r"\(2, 5\)",
        ),
        (lambda: nd.GridGenerator(nd.zeros((2, 6)), transform_type="affine"), "target_shape"),
        (
            lambda: nd.BilinearSampler(nd.zeros((2, 1, 3, 3)), nd.zeros((1, 2, 2, 2))),
            r"grid.*\(1, 2, 2, 2\)",
        ),
        (
            lambda: nd.SpatialTransformer(
                nd.zeros((2, 1, 3, 3)),
                nd.zeros((2, 5)),
                target_shape=(2, 2),
                transform_type="affine",
                sampler_type="bilinear",
            ),
            r"loc.*\(2, 5\)",
        ),
        (
            lambda: nd.ROIPooling(
                nd.zeros((1, 2, 4, 4)), nd.zeros((3, 4)), pooled_size=(2, 2), spatial_scale=1.0
            ),
            r"rois.*\(3, 4\)",
        ),
        (
            lambda: nd.contrib.ROIAlign(
                nd.zeros((1, 6, 4, 4)),
                nd.zeros((1, 5)),
                pooled_size=(2, 2),
                spatial_scale=1.0,
                position_sensitive=True,
            ),
            "position_sensitive",
        ),
        (
            lambda: nd.contrib.ROIAlign(
                nd.zeros((1, 2, 4, 4)),
                nd.array([[4, 0, 0, 2, 2]]),
                pooled_size=(2, 2),
                spatial_scale=1.0,
            ),
            "batch_index",
        ),
        (lambda: nd.Correlation(nd.zeros((1, 2, 4, 4)), nd.zeros((1, 2, 4, 5))), r"\(1, 2, 4, 5\)"),
        (
            lambda: nd.Correlation(nd.zeros((1, 2, 4, 4)), nd.zeros((1, 2, 4, 4)), kernel_size=2),
            "odd",
        ),
        (
            lambda: nd.Correlation(
                nd.zeros((1, 1, 2, 2)), nd.zeros((1, 1, 2, 2)), max_displacement=3
            ),
            "too small",
        ),
    ],
)
def test_bad_input(call, match):
    with pytest.raises((ValueError, IndexError, TypeError, mx.base.MXNetError), match=match):
        call().wait_to_read()


def test_integer_data_is_rejected():
    with pytest.raises((TypeError, ValueError, mx.base.MXNetError), match="float32 or float64"):
        nd.contrib.BilinearResize2D(
            nd.zeros((1, 1, 2, 2), dtype="int32"), height=3, width=3
        ).wait_to_read()


def test_roi_align_skips_a_negative_batch_index():
    data = nd.array(RNG.uniform(-1, 1, (1, 2, 4, 4)))
    rois = nd.array([[-1, 0, 0, 3, 3], [0, 0, 0, 3, 3]])
    y = nd.contrib.ROIAlign(data, rois, pooled_size=(2, 2), spatial_scale=1.0).asnumpy()
    np.testing.assert_array_equal(y[0], np.zeros((2, 2, 2)))
    alone = nd.contrib.ROIAlign(data, rois[1:], pooled_size=(2, 2), spatial_scale=1.0).asnumpy()
    np.testing.assert_array_equal(y[1], alone[0])
