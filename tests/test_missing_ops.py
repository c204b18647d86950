"""Issue 20's operator breadth: ``LRN``, ``Crop``, ``khatri_rao``, ``cumsum`` and
``LeakyReLU(act_type='rrelu')``.

MXNet 1.9.1's numbers (tests/fixtures/gen_mxnet_missing_ops.py) pin the conventions; NumPy
references written here check the forward over more parameters and dtypes; finite differences
check first and second derivatives; bad input raises a clear error naming the op, the argument
and the shapes."""

import json
import os

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, gradient_check, nd, sym
from ferrograd.test_utils import check_numeric_gradient

_FIX = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_missing_ops.npz"))
CASES = json.loads(str(_FIX["cases"]))
_TOL = {"float16": (2e-3, 2e-3), "float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12)}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matches_mxnet(case):
    name, dtype = case["name"], case["dtype"]
    xs = [nd.array(_FIX[f"{name}/in{i}"], dtype=dt) for i, dt in enumerate(case["in_dtypes"])]
    for i in case["grad_of"]:
        xs[i].attach_grad()
    with autograd.record(train_mode=False):
        outs = getattr(nd, case["op"])(*xs, **case["kwargs"])
    outs = outs if isinstance(outs, list) else [outs]
    rtol, atol = _TOL.get(dtype, (0, 0))
    if case["op"] == "LeakyReLU" and dtype == "float64":
        rtol, atol = 1e-7, 1e-8  # MXNet's float64 rrelu is about 1e-8 off (float32 arithmetic)
    for j in range(case["n_outputs"]):
        assert outs[j].dtype == np.dtype(dtype)
        np.testing.assert_allclose(outs[j].asnumpy().astype(np.float64),
                                   _FIX[f"{name}/out{j}"].astype(np.float64), rtol=rtol, atol=atol,
                                   err_msg=f"out{j}")
    if case["grad_of"]:
        outs[0].backward(nd.array(_FIX[f"{name}/head"], dtype=dtype))
        for i in case["grad_of"]:
            gr, ga = _TOL.get(case["in_dtypes"][i], (0, 0))
            # A float16 gradient sums up to 24 float16 terms.
            ga = ga * 10 if case["in_dtypes"][i] == "float16" else ga
            np.testing.assert_allclose(xs[i].grad.asnumpy().astype(np.float64),
                                       _FIX[f"{name}/grad{i}"].astype(np.float64), rtol=gr,
                                       atol=ga, err_msg=f"grad{i}")


def _f64(a):
    return nd.array(a, dtype="float64")


# ---- LRN ----

def lrn_ref(x, nsize, alpha=1e-4, beta=0.75, knorm=2.0):
    x = x.astype(np.float64)
    c, half = x.shape[1], nsize // 2
    s = np.zeros_like(x)
    for ch in range(c):
        s[:, ch] = (x[:, max(0, ch - half):min(c, ch + half + 1)] ** 2).sum(1)
    a = float(np.float32(alpha) / np.float32(nsize))
    return x * (float(np.float32(knorm)) + a * s) ** -float(np.float32(beta))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("kwargs", [dict(nsize=1), dict(nsize=3, alpha=0.9, beta=0.5),
                                    dict(nsize=7, alpha=2.0, beta=1.2, knorm=0.3)])
def test_lrn_numpy(dtype, kwargs):
    x = np.random.RandomState(1).uniform(-2, 2, (2, 7, 3, 5))
    y = nd.LRN(nd.array(x, dtype=dtype), **kwargs)
    xr = x.astype(dtype)
    tol = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-13}[dtype]
    assert y.dtype == np.dtype(dtype) and y.shape == x.shape
    np.testing.assert_allclose(y.asnumpy().astype(np.float64), lrn_ref(xr, **kwargs), rtol=tol,
                               atol=tol)


def test_lrn_parallel_kernel_is_deterministic():
    # Above the parallel threshold (2^17 elements), the result is the reference's, every time.
    x = np.random.RandomState(2).uniform(-1, 1, (4, 16, 48, 48))
    y1 = nd.LRN(_f64(x), nsize=5, alpha=0.5).asnumpy()
    y2 = nd.LRN(_f64(x), nsize=5, alpha=0.5).asnumpy()
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_allclose(y1, lrn_ref(x, 5, alpha=0.5), rtol=1e-12, atol=1e-14)


