"""gluon.nn convolution, pooling and padding layers against NumPy references."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.gluon import nn


def _conv2d_ref(x, w, b, stride=1, pad=0):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, _, h, wd = x.shape
    f, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, f, oh, ow), dtype=np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out + b[None, :, None, None]


def test_conv2d_forward_deferred_in_channels_and_gradient():
    conv = nn.Conv2D(4, 3, strides=2, padding=1)
    conv.initialize(mx.init.Xavier())
    x_np = np.random.RandomState(0).randn(2, 3, 7, 7).astype(np.float32)
    x = mx.nd.array(x_np)
    with mx.autograd.record():
        y = conv(x)
    y.backward()
    w, b = conv.weight.data().asnumpy(), conv.bias.data().asnumpy()
    assert w.shape == (4, 3, 3, 3)
    np.testing.assert_allclose(y.asnumpy(), _conv2d_ref(x_np, w, b, 2, 1), rtol=1e-4, atol=1e-4)
    # d sum(y) / d bias = number of output positions per filter
    np.testing.assert_allclose(conv.bias.grad().asnumpy(), np.full(4, 2 * 4 * 4.0))
    # d sum(y) / d w[f, c, p, q] = sum of the input entries that weight touches
    padded = np.pad(x_np, ((0, 0), (0, 0), (1, 1), (1, 1)))
    expect = np.zeros((3, 3, 3))
    for p in range(3):
        for q in range(3):
            expect[:, p, q] = padded[:, :, p:p + 8:2, q:q + 8:2].sum(axis=(0, 2, 3))
    np.testing.assert_allclose(conv.weight.grad().asnumpy(), np.broadcast_to(expect, w.shape),
                               rtol=1e-4, atol=1e-4)


def test_conv_names_shapes_reprs():
    with mx.name.NameManager():
        c = nn.Conv2D(8, (3, 2), strides=2, padding=1, dilation=2, groups=2, in_channels=4,
                      use_bias=False, activation="relu")
        assert c.name == "conv0" and c.weight.shape == (8, 2, 3, 2) and c.bias is None
        assert repr(c) == ("Conv2D(2 -> 8, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1), "
                           "dilation=(2, 2), groups=2, bias=False, Activation(relu))")
        t = nn.Conv2DTranspose(4, 3, strides=2, output_padding=1, in_channels=3)
        assert t.name == "conv1" and t.weight.shape == (3, 4, 3, 3)
        assert repr(nn.Conv3D(2, 1)) == "Conv3D(None -> 2, kernel_size=(1, 1, 1), stride=(1, 1, 1))"
        assert nn.MaxPool2D().name == "pool0"


def test_conv_transpose_output_shape_and_value():
    t = nn.Conv1DTranspose(1, 2, strides=2, in_channels=1, weight_initializer=mx.init.One())
    t.initialize()
    out = t(mx.nd.array([[[1.0, 2.0, 3.0]]])).asnumpy()
    # each input spreads onto a length-2 window, windows step by 2: no overlap
    np.testing.assert_array_equal(out, [[[1, 1, 2, 2, 3, 3]]])
    t2 = nn.Conv2DTranspose(4, 3, strides=2, output_padding=1)
    t2.initialize()
    assert t2(mx.nd.ones((1, 3, 5, 5))).shape == (1, 4, 12, 12)
    assert t2.weight.shape == (3, 4, 3, 3)


def test_conv1d_matches_correlation():
    conv = nn.Conv1D(1, 2, in_channels=1, weight_initializer=mx.init.Constant([[[1.0, -1.0]]]))
    conv.initialize()
    out = conv(mx.nd.array([[[1.0, 4.0, 9.0, 16.0]]])).asnumpy()
    np.testing.assert_array_equal(out, [[[-3, -5, -7]]])


def test_pooling_values():
    x_np = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x = mx.nd.array(x_np)
    np.testing.assert_array_equal(nn.MaxPool2D()(x).asnumpy(), [[[[5, 7], [13, 15]]]])
    np.testing.assert_array_equal(nn.AvgPool2D()(x).asnumpy(), [[[[2.5, 4.5], [10.5, 12.5]]]])
    np.testing.assert_array_equal(nn.GlobalMaxPool2D()(x).asnumpy(), [[[[15]]]])
    np.testing.assert_array_equal(nn.GlobalAvgPool2D()(x).asnumpy(), [[[[7.5]]]])
    # ceil_mode keeps the partial last window
    assert nn.MaxPool1D(2, ceil_mode=True)(mx.nd.ones((1, 1, 5))).shape == (1, 1, 3)
    assert nn.MaxPool1D(2)(mx.nd.ones((1, 1, 5))).shape == (1, 1, 2)
    # count_include_pad=False divides by the real elements only
    padded = nn.AvgPool1D(2, padding=1, count_include_pad=False)(mx.nd.array([[[2.0, 4.0]]]))
    np.testing.assert_array_equal(padded.asnumpy(), [[[2.0, 4.0]]])
    assert repr(nn.MaxPool1D(3, 1, 1, ceil_mode=True)) == (
        "MaxPool1D(size=(3,), stride=(1,), padding=(1,), ceil_mode=True, global_pool=False, "
        "pool_type=max, layout=NCW)")
    assert nn.GlobalAvgPool3D()(mx.nd.ones((2, 3, 2, 2, 2))).shape == (2, 3, 1, 1, 1)


def test_reflection_pad():
    x_np = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    out = nn.ReflectionPad2D(1)(mx.nd.array(x_np)).asnumpy()
    np.testing.assert_array_equal(out, np.pad(x_np, ((0, 0), (0, 0), (1, 1), (1, 1)),
                                              mode="reflect"))


def test_bad_layouts_and_arguments():
    with pytest.raises(mx.MXNetError, match="layout 'NCWH' is not supported"):
        nn.Conv2D(2, 3, layout="NCWH")
    with pytest.raises(mx.MXNetError, match="kernel_size"):
        nn.Conv2D(2, (3, 3, 3))
    with pytest.raises(mx.MXNetError, match="layout"):
        nn.MaxPool2D(layout="HWCN")
    with pytest.raises(TypeError, match="unexpected arguments"):
        nn.Conv2D(2, 3, bogus=1)
    with pytest.raises(mx.MXNetError, match="padding"):
        nn.ReflectionPad2D((1, 2))
