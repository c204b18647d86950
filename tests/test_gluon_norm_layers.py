"""gluon.nn BatchNorm, LayerNorm, InstanceNorm and Embedding against NumPy references."""

import ferrograd as mx
import numpy as np
from ferrograd.gluon import nn

EPS = 1e-5


def test_batchnorm_training_inference_and_running_stats():
    bn = nn.BatchNorm(momentum=0.8)
    bn.initialize()
    x_np = np.random.RandomState(1).randn(6, 3, 2).astype(np.float32)
    x = mx.nd.array(x_np)
    with mx.autograd.record():
        y = bn(x)
    y.backward()  # folds the batch statistics into the running ones (as MXNet does)
    assert bn.gamma.shape == (3,) and bn.running_var.shape == (3,)
    mean = x_np.mean(axis=(0, 2))
    var = x_np.var(axis=(0, 2))
    expect = (x_np - mean[None, :, None]) / np.sqrt(var[None, :, None] + EPS)
    np.testing.assert_allclose(y.asnumpy(), expect, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(), 0.2 * mean, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(bn.running_var.data().asnumpy(), 0.8 + 0.2 * var, rtol=1e-4)
    # inference uses the running statistics
    rm, rv = 0.2 * mean, 0.8 + 0.2 * var
    np.testing.assert_allclose(
        bn(x).asnumpy(), (x_np - rm[None, :, None]) / np.sqrt(rv[None, :, None] + EPS),
        rtol=1e-4, atol=1e-4)
    assert bn.running_mean.grad_req == "null"


def test_batchnorm_gamma_beta_gradients():
    bn = nn.BatchNorm(in_channels=2)
    bn.initialize()
    x_np = np.array([[1.0, 2.0], [3.0, 6.0], [5.0, 1.0]], dtype=np.float32)
    head = np.array([[1.0, 0.5], [2.0, -1.0], [0.0, 3.0]], dtype=np.float32)
    with mx.autograd.record():
        y = bn(mx.nd.array(x_np))
    y.backward(mx.nd.array(head))
    x_hat = (x_np - x_np.mean(0)) / np.sqrt(x_np.var(0) + EPS)
    np.testing.assert_allclose(bn.gamma.grad().asnumpy(), (head * x_hat).sum(0), rtol=1e-4)
    np.testing.assert_allclose(bn.beta.grad().asnumpy(), head.sum(0), rtol=1e-6)


def test_batchnorm_without_scale_fixes_gamma():
    bn = nn.BatchNorm(scale=False, in_channels=2)
    assert bn.gamma.grad_req == "null"
    bn.initialize()
    bn.gamma.set_data(mx.nd.array([5.0, 5.0]))
    x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    with mx.autograd.record():
        y = bn(x)
    np.testing.assert_allclose(np.abs(y.asnumpy()), np.ones((2, 2)), rtol=1e-4)


def test_layernorm_and_instancenorm_values():
    x_np = np.random.RandomState(2).randn(2, 3, 4).astype(np.float32)
    ln = nn.LayerNorm()
    ln.initialize()
    ln_out = ln(mx.nd.array(x_np)).asnumpy()
    assert ln.gamma.shape == (4,)
    ref = (x_np - x_np.mean(-1, keepdims=True)) / np.sqrt(x_np.var(-1, keepdims=True) + EPS)
    np.testing.assert_allclose(ln_out, ref, rtol=1e-4, atol=1e-4)

    inorm = nn.InstanceNorm(in_channels=3, beta_initializer=mx.init.Constant(0.5))
    inorm.initialize()
    ref = (x_np - x_np.mean(2, keepdims=True)) / np.sqrt(x_np.var(2, keepdims=True) + EPS) + 0.5
    np.testing.assert_allclose(inorm(mx.nd.array(x_np)).asnumpy(), ref, rtol=1e-4, atol=1e-4)

    last = nn.InstanceNorm(axis=2)
    last.initialize()
    moved = np.swapaxes(x_np, 1, 2)
    ref = (moved - moved.mean(2, keepdims=True)) / np.sqrt(moved.var(2, keepdims=True) + EPS)
    np.testing.assert_allclose(last(mx.nd.array(x_np)).asnumpy(), np.swapaxes(ref, 1, 2),
                               rtol=1e-4, atol=1e-4)
    assert last.gamma.shape == (4,)


def test_norm_reprs_and_names():
    with mx.name.NameManager():
        assert repr(nn.BatchNorm()) == ("BatchNorm(axis=1, eps=1e-05, momentum=0.9, "
                                        "fix_gamma=False, use_global_stats=False, "
                                        "in_channels=None)")
        assert repr(nn.LayerNorm()) == ("LayerNorm(eps=1e-05, axis=-1, center=True, scale=True, "
                                        "in_channels=0)")
        assert repr(nn.InstanceNorm(in_channels=2)) == (
            "InstanceNorm(eps=1e-05, axis=1, center=True, scale=False, in_channels=2)")
        bn = nn.BatchNorm()
        assert list(bn.collect_params().keys()) == [
            "batchnorm1_gamma", "batchnorm1_beta", "batchnorm1_running_mean",
            "batchnorm1_running_var"]


def test_embedding_lookup_and_gradient():
    emb = nn.Embedding(5, 3)
    assert repr(emb) == "Embedding(5 -> 3, float32)"
    emb.initialize()
    table = emb.weight.data().asnumpy()
    idx = mx.nd.array([[0, 4], [4, 2]])
    with mx.autograd.record():
        out = emb(idx)
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), table[[[0, 4], [4, 2]]])
    # each row's gradient counts how often it was looked up
    counts = np.array([1, 0, 1, 0, 2], dtype=np.float32)
    np.testing.assert_allclose(emb.weight.grad().asnumpy(), np.repeat(counts[:, None], 3, 1))
    sparse = nn.Embedding(5, 3, sparse_grad=True)
    sparse.initialize()
    with mx.autograd.record():
        out = sparse(idx)
    out.backward()
    grad = sparse.weight.grad()
    assert grad.stype == "row_sparse" and grad.indices.asnumpy().tolist() == [0, 2, 4]
    np.testing.assert_allclose(grad.asnumpy(), np.repeat(counts[:, None], 3, 1))