def test_lrn_symbol_and_gradients():
    s = sym.LRN(sym.var("d"), nsize=3, alpha=0.8, beta=0.6)
    _, out, _ = s.infer_shape(d=(2, 4, 3, 3))
    assert out == [(2, 4, 3, 3)]
    assert json.loads(s.tojson())["nodes"][1]["op"] == "LRN"
    x = np.random.RandomState(3).uniform(-1.5, 1.5, (2, 4, 3, 3))
    check_numeric_gradient(s, {"d": x}, dtype=np.float64, rtol=1e-6, atol=1e-8)
    gy = np.random.RandomState(4).uniform(-1, 1, x.shape)
    for kw in (dict(nsize=3, alpha=0.8, beta=0.6), dict(nsize=1, alpha=1.5, knorm=1.0)):
        def f(a, kw=kw):
            return nd.LRN(a, **kw)
        gradient_check.check_backward(f, x, gy, dtype=np.float64, atol=1e-7, rtol=1e-6)
        gradient_check.check_double_backward(f, x, gy, np.ones_like(x), dtype=np.float64,
                                             atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("shape,kwargs,err,match", [
    ((1, 4, 2, 2), dict(nsize=4), ValueError, "LRN: nsize must be a positive odd.*got 4"),
    ((1, 4, 2, 2), dict(nsize=0), ValueError, "LRN: nsize.*got 0"),
    ((1, 2, 2, 2), dict(nsize=3), mx.MXNetError, r"LRN: nsize=3 .*2 channels.*\(1, 2, 2, 2\)"),
    ((4, 3), dict(nsize=1), mx.MXNetError, r"LRN: data must be 4-D.*\(4, 3\)"),
])
def test_lrn_bad_input(shape, kwargs, err, match):
    with pytest.raises(err, match=match):
        nd.LRN(nd.zeros(shape), **kwargs).wait_to_read()


def test_lrn_needs_float_data():
    with pytest.raises(mx.MXNetError, match="LRN: data must have a float dtype.*int32"):
        nd.LRN(nd.zeros((1, 3, 2, 2), dtype="int32"), nsize=3)


# ---- Crop ----

X_CROP = np.arange(2 * 3 * 5 * 6, dtype=np.float64).reshape(2, 3, 5, 6)


@pytest.mark.parametrize("kwargs,window", [
    (dict(h_w=(2, 3)), (0, 0, 2, 3)),
    (dict(h_w=(2, 3), offset=(3, 3)), (3, 3, 2, 3)),
    (dict(h_w=(2, 3), center_crop=True), (1, 1, 2, 3)),
    (dict(h_w=(4, 5), center_crop=True, offset=(9, 9)), (0, 0, 4, 5)),
    (dict(h_w=(5, 6)), (0, 0, 5, 6)),
])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
def test_crop_numpy(kwargs, window, dtype):
    oy, ox, h, w = window
    y = nd.Crop(nd.array(X_CROP, dtype=dtype), **kwargs)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.asnumpy(), X_CROP[:, :, oy:oy + h, ox:ox + w].astype(dtype))


@pytest.mark.parametrize("kwargs,window", [
    ({}, (0, 0)), (dict(offset=(2, 4)), (2, 4)), (dict(center_crop=True), (1, 2)),
    (dict(h_w=(1, 1)), (0, 0)),  # h_w is ignored when the second input gives the size
])
def test_crop_like_numpy(kwargs, window):
    like = nd.zeros((7, 1, 3, 2))
    y = nd.Crop(_f64(X_CROP), like, **kwargs)
    oy, ox = window
    np.testing.assert_array_equal(y.asnumpy(), X_CROP[:, :, oy:oy + 3, ox:ox + 2])
    y = nd.Crop(_f64(X_CROP), like, num_args=2, **kwargs)
    assert y.shape == (2, 3, 3, 2)


