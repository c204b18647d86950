"""gluon.contrib.nn: Concurrent/HybridConcurrent, Identity, PixelShuffle1D/2D/3D, SyncBatchNorm
(one device) and SparseEmbedding (row_sparse weight and gradient)."""

import itertools
import warnings

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, nd
from ferrograd.base import MXNetError
from ferrograd.gluon import nn
from ferrograd.gluon.contrib import nn as cnn


def _pixel_shuffle_ref(x, factors):
    """out[n, c, d1·f1 + i1, ...] = x[n, c·∏f + flat(i1, ...), d1, ...], element by element."""
    n, cf = x.shape[:2]
    c = cf // int(np.prod(factors))
    spatial = tuple(d * f for d, f in zip(x.shape[2:], factors, strict=True))
    out = np.zeros((n, c) + spatial, x.dtype)
    for idx in itertools.product(*(range(s) for s in x.shape)):
        ch, pos = idx[1], idx[2:]
        c_out, rest = divmod(ch, int(np.prod(factors)))
        offs = []
        for f in reversed(factors):
            rest, i = divmod(rest, f)
            offs.append(i)
        offs = offs[::-1]
        dst = tuple(p * f + i for p, f, i in zip(pos, factors, offs, strict=True))
        out[(idx[0], c_out) + dst] = x[idx]
    return out


@pytest.mark.parametrize("cls, factor, shape", [
    (cnn.PixelShuffle1D, 3, (2, 6, 4)),
    (cnn.PixelShuffle2D, (2, 3), (2, 12, 2, 3)),
    (cnn.PixelShuffle2D, 2, (1, 8, 3, 2)),
    (cnn.PixelShuffle3D, (2, 1, 2), (1, 8, 2, 3, 2)),
])
def test_pixel_shuffle_moves_channel_blocks_into_space(cls, factor, shape):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    k = len(shape) - 2
    factors = (factor,) * k if isinstance(factor, int) else factor
    want = _pixel_shuffle_ref(x, factors)
    layer = cls(factor)
    np.testing.assert_array_equal(layer(nd.array(x)).asnumpy(), want)
    layer.hybridize()
    np.testing.assert_array_equal(layer(nd.array(x)).asnumpy(), want)
    # A permutation: the gradient of sum(w * y) is w moved back.
    w = np.random.default_rng(0).standard_normal(want.shape).astype(np.float32)
    xa = nd.array(x)
    xa.attach_grad()
    with autograd.record():
        y = cls(factor)(xa)
    y.backward(nd.array(w))
    back = np.zeros_like(x)
    flat_src = _pixel_shuffle_ref(np.arange(x.size, dtype=np.float64).reshape(shape), factors)
    back.reshape(-1)[flat_src.reshape(-1).astype(np.int64)] = w.reshape(-1)
    np.testing.assert_array_equal(xa.grad.asnumpy(), back)


def test_pixel_shuffle_repr_and_bad_factor():
    assert repr(cnn.PixelShuffle1D(3)) == "PixelShuffle1D(3)"
    assert repr(cnn.PixelShuffle2D(2)) == "PixelShuffle2D((2, 2))"
    with pytest.raises(MXNetError, match="PixelShuffle2D.*factor"):
        cnn.PixelShuffle2D((2, 2, 2))
    with pytest.raises(MXNetError):
        cnn.PixelShuffle2D(2)(nd.ones((1, 6, 2, 2)))  # 6 channels do not split into 4 blocks


@pytest.mark.parametrize("hybrid", [False, True])
def test_concurrent_concatenates_children_outputs(hybrid):
    block = cnn.HybridConcurrent(axis=1) if hybrid else cnn.Concurrent(axis=1)
    with block.name_scope():
        block.add(nn.Dense(2, use_bias=False, weight_initializer=mx.init.One()))
        block.add(nn.Dense(3, use_bias=False, weight_initializer=mx.init.Constant(2.0)))
        block.add(cnn.Identity())
    block.initialize()
    if hybrid:
        block.hybridize()
    x = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    s = x.sum(axis=1, keepdims=True)
    want = np.concatenate([np.repeat(s, 2, 1), np.repeat(2 * s, 3, 1), x], axis=1)
    np.testing.assert_allclose(block(nd.array(x)).asnumpy(), want)
    assert block.prefix.startswith("hybridconcurrent" if hybrid else "concurrent")


def test_sync_batchnorm_is_batchnorm_on_one_device():
    with pytest.warns(UserWarning, match="num_devices"):
        layer = cnn.SyncBatchNorm(in_channels=3)
    assert sorted(layer.collect_params()) == sorted(
        f"{layer.prefix}{n}" for n in ("gamma", "beta", "running_mean", "running_var"))
    layer.initialize()
    x = np.random.default_rng(1).standard_normal((4, 3, 2, 2)).astype(np.float32)
    with autograd.record():
        y = layer(nd.array(x))
    mean, var = x.mean(axis=(0, 2, 3), keepdims=True), x.var(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(y.asnumpy(), (x - mean) / np.sqrt(var + 1e-5), rtol=1e-4, atol=1e-5)
    with pytest.raises(MXNetError, match="num_devices=2"):
        cnn.SyncBatchNorm(num_devices=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cnn.SyncBatchNorm(num_devices=1)


def test_sparse_embedding_looks_up_rows_and_gives_a_row_sparse_gradient():
    layer = cnn.SparseEmbedding(6, 3)
    assert isinstance(layer, mx.gluon.Block) and not isinstance(layer, mx.gluon.HybridBlock)
    assert repr(layer) == "SparseEmbedding(6 -> 3, float32)"
    assert (layer.weight.stype, layer.weight.grad_stype) == ("row_sparse", "row_sparse")
    layer.initialize(mx.init.Uniform(1.0))
    ids = nd.array([[1, 4], [4, 0]])
    with pytest.raises(RuntimeError, match="no Trainer"):
        layer(ids)
    trainer = mx.gluon.Trainer(layer.collect_params(), "sgd", {"learning_rate": 0.5})
    table = layer.weight.row_sparse_data(nd.arange(6)).asnumpy()
    v = np.random.default_rng(3).uniform(-1, 1, (2, 2, 3)).astype(np.float32)
    with autograd.record():
        y = layer(ids)
        loss = (y * nd.array(v)).sum()
    loss.backward()
    idx = ids.asnumpy().astype(int)
    np.testing.assert_allclose(y.asnumpy(), table[idx], rtol=0, atol=0)
    grad = layer.weight.grad()
    assert grad.stype == "row_sparse"
    assert grad.indices.asnumpy().tolist() == [0, 1, 4]
    want = np.zeros((6, 3), np.float32)
    np.add.at(want, idx, v)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-6)
    trainer.step(1)
    after = layer.weight.row_sparse_data(nd.arange(6)).asnumpy()
    np.testing.assert_allclose(after, table - 0.5 * want, rtol=1e-6, atol=1e-6)


def test_sparse_embedding_dtype_and_initializer():
    layer = cnn.SparseEmbedding(4, 2, dtype="float64", weight_initializer=mx.init.One())
    assert repr(layer) == "SparseEmbedding(4 -> 2, float64)"
    layer.initialize()
    mx.gluon.Trainer(layer.collect_params(), "sgd")
    y = layer(nd.array([3, 1]))
    assert y.dtype == np.float64 and y.shape == (2, 2)
    np.testing.assert_array_equal(y.asnumpy(), np.ones((2, 2)))
