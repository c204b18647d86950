"""The operator library from Python (issue 4): nd.<op> wrappers of the NN, shape and ordering ops
against NumPy references, MXNet's string parameter forms, training/predict behaviour, gradients
through autograd, and bad input raising clear errors."""

import json
import math

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, nd
from ferrograd.base import MXNetError
from ferrograd.gradient_check import check_backward

RNG = np.random.default_rng(7)


def f64(*shape):
    return nd.array(RNG.standard_normal(shape), dtype="float64")


def conv2d_ref(x, w, b, stride=1, pad=0):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out + b[None, :, None, None]


def test_convolution_matches_numpy_with_string_params():
    x, w, b = f64(2, 3, 6, 5), f64(4, 3, 3, 3), f64(4)
    y = nd.Convolution(x, w, b, kernel="(3, 3)", stride="(2, 2)", pad="(1, 1)", num_filter="4")
    want = conv2d_ref(x.asnumpy(), w.asnumpy(), b.asnumpy(), stride=2, pad=1)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-10)
    y2 = nd.Convolution(x, w, kernel=(3, 3), num_filter=4, no_bias=True)
    np.testing.assert_allclose(y2.asnumpy(), conv2d_ref(x.asnumpy(), w.asnumpy(), np.zeros(4)),
                               rtol=1e-10)


def test_convolution_gradient():
    w, b = f64(2, 3, 2, 2), f64(2)
    check_backward(lambda x: nd.Convolution(x, w, b, kernel=(2, 2), num_filter=2),
                   f64(1, 3, 4, 4), RNG.standard_normal((1, 2, 3, 3)), atol=1e-6, rtol=1e-5)


def test_pooling_max_avg_global():
    x = f64(2, 3, 4, 4)
    xn = x.asnumpy().reshape(2, 3, 2, 2, 2, 2)
    np.testing.assert_allclose(nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max")
                               .asnumpy(), xn.max(axis=(3, 5)))
    np.testing.assert_allclose(nd.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="avg")
                               .asnumpy(), xn.mean(axis=(3, 5)), rtol=1e-12)
    g = nd.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="sum")
    np.testing.assert_allclose(g.asnumpy()[..., 0, 0], x.asnumpy().sum(axis=(2, 3)), rtol=1e-12)


def test_fully_connected_flatten_and_no_bias():
    x, w, b = f64(2, 3, 4), f64(5, 12), f64(5)
    y = nd.FullyConnected(x, w, b, num_hidden=5)
    np.testing.assert_allclose(y.asnumpy(), x.asnumpy().reshape(2, 12) @ w.asnumpy().T
                               + b.asnumpy(), rtol=1e-12)
    w4 = f64(5, 4)
    y = nd.FullyConnected(x, w4, num_hidden=5, no_bias=True, flatten=False)
    np.testing.assert_allclose(y.asnumpy(), x.asnumpy() @ w4.asnumpy().T, rtol=1e-12)


def test_batchnorm_updates_moving_stats_only_in_training():
    x = f64(8, 3, 2)
    # MXNet's default eps and its momentum are float32 values
    eps, m = float(np.float32(1e-3)), float(np.float32(0.9))
    gamma, beta = nd.ones(3, dtype="float64"), nd.zeros(3, dtype="float64")
    mm, mv = nd.zeros(3, dtype="float64"), nd.ones(3, dtype="float64")
    y = nd.BatchNorm(x, gamma, beta, mm, mv)  # predict mode: moving statistics, unchanged
    np.testing.assert_allclose(y.asnumpy(), x.asnumpy() / np.sqrt(1 + eps), rtol=1e-12)
    assert mm.asnumpy().tolist() == [0, 0, 0]
    x.attach_grad()
    with autograd.record():  # training mode: batch statistics; moving ones updated by backward
        y = nd.BatchNorm(x, gamma, beta, mm, mv, momentum=0.9)
    assert mm.asnumpy().tolist() == [0, 0, 0]
    y.backward()
    xn = x.asnumpy()
    mean, var = xn.mean(axis=(0, 2)), xn.var(axis=(0, 2))
    np.testing.assert_allclose(mm.asnumpy(), (1 - m) * mean, rtol=1e-12)
    np.testing.assert_allclose(mv.asnumpy(), m + (1 - m) * var, rtol=1e-12)
    want = (xn - mean[None, :, None]) / np.sqrt(var[None, :, None] + eps)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-10)