def test_crop_symbol_and_gradients():
    a, b = sym.var("a"), sym.var("b")
    s = sym.Crop(a, b, num_args=2, offset=(1, 1))
    assert s.list_arguments() == ["a", "b"]
    _, out, _ = s.infer_shape(a=(2, 3, 5, 6), b=(1, 1, 3, 2))
    assert out == [(2, 3, 3, 2)]
    node = json.loads(s.tojson())["nodes"][-1]
    assert node["op"] == "Crop" and node["attrs"]["num_args"] == "2"
    x = np.random.RandomState(5).uniform(-1, 1, (1, 2, 4, 5))
    s1 = sym.Crop(a, h_w=(2, 3), offset=(1, 2))
    check_numeric_gradient(s1, {"a": x}, dtype=np.float64, rtol=1e-6, atol=1e-8)
    xa, xb = _f64(x), _f64(np.ones((1, 1, 2, 2)))
    xa.attach_grad()
    xb.attach_grad()
    head = np.random.RandomState(6).uniform(-1, 1, (1, 2, 2, 2))
    with autograd.record():
        y = nd.Crop(xa, xb, center_crop=True)
    y.backward(_f64(head))
    want = np.zeros_like(x)
    want[:, :, 1:3, 1:3] = head
    np.testing.assert_array_equal(xa.grad.asnumpy(), want)
    np.testing.assert_array_equal(xb.grad.asnumpy(), np.zeros((1, 1, 2, 2)))
    gradient_check.check_double_backward(lambda v: nd.Crop(v, h_w=(2, 2)) ** 2, x,
                                         np.ones((1, 2, 2, 2)), np.ones_like(x), dtype=np.float64)


@pytest.mark.parametrize("inputs,kwargs,err,match", [
    ([(2, 3, 5, 6)], dict(h_w=(6, 3)), mx.MXNetError,
     r"Crop: the crop size \(6, 3\).*\(2, 3, 5, 6\)"),
    ([(2, 3, 5, 6)], dict(h_w=(2, 3), offset=(4, 0)), mx.MXNetError,
     r"Crop: offset \(4, 0\).*\(2, 3, 5, 6\)"),
    ([(2, 3, 5, 6)], {}, mx.MXNetError, r"Crop: with one input h_w.*h_w=\(0, 0\)"),
    ([(3, 5, 6)], dict(h_w=(2, 2)), mx.MXNetError, r"Crop: data must be 4-D.*\(3, 5, 6\)"),
    ([(2, 3, 5, 6), (7, 7)], {}, mx.MXNetError, r"Crop: crop_like.*\(7, 7\)"),
    ([(2, 3, 5, 6), (1, 1, 7, 2)], {}, mx.MXNetError, r"Crop: the crop size \(7, 2\)"),
    ([(2, 3, 5, 6)], dict(h_w=(2,)), ValueError, r"Crop: h_w must be two.*\(2,\)"),
    ([(2, 3, 5, 6)], dict(h_w=(2, 2), offset=(-1, 0)), ValueError, "Crop: offset must be two"),
    ([(2, 3, 5, 6)], dict(h_w=(2, 2), num_args=2), ValueError, "Crop: num_args=2 but 1 input"),
    ([(2, 3, 5, 6)] * 3, {}, ValueError, "Crop: num_args must be 1 or 2, got 3"),
])
def test_crop_bad_input(inputs, kwargs, err, match):
    with pytest.raises(err, match=match):
        nd.Crop(*[nd.zeros(s) for s in inputs], **kwargs).wait_to_read()


# ---- khatri_rao ----

def khatri_rao_ref(*mats):
    out = mats[0]
    for m in mats[1:]:
        out = np.einsum("ik,jk->ijk", out, m).reshape(out.shape[0] * m.shape[0], m.shape[1])
    return out


@pytest.mark.parametrize("shapes", [[(2, 3)], [(2, 3), (4, 3)], [(3, 2), (1, 2), (2, 2), (3, 2)],
                                    [(0, 2), (3, 2)], [(2, 0), (3, 0)]])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_khatri_rao_numpy(shapes, dtype):
    rng = np.random.RandomState(7)
    mats = [rng.randint(-4, 5, s).astype(dtype) for s in shapes]
    y = nd.khatri_rao(*[nd.array(m, dtype=dtype) for m in mats])
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.asnumpy(), khatri_rao_ref(*mats))


