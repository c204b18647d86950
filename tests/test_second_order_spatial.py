"""Higher-order gradients of the sampling, ROI, correlation and deformable convolution operators.

Each check records `f`, takes the gradient of a scalar loss with `create_graph=True` (and again
for third order), contracts it with fixed random weights, and compares the backward of that
scalar with central differences of it in float64. The losses are nonlinear in the outputs
(`sum(v·sin(2y))`), so that the gradients of every order depend on the data even where the op
is linear in it."""

import numpy as np
import pytest
from ferrograd import autograd, nd

EPS = 1e-6


def _scalar(f, arrays, wrt, weights):
    """f's loss differentiated len(weights) times in `wrt`, each gradient contracted with the
    next weights; returns the final scalar and the NDArrays it was computed from."""
    xs = [nd.array(a, dtype="float64") for a in arrays]
    for i in wrt:
        xs[i].attach_grad()
    with autograd.record():
        val = f(*xs)
        for w in weights:
            gs = autograd.grad(val, [xs[i] for i in wrt], create_graph=True)
            terms = zip(gs, w, strict=True)
            val = sum((g * nd.array(wi, dtype="float64")).sum() for g, wi in terms)
    return val, xs


def check_order(f, arrays, wrt, order, seed=0, rtol=1e-5, atol=1e-6):
    rng = np.random.RandomState(seed)
    weights = [[rng.uniform(0.5, 2, arrays[i].shape) * rng.choice([-1, 1], arrays[i].shape)
                for i in wrt] for _ in range(order - 1)]
    val, xs = _scalar(f, arrays, wrt, weights)
    val.backward()
    got = [xs[i].grad.asnumpy() for i in wrt]
    assert any(np.abs(g).max() > 1e-3 for g in got), "the checked gradient is all zeros"
    for gi, i in zip(got, wrt, strict=True):
        fd = np.zeros(arrays[i].size)
        for j in range(arrays[i].size):
            vals = []
            for d in (EPS, -EPS):
                a = [x.copy() for x in arrays]
                a[i].flat[j] += d
                vals.append(_scalar(f, a, wrt, weights)[0].asscalar())
            fd[j] = (vals[0] - vals[1]) / (2 * EPS)
        np.testing.assert_allclose(gi.ravel(), fd, rtol=rtol, atol=atol, err_msg=f"input {i}")


def _nonlinear(op, v):
    return lambda *xs: (nd.array(v, dtype="float64") * nd.sin(2 * op(*xs))).sum()


def _rng(seed):
    return np.random.RandomState(seed)


def sampler_inputs(seed):
    r = _rng(seed)
    return [r.uniform(-1, 1, (1, 2, 3, 4)), r.uniform(-1.1, 1.1, (1, 2, 2, 3))]


@pytest.mark.parametrize("order", [2, 3])
def test_bilinear_sampler_is_differentiable_to_third_order(order):
    data, grid = sampler_inputs(1)
    v = _rng(2).uniform(-1, 1, (1, 2, 2, 3))
    check_order(_nonlinear(nd.BilinearSampler, v), [data, grid], [0, 1], order)


def test_bilinear_sampler_second_order_with_a_linear_loss_has_grid_cross_terms():
    # With sum(v·y) the data gradient is linear in the data; the mixed data/grid and grid/grid
    # terms are what second order adds.
    data, grid = sampler_inputs(3)
    v = _rng(4).uniform(-1, 1, (1, 2, 2, 3))
    f = lambda x, g: (nd.array(v, dtype="float64") * nd.BilinearSampler(x, g)).sum()  # noqa: E731
    check_order(f, [data, grid], [0, 1], 2)


def test_spatial_transformer_second_order():
    r = _rng(5)
    data = r.uniform(-1, 1, (1, 2, 4, 4))
    loc = np.array([[0.9, 0.1, 0.05, -0.1, 0.8, 0.1]]) + r.uniform(-0.05, 0.05, (1, 6))
    v = r.uniform(-1, 1, (1, 2, 3, 3))
    op = lambda x, t: nd.SpatialTransformer(x, t, target_shape=(3, 3), transform_type="affine",  # noqa: E731
                                            sampler_type="bilinear")
    check_order(_nonlinear(op, v), [data, loc], [0, 1], 2)


ROIS = np.array([[0, 0.5, 0.6, 3.5, 2.8], [0, 1.2, 0.3, 4.6, 3.9], [0, 0.0, 0.0, 2.0, 2.0]])


@pytest.mark.parametrize("order", [2, 3])
def test_roi_align_second_and_third_order(order):
    data = _rng(6).uniform(-1, 1, (1, 2, 5, 6))
    op = lambda x, r: nd.contrib.ROIAlign(x, r, pooled_size=(2, 2), spatial_scale=1.0,  # noqa: E731
                                          sample_ratio=2)
    v = _rng(7).uniform(-1, 1, (3, 2, 2, 2))
    check_order(_nonlinear(op, v), [data, ROIS], [0], order)


def test_roi_align_position_sensitive_second_order():
    data = _rng(8).uniform(-1, 1, (1, 4, 5, 6))
    op = lambda x, r: nd.contrib.ROIAlign(x, r, pooled_size=(1, 2), spatial_scale=0.8,  # noqa: E731
                                          position_sensitive=True)
    v = _rng(9).uniform(-1, 1, (3, 2, 1, 2))
    check_order(_nonlinear(op, v), [data, ROIS], [0], 2)