def test_dropout_training_versus_predict():
    x = nd.ones((1000,))
    np.testing.assert_array_equal(nd.Dropout(x, p=0.5).asnumpy(), np.ones(1000))
    with autograd.record():
        y = nd.Dropout(x, p=0.5).asnumpy()
    assert set(np.unique(y)) == {0.0, 2.0} and 400 < (y == 0).sum() < 600
    y = nd.Dropout(x, p=0.5, mode="always").asnumpy()
    assert (y == 0).sum() > 0
    with autograd.record(train_mode=False):  # recording, but predicting: identity
        np.testing.assert_array_equal(nd.Dropout(x, p=0.5).asnumpy(), np.ones(1000))


def test_softmax_output_gradient_ignores_head_gradient():
    x = f64(4, 3)
    label = nd.array([0, 2, 1, 1], dtype="float64")
    x.attach_grad()
    with autograd.record():
        p = nd.SoftmaxOutput(x, label, grad_scale=2.0)
    p.backward(nd.ones((4, 3), dtype="float64") * 7)
    e = np.exp(x.asnumpy() - x.asnumpy().max(1, keepdims=True))
    prob = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(p.asnumpy(), prob, rtol=1e-12)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * (prob - np.eye(3)[[0, 2, 1, 1]]),
                               rtol=1e-10)


def test_activation_and_leaky_relu_variants():
    x = f64(3, 4)
    xn = x.asnumpy()
    refs = {"relu": np.maximum(xn, 0), "sigmoid": 1 / (1 + np.exp(-xn)), "tanh": np.tanh(xn),
            "softrelu": np.log1p(np.exp(xn)), "softsign": xn / (1 + np.abs(xn))}
    for act, want in refs.items():
        np.testing.assert_allclose(nd.Activation(x, act_type=act).asnumpy(), want, rtol=1e-10)
    slope = float(np.float32(0.1))  # a float32 parameter in MXNet
    np.testing.assert_allclose(nd.LeakyReLU(x, slope=0.1).asnumpy(),
                               np.where(xn > 0, xn, slope * xn), rtol=1e-12)
    gamma = nd.array([0.5, 0.1, 0.2, 0.3], dtype="float64")
    np.testing.assert_allclose(nd.LeakyReLU(x, gamma, act_type="prelu").asnumpy(),
                               np.where(xn > 0, xn, gamma.asnumpy() * xn), rtol=1e-12)