def test_khatri_rao_symbol_and_gradients():
    a, b, c = sym.var("a"), sym.var("b"), sym.var("c")
    s = sym.khatri_rao(a, b, c)
    _, out, _ = s.infer_shape(a=(2, 3), b=(4, 3), c=(1, 3))
    assert out == [(8, 3)]
    assert json.loads(s.tojson())["nodes"][-1]["attrs"]["num_args"] == "3"
    rng = np.random.RandomState(8)
    loc = {"a": rng.uniform(-1, 1, (2, 3)), "b": rng.uniform(-1, 1, (4, 3)),
           "c": rng.uniform(-1, 1, (1, 3))}
    check_numeric_gradient(s, loc, dtype=np.float64, rtol=1e-6, atol=1e-8)
    xs = (rng.uniform(-1, 1, (2, 2)), rng.uniform(-1, 1, (3, 2)))
    gy = rng.uniform(-1, 1, (6, 2))
    gradient_check.check_double_backward(nd.khatri_rao, xs, gy, tuple(np.ones_like(x) for x in xs),
                                         dtype=np.float64)


@pytest.mark.parametrize("shapes,kwargs,err,match", [
    ([(2, 2), (3, 3)], {}, mx.MXNetError,
     r"khatri_rao: .*same number of columns.*input 1.*\(3, 3\)"),
    ([(2, 2), (3,)], {}, mx.MXNetError, r"khatri_rao: .*matrix.*input 1 has shape \(3,\)"),
    ([(2, 2)], dict(num_args=2), ValueError, "khatri_rao: num_args=2 but 1 matrices"),
    ([], {}, mx.MXNetError, "khatri_rao"),
])
def test_khatri_rao_bad_input(shapes, kwargs, err, match):
    with pytest.raises(err, match=match):
        nd.khatri_rao(*[nd.zeros(s) for s in shapes], **kwargs).wait_to_read()


def test_khatri_rao_dtypes_must_agree():
    with pytest.raises(mx.MXNetError, match="khatri_rao: input 1 has dtype float64"):
        nd.khatri_rao(nd.zeros((2, 2)), nd.zeros((2, 2), dtype="float64"))


# ---- cumsum ----

@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype,out_dtype", [("float32", None), ("float64", None),
                                             ("int32", None), ("int64", "float64"),
                                             ("float32", "int32"), ("uint8", None),
                                             ("bool", None), ("int8", "int64")])
def test_cumsum_numpy(axis, dtype, out_dtype):
    x = np.random.RandomState(9).randint(0, 5, (3, 4, 2)).astype(dtype)
    kw = {} if out_dtype is None else {"dtype": out_dtype}
    y = nd.cumsum(nd.array(x, dtype=dtype), axis=axis, **kw)
    want_dtype = out_dtype or ("int64" if dtype == "bool" else dtype)
    want = np.cumsum(x.astype(want_dtype), axis=axis)
    assert y.dtype == np.dtype(want_dtype)
    np.testing.assert_array_equal(y.asnumpy(), want)


def test_cumsum_accumulates_in_the_output_dtype():
    # As in MXNet: float16 saturates at 2048, int8 wraps, float32 loses 1e8 + 1.
    np.testing.assert_array_equal(nd.cumsum(nd.ones((3000,), dtype="float16")).asnumpy()[-1], 2048)
    np.testing.assert_array_equal(nd.cumsum(nd.array([100] * 3, dtype="int8")).asnumpy(),
                                  [100, -56, 44])
    big = nd.array([1e8, 1, 1])
    np.testing.assert_array_equal(nd.cumsum(big).asnumpy(), [1e8] * 3)
    np.testing.assert_array_equal(nd.cumsum(big, dtype="float64").asnumpy(),
                                  [1e8, 1e8 + 1, 1e8 + 2])
    # The conversion comes first (0.6 truncates to 0).
    np.testing.assert_array_equal(nd.cumsum(nd.array([0.6] * 3), dtype="int32").asnumpy(), [0] * 3)


def test_cumsum_names_symbol_and_numpy_front_end():
    s = sym.cumsum(sym.var("a"), axis=1, dtype="float64")
    node = json.loads(s.tojson())["nodes"][-1]
    assert node["op"] == "_np_cumsum" and node["attrs"] == {"axis": "1", "dtype": "float64"}
    _, out, _ = sym.cumsum(sym.var("a")).infer_shape(a=(2, 3))
    assert out == [(6,)]
    _, t, _ = s.infer_type(a=np.float32)
    assert t == [np.float64]
    from ferrograd import np as mnp
    a = mnp.array([[1, 2, 3], [4, 5, 6]])
    r = mnp.cumsum(a, axis=-1)
    assert isinstance(r, mnp.ndarray)
    np.testing.assert_array_equal(r.asnumpy(), [[1, 3, 6], [4, 9, 15]])
    np.testing.assert_array_equal(mnp.cumsum(a, dtype=np.float64).asnumpy(), [1, 3, 6, 10, 15, 21])
    np.testing.assert_array_equal(a.cumsum(axis=0).asnumpy(), [[1, 2, 3], [5, 7, 9]])