@pytest.mark.parametrize("order", [2, 3])
def test_roi_pooling_second_and_third_order(order):
    # Max pooling: the first-order gradient routes 2·v·cos(2y) to each bin's maximum.
    data = _rng(10).uniform(-1, 1, (1, 2, 5, 6))
    op = lambda x, r: nd.ROIPooling(x, r, pooled_size=(2, 2), spatial_scale=1.0)  # noqa: E731
    v = _rng(11).uniform(-1, 1, (3, 2, 2, 2))
    check_order(_nonlinear(op, v), [data, ROIS], [0], order)


def test_roi_pooling_second_order_values():
    # One roi over a 2x2 map, one bin: y = max(x) = x[1, 0]; d/dx sum(y²) = 2·y at the max, and
    # the gradient of sum(that) is 2 at the max, 0 elsewhere.
    x = nd.array([[[[0.1, 0.2], [0.9, 0.3]]]], dtype="float64")
    rois = nd.array([[0, 0, 0, 1, 1]], dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = nd.ROIPooling(x, rois, pooled_size=(1, 1), spatial_scale=1.0)
        (g,) = autograd.grad((y ** 2).sum(), [x], create_graph=True)
        z = g.sum()
    z.backward()
    np.testing.assert_allclose(g.asnumpy(), [[[[0, 0], [1.8, 0]]]])
    np.testing.assert_allclose(x.grad.asnumpy(), [[[[0, 0], [2, 0]]]])


def test_psroi_pooling_second_order():
    data = _rng(12).uniform(-1, 1, (1, 8, 6, 6))
    op = lambda x, r: nd.contrib.PSROIPooling(x, r, spatial_scale=1.0, output_dim=2,  # noqa: E731
                                              pooled_size=2)
    v = _rng(13).uniform(-1, 1, (3, 2, 2, 2))
    check_order(_nonlinear(op, v), [data, ROIS], [0], 2)


@pytest.mark.parametrize("is_multiply", [True, False])
@pytest.mark.parametrize("order", [2, 3])
def test_correlation_second_and_third_order(is_multiply, order):
    r = _rng(14)
    a, b = r.uniform(-1, 1, (1, 2, 4, 5)), r.uniform(-1, 1, (1, 2, 4, 5))
    op = lambda x, y: nd.Correlation(x, y, kernel_size=1, max_displacement=1, pad_size=1,  # noqa: E731
                                     is_multiply=is_multiply)
    v = r.uniform(-1, 1, op(nd.array(a), nd.array(b)).shape)
    check_order(_nonlinear(op, v), [a, b], [0, 1], order)


def dcn_inputs(seed, modulated, c=2, f=2, ng=1, dg=1, kernel=(2, 2)):
    # Offsets with fractional parts in [0.1, 0.9]: sampling points away from pixel edges, where
    # bilinear sampling has kinks.
    r = _rng(seed)
    taps, (ho, wo) = kernel[0] * kernel[1], (5 - kernel[0] + 1, 4 - kernel[1] + 1)
    shape = (1, 2 * dg * taps, ho, wo)
    xs = [r.uniform(-1, 1, (1, c, 5, 4)), r.uniform(0.1, 0.9, shape) - r.randint(0, 2, shape)]
    if modulated:
        xs.append(r.uniform(0.2, 1, (1, dg * taps, ho, wo)))
    xs += [r.uniform(-1, 1, (f, c // ng) + kernel), r.uniform(-1, 1, (f,))]
    return xs, (1, f, ho, wo)


def _dcn(modulated, **kw):
    if modulated:
        return lambda *xs: nd.contrib.ModulatedDeformableConvolution(*xs, **kw)
    return lambda *xs: nd.contrib.DeformableConvolution(*xs, **kw)


@pytest.mark.parametrize("modulated", [False, True])
@pytest.mark.parametrize("order", [1, 2, 3])
def test_deformable_convolution_to_third_order(modulated, order):
    xs, ys = dcn_inputs(16, modulated)
    op = _dcn(modulated, kernel=(2, 2), num_filter=2)
    v = _rng(17).uniform(-1, 1, ys)
    check_order(_nonlinear(op, v), xs, list(range(len(xs))), order)


@pytest.mark.parametrize("modulated", [False, True])
def test_grouped_deformable_convolution_second_order(modulated):
    xs, ys = dcn_inputs(18, modulated, c=4, f=4, ng=2, dg=2)
    op = _dcn(modulated, kernel=(2, 2), num_filter=4, num_group=2, num_deformable_group=2)
    v = _rng(19).uniform(-1, 1, ys)
    check_order(_nonlinear(op, v), xs, list(range(len(xs))), 2)


def test_deformable_convolution_gradient_matches_the_fused_backward():
    # The first-order gradient (built from ops, differentiable again) equals MXNet's fused
    # _backward_ModulatedDeformableConvolution.
    xs, ys = dcn_inputs(20, True, c=4, f=4, ng=2, dg=2)
    kw = dict(kernel=(2, 2), num_filter=4, num_group=2, num_deformable_group=2)
    arrs = [nd.array(x, dtype="float64") for x in xs]
    gy = nd.array(_rng(21).uniform(-1, 1, ys), dtype="float64")
    for a in arrs:
        a.attach_grad()
    with autograd.record():
        y = nd.contrib.ModulatedDeformableConvolution(*arrs, **kw)
    y.backward(gy)
    fused = nd._backward_ModulatedDeformableConvolution(gy, *arrs[:4], **kw)
    for a, want in zip(arrs, fused, strict=True):
        np.testing.assert_allclose(a.grad.asnumpy(), want.asnumpy(), rtol=1e-12, atol=1e-12)