def test_gelu_is_the_exact_erf_form_with_its_gradient():
    # MXNet 1.9.1: LeakyReLU(act_type='gelu') at [-1, 0.5] gives [-0.15865526, 0.34573123].
    y = nd.LeakyReLU(nd.array([-1.0, 0.5]), act_type="gelu")
    np.testing.assert_allclose(y.asnumpy(), [-0.15865526, 0.34573123], rtol=1e-6)
    x = f64(2, 5)
    xn = x.asnumpy()
    erf = np.vectorize(math.erf)
    cdf = 0.5 * (1 + erf(xn / math.sqrt(2)))
    np.testing.assert_allclose(nd.LeakyReLU(x, act_type="gelu").asnumpy(), xn * cdf, rtol=1e-12)
    x.attach_grad()
    with autograd.record():
        y = nd.LeakyReLU(x, act_type="gelu")
    y.backward()
    pdf = np.exp(-xn * xn / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(x.grad.asnumpy(), cdf + xn * pdf, rtol=1e-12)


def test_flatten_is_its_own_op_in_graphs():
    s = mx.sym.Flatten(mx.sym.var("x"), name="fl")
    node = json.loads(s.tojson())["nodes"][1]
    assert node["op"] == "Flatten" and "attrs" not in node
    again = mx.sym.load_json(s.tojson())
    assert json.loads(again.tojson())["nodes"][1]["op"] == "Flatten"
    assert again.infer_shape(x=(2, 3, 4))[1] == [(2, 12)]
    assert nd.Flatten(nd.ones((5,))).shape == (5, 1)


def test_embedding_and_one_hot_and_topk_axis_none():
    w = f64(5, 3)
    idx = nd.array([[0, 4], [2, 2]])
    np.testing.assert_array_equal(nd.Embedding(idx, w, input_dim=5, output_dim=3).asnumpy(),
                                  w.asnumpy()[[[0, 4], [2, 2]]])
    np.testing.assert_array_equal(nd.one_hot(nd.array([1, 0]), depth=3).asnumpy(),
                                  [[0, 1, 0], [1, 0, 0]])
    x = nd.array([[5.0, 1.0, 9.0], [7.0, 3.0, 8.0]])
    np.testing.assert_array_equal(nd.topk(x, axis=None, k=2, ret_typ="value").asnumpy(), [9, 8])
    np.testing.assert_array_equal(nd.sort(x, axis=None).asnumpy(), [1, 3, 5, 7, 8, 9])
    np.testing.assert_array_equal(nd.topk(x, k=1).asnumpy(), [[2], [2]])


def test_concat_split_stack_round_trip():
    a, b = f64(2, 3), f64(2, 3)
    c = nd.concat(a, b, dim=1)
    np.testing.assert_array_equal(c.asnumpy(), np.concatenate([a.asnumpy(), b.asnumpy()], 1))
    left, right = nd.split(c, num_outputs=2, axis=1)
    np.testing.assert_array_equal(right.asnumpy(), b.asnumpy())
    np.testing.assert_array_equal(nd.stack(a, b, axis=0).asnumpy(),
                                  np.stack([a.asnumpy(), b.asnumpy()]))


@pytest.mark.parametrize("call,match", [
    (lambda: nd.Convolution(nd.ones((1, 1, 2, 2)), nd.ones((1, 1, 3, 3)), kernel=(3, 3),
                            num_filter=1, no_bias=True), "Convolution"),
    (lambda: nd.Pooling(nd.ones((1, 1, 2, 2)), kernel=(3, 3), pool_type="max"), "Pooling"),
    (lambda: nd.concat(nd.ones((2, 3)), nd.ones((3, 3)), dim=1), r"Concat|concat"),
    (lambda: nd.SoftmaxOutput(nd.ones((4, 3)), nd.ones((5,))), "SoftmaxOutput"),
    (lambda: nd.Activation(nd.ones(2), act_type="bogus"), "act_type"),
    (lambda: nd.Convolution(nd.ones((1, 1, 4, 4)), nd.ones((1, 1, 3, 3)), kernel="(3, x)",
                            num_filter=1, no_bias=True), "kernel"),
    (lambda: nd.FullyConnected(nd.ones((2, 3)), nd.ones((4, 3)), nd.ones(4), num_hidden=4,
                               nonsense=1), "nonsense"),
    (lambda: nd.softmax_cross_entropy(nd.ones((2, 3)), nd.array([0, 7])), "softmax_cross_entropy"),
])
def test_bad_input_raises_named_errors(call, match):
    with pytest.raises(MXNetError, match=match):
        call()


def test_embedding_out_of_range_is_clipped_like_take():
    w = f64(3, 2)
    y = nd.Embedding(nd.array([5, -1]), w, input_dim=3, output_dim=2)
    np.testing.assert_array_equal(y.asnumpy(), w.asnumpy()[[2, 0]])


def test_nn_ops_are_differentiable_twice():
    from ferrograd.gradient_check import check_double_backward
    x = f64(3, 4)
    check_double_backward(lambda a: nd.softmax(a, axis=-1), x, RNG.standard_normal((3, 4)),
                          RNG.standard_normal((3, 4)), atol=1e-6, rtol=1e-5)
    check_double_backward(lambda a: nd.Activation(a, act_type="softrelu"), x,
                          RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)),
                          atol=1e-6, rtol=1e-5)