def test_cumsum_gradients():
    x = np.random.RandomState(10).uniform(-1, 1, (3, 4, 2))
    for axis in (None, 0, 2, -2):
        s = sym.cumsum(sym.var("a"), axis=axis)
        check_numeric_gradient(s, {"a": x}, dtype=np.float64, rtol=1e-6, atol=1e-8)
        n = x.size if axis is None else None
        gy = np.random.RandomState(11).uniform(-1, 1, (n,) if n else x.shape)
        def f(v, axis=axis):
            return nd.cumsum(v, axis=axis) ** 2
        gradient_check.check_double_backward(f, x, gy, np.ones_like(x), dtype=np.float64)
    # float32 input, float64 output: the gradient comes back in float32.
    v = nd.array([[1.0, 2.0, 3.0]])
    v.attach_grad()
    with autograd.record():
        y = nd.cumsum(v, dtype="float64")
    y.backward(nd.array([1, 2, 3], dtype="float64"))
    assert v.grad.dtype == np.float32
    np.testing.assert_array_equal(v.grad.asnumpy(), [[6, 5, 3]])


@pytest.mark.parametrize("kwargs,err,match", [
    (dict(axis=3), mx.MXNetError, r"cumsum: axis 3 is out of range.*\(2, 3, 4\)"),
    (dict(axis=-4), mx.MXNetError, r"cumsum: axis -4 is out of range"),
    (dict(dtype="uint8"), ValueError, "cumsum: dtype must be None or one of.*got uint8"),
    (dict(dtype="bool"), ValueError, "cumsum: dtype.*got bool"),
])
def test_cumsum_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        nd.cumsum(nd.zeros((2, 3, 4)), **kwargs).wait_to_read()


# ---- LeakyReLU(act_type='rrelu') ----

V = np.linspace(-2, 2, 24).reshape(4, 6)
V[V == 0] = 0.1


def _mean_slope(lo, hi):
    return float((np.float32(lo) + np.float32(hi)) / np.float32(2))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("bounds", [(0.125, 0.334), (0.1, 0.3), (0.5, 0.3), (0.25, 0.25)])
def test_rrelu_inference_is_the_mean_slope(dtype, bounds):
    lo, hi = bounds
    x = nd.array(V, dtype=dtype)
    x.attach_grad()
    with autograd.record(train_mode=False):
        y, mask = nd.LeakyReLU(x, act_type="rrelu", lower_bound=lo, upper_bound=hi)
    y.backward()
    a = np.asarray(_mean_slope(lo, hi), dtype=dtype).astype(np.float64)
    xv = V.astype(dtype).astype(np.float64)
    want = np.where(xv > 0, xv, a * xv).astype(dtype)
    assert y.dtype == np.dtype(dtype) and mask.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y.asnumpy(), want)
    np.testing.assert_array_equal(mask.asnumpy(), np.full(V.shape, a, dtype=dtype))
    np.testing.assert_array_equal(x.grad.asnumpy(), np.where(xv > 0, 1, a).astype(dtype))
    # Outside record the default is inference too.
    np.testing.assert_array_equal(nd.LeakyReLU(x, act_type="rrelu", lower_bound=lo,
                                               upper_bound=hi)[0].asnumpy(), want)


@pytest.mark.parametrize("bounds", [(0.125, 0.334), (0.0, 1.0), (0.3, 0.3)])
def test_rrelu_training_samples_slopes_and_backprops_them(bounds):
    lo, hi = bounds
    xv = np.random.RandomState(12).uniform(-2, 2, (50, 40))
    x = _f64(xv)
    x.attach_grad()
    mx.random.seed(5)
    with autograd.record(train_mode=True):
        y, mask = nd.LeakyReLU(x, act_type="rrelu", lower_bound=lo, upper_bound=hi)
    y.backward()
    m = mask.asnumpy()
    f32lo, f32hi = float(np.float32(lo)), float(np.float32(hi))
    assert (m >= f32lo).all() and (m <= f32hi).all()
    if hi > lo:
        assert m.std() > (hi - lo) / 5 and len(np.unique(m)) > 1000  # really random per element
    np.testing.assert_array_equal(y.asnumpy(), np.where(xv > 0, xv, m * xv))
    np.testing.assert_array_equal(x.grad.asnumpy(), np.where(xv > 0, 1.0, m))
    # mx.random.seed makes the draw reproducible.
    mx.random.seed(5)
    with autograd.record(train_mode=True):
        _, mask2 = nd.LeakyReLU(x, act_type="rrelu", lower_bound=lo, upper_bound=hi)
    np.testing.assert_array_equal(mask2.asnumpy(), m)