def test_samplers_follow_the_seed():
    mx.random.seed(3)
    a = nd.random_uniform(low=0, high=2, shape=(50,)).asnumpy()
    mx.random.seed(3)
    b = nd.random_uniform(low=0, high=2, shape=(50,)).asnumpy()
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0 and a.max() < 2
    s = nd.sample_normal(nd.array([0.0, 100.0]), nd.array([1.0, 1.0]), shape=(200,)).asnumpy()
    assert s.shape == (2, 200) and abs(s[1].mean() - 100) < 1


def test_max_pooling_2x2_tiles_forward_backward_and_nan_rule():
    # Kernel 2, stride 2, no padding (its own kernels): odd sizes leave the last row/column out,
    # the gradient goes to each window's first maximum, ties to the first in row-major order.
    rs = np.random.RandomState(7)
    for dtype in (np.float32, np.float64):
        x = rs.randint(0, 4, size=(2, 3, 7, 9)).astype(dtype)  # small integers: many ties
        x[0, 0, 0, 0], x[0, 0, 1, 3], x[1, 2, 4, 4] = np.nan, np.nan, np.nan
        xa = nd.array(x, dtype=dtype)
        xa.attach_grad()
        head = rs.randn(2, 3, 3, 4).astype(dtype)
        with mx.autograd.record():
            y = nd.Pooling(xa, kernel=(2, 2), stride=(2, 2), pool_type="max")
        y.backward(nd.array(head, dtype=dtype))
        want_y = np.zeros((2, 3, 3, 4), dtype)
        want_dx = np.zeros_like(x)
        for i in range(3):
            for j in range(4):
                win = x[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2].reshape(2, 3, 4)
                for a in range(2):
                    for c in range(3):
                        best = 0
                        for k in range(1, 4):
                            if win[a, c, k] > win[a, c, best]:
                                best = k
                        want_y[a, c, i, j] = win[a, c, best]
                        want_dx[a, c, 2 * i + best // 2, 2 * j + best % 2] = head[a, c, i, j]
        np.testing.assert_array_equal(y.asnumpy(), want_y)
        np.testing.assert_array_equal(xa.grad.asnumpy(), want_dx)


def test_max_pooling_nan_rule_and_padded_edges():
    # The window is folded in row-major order from its first element: a NaN there stays the
    # maximum, a later NaN is skipped (what the per-window loop did before the row-wise kernel).
    x = np.array([[np.nan, 1, 5, np.nan], [2, 3, 4, 0]], dtype=np.float32).reshape(1, 1, 2, 4)
    y = nd.Pooling(nd.array(x), kernel=(2, 2), stride=(2, 2), pool_type="max").asnumpy()
    assert np.isnan(y[0, 0, 0, 0]) and y[0, 0, 0, 1] == 5
    # Padding with stride 3: edge windows are clamped; compare with a NumPy loop.
    rs = np.random.RandomState(4)
    x = rs.randn(2, 3, 7, 11).astype(np.float32)
    for kind, reduce in [("max", np.max), ("avg", np.mean)]:
        y = nd.Pooling(nd.array(x), kernel=(3, 2), stride=(2, 3), pad=(1, 1), pool_type=kind,
                       count_include_pad=False).asnumpy()
        oh, ow = (7 + 2 - 3) // 2 + 1, (11 + 2 - 2) // 3 + 1
        assert y.shape == (2, 3, oh, ow)
        for i in range(oh):
            for j in range(ow):
                r0, c0 = i * 2 - 1, j * 3 - 1
                win = x[:, :, max(r0, 0):r0 + 3, max(c0, 0):c0 + 2]
                np.testing.assert_allclose(y[:, :, i, j], reduce(win, axis=(2, 3)), rtol=1e-6)