def test_rrelu_reversed_bounds_sample_between_them():
    mx.random.seed(3)
    with autograd.record(train_mode=True):
        _, mask = nd.LeakyReLU(nd.ones((100,)) * -1, act_type="rrelu", lower_bound=0.5,
                               upper_bound=0.3)
    m = mask.asnumpy()
    assert (m >= np.float32(0.3)).all() and (m <= np.float32(0.5)).all()


def test_rrelu_executor_and_symbol():
    s = sym.LeakyReLU(sym.var("d"), act_type="rrelu", lower_bound=0.1, upper_bound=0.3)
    assert s.list_outputs() == ["leakyrelu0_output", "leakyrelu0_mask"] or \
        [o.rsplit("_", 1)[1] for o in s.list_outputs()] == ["output", "mask"]
    _, out, _ = s.infer_shape(d=V.shape)
    assert out == [V.shape, V.shape]
    node = json.loads(s.tojson())["nodes"][-1]
    assert node["attrs"] == {"act_type": "rrelu", "lower_bound": "0.1", "upper_bound": "0.3"}
    ex = s.simple_bind(mx.cpu(), d=V.shape)
    y = ex.forward(is_train=False, d=_f64(V).astype("float32"))[0].asnumpy()
    a = _mean_slope(0.1, 0.3)
    np.testing.assert_allclose(y, np.where(V > 0, V, a * V), rtol=1e-6)
    mx.random.seed(1)
    y, mask = [o.asnumpy() for o in ex.forward(is_train=True, d=nd.array(V))]
    assert (mask >= np.float32(0.1)).all() and (mask <= np.float32(0.3)).all()
    assert len(np.unique(mask)) > 10
    ex.backward([nd.ones(V.shape), nd.zeros(V.shape)])
    np.testing.assert_array_equal(ex.grad_dict["d"].asnumpy(), np.where(V > 0, 1, mask))


def test_rrelu_gradients():
    # Inference: a fixed piecewise-linear function, checked by central differences (the
    # symbolic checker's analytic side runs a training forward, with random slopes).
    head = np.random.RandomState(13).uniform(0.5, 1.5, V.shape)

    def loss(v):
        return float((nd.LeakyReLU(_f64(v), act_type="rrelu")[0].asnumpy() * head).sum())

    x = _f64(V)
    x.attach_grad()
    with autograd.record(train_mode=False):
        y, _ = nd.LeakyReLU(x, act_type="rrelu")
    y.backward(_f64(head))
    eps, numeric = 1e-6, np.zeros(V.shape)
    for i in np.ndindex(V.shape):
        d = np.zeros(V.shape)
        d[i] = eps
        numeric[i] = (loss(V + d) - loss(V - d)) / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-6, atol=1e-8)
    # Training: the second derivative is zero, and the first-order gradient graph differentiates.
    x = _f64(V)
    x.attach_grad()
    with autograd.record(train_mode=True):
        y, mask = nd.LeakyReLU(x, act_type="rrelu")
        (gx,) = autograd.grad(y * 3, [x], create_graph=True)
        z = (gx * x).sum()
    z.backward()
    m = mask.asnumpy()
    np.testing.assert_array_equal(gx.asnumpy(), 3 * np.where(V > 0, 1, m))
    np.testing.assert_array_equal(x.grad.asnumpy(), 3 * np.where(V > 0, 1, m))


def test_rrelu_bad_input():
    with pytest.raises(ValueError, match="LeakyReLU: rrelu needs finite lower_bound"):
        nd.LeakyReLU(nd.ones((2,)), act_type="rrelu", upper_bound=float("inf"))
    with pytest.raises(mx.MXNetError, match="LeakyReLU: data must have a float dtype.*int32"):
        nd.LeakyReLU(nd.ones((2,), dtype="int32"), act_type="rrelu")
