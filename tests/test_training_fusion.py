"""Training fusion of BatchNorm → relu/clip in the executor (issue 18 item 3).

When an executor is bound with gradients, each ``BatchNorm → Activation(relu) | clip`` pair whose
BatchNorm output only the activation reads runs as one forward step
(``_fused_BatchNorm_relu``/``_clip``) and one backward step, which recomputes the activation's
mask from the data instead of reading a saved BatchNorm output. The results must be the separate
ops' bits: outputs, every gradient and the moving statistics. ``FERROGRAD_TRAINING_FUSION=0``
(read when binding) turns the fusion off: the reference executor here.
"""

import ferrograd as mx
import numpy as np
import pytest
from conftest import profiled_ops
from ferrograd import sym

CTX = mx.cpu()


def bn(x, name, fix_gamma=False):
    return sym.BatchNorm(x, fix_gamma=fix_gamma, eps=1e-3, momentum=0.8, name=f"{name}_bn")


def net():
    """BN→relu, BN→ReLU6, BN→clip with bounds float32 cannot hold, and a BN whose output two
    ops read (not fused), between convolutions, ending in a loss head."""
    x = sym.var("data")
    a = sym.Convolution(x, num_filter=6, kernel=(3, 3), pad=(1, 1), name="c1")
    a = sym.Activation(bn(a, "c1"), act_type="relu", name="c1_relu")
    b = sym.Convolution(a, num_filter=6, kernel=(3, 3), pad=(1, 1), num_group=6, no_bias=True,
                        name="dw")
    b = sym.clip(bn(b, "dw", fix_gamma=True), a_min=0.0, a_max=6.0, name="dw_relu6")
    c = sym.Convolution(b, num_filter=6, kernel=(1, 1), name="pw")
    c = sym.clip(bn(c, "pw"), a_min=-0.2, a_max=0.3, name="pw_clip")
    d = bn(c, "shared")
    d = sym.Activation(d, act_type="relu", name="shared_relu") + d
    y = sym.Pooling(d + a, kernel=(2, 2), stride=(2, 2), pool_type="avg")
    y = sym.FullyConnected(sym.flatten(y), num_hidden=5, name="fc")
    return sym.SoftmaxOutput(y, name="softmax")


def bind(symbol, monkeypatch, fused, dtype="float32", shape=(4, 3, 8, 8), seed=0, **kw):
    monkeypatch.setenv("FERROGRAD_TRAINING_FUSION", "1" if fused else "0")
    exe = symbol.simple_bind(CTX, grad_req="write", type_dict={"data": dtype}, data=shape, **kw)
    rng = np.random.default_rng(seed)
    for name, arr in exe.arg_dict.items():
        if name.endswith("label"):
            arr[:] = rng.integers(0, 5, arr.shape).astype(dtype)
        else:
            arr[:] = rng.standard_normal(arr.shape).astype(dtype) * 0.7
    for name, arr in exe.aux_dict.items():
        arr[:] = rng.uniform(0.5, 2.0, arr.shape).astype(dtype) if name.endswith("var") else 0.0
    return exe


def state(exe):
    out = {"out": exe.outputs[0].asnumpy()}
    out.update({f"grad:{k}": v.asnumpy() for k, v in exe.grad_dict.items() if v is not None})
    out.update({f"aux:{k}": v.asnumpy() for k, v in exe.aux_dict.items()})
    return out


def step(exe):
    exe.forward(is_train=True)
    exe.backward()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_training_steps_are_the_unfused_bits(monkeypatch, dtype):
    fused, plain = bind(net(), monkeypatch, True, dtype), bind(net(), monkeypatch, False, dtype)
    for _ in range(2):  # the second step starts from moving statistics the first updated
        step(fused)
        step(plain)
        a, b = state(fused), state(plain)
        assert a.keys() == b.keys()
        for k in a:
            assert a[k].dtype == np.dtype(dtype)
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        assert np.abs(a["grad:data"]).max() > 0
    # A prediction-mode forward of the training-bound executor (moving statistics) as well.
    fused.forward(is_train=False)
    plain.forward(is_train=False)
    np.testing.assert_array_equal(fused.outputs[0].asnumpy(), plain.outputs[0].asnumpy())


def test_which_pairs_fuse(monkeypatch):
    fused, plain = bind(net(), monkeypatch, True), bind(net(), monkeypatch, False)
    ops = profiled_ops(lambda: step(fused))
    assert ops["_fused_BatchNorm_relu"] == 1  # c1; shared's output has two readers
    assert ops["_fused_BatchNorm_clip"] == 2  # dw, pw
    assert ops["_backward_fused_BatchNorm_relu"] == 1
    assert ops["_backward_fused_BatchNorm_clip"] == 2
    assert ops["BatchNorm"] == 1 and ops["_backward_BatchNorm"] == 1
    assert ops["Activation"] == 1 and "clip" not in ops
    ops = profiled_ops(lambda: step(plain))
    assert not any(k.startswith("_fused") or "fused" in k for k in ops)
    assert ops["BatchNorm"] == 4 and ops["clip"] == 2


def test_no_fusion_without_gradients_or_when_the_output_is_a_head(monkeypatch):
    x = sym.var("data")
    y = bn(x, "b")
    relu = sym.Activation(y, act_type="relu", name="r")
    monkeypatch.setenv("FERROGRAD_TRAINING_FUSION", "1")
    # Inference-only binding: nothing to fuse for training.
    exe = relu.simple_bind(CTX, grad_req="null", data=(2, 3, 4))
    assert "_fused_BatchNorm_relu" not in profiled_ops(lambda: exe.forward(is_train=True))
    # BatchNorm's output is a head of the group: it must be written.
    both = sym.Group([relu, y])
    exe = both.simple_bind(CTX, grad_req="write", data=(2, 3, 4))
    exe.arg_dict["data"][:] = np.arange(24.0).reshape(2, 3, 4)
    ops = profiled_ops(lambda: exe.forward(is_train=True))
    assert "_fused_BatchNorm_relu" not in ops and ops["BatchNorm"] == 1


def numpy_bn_train(x, gamma, beta, eps):
    mean = x.mean(axis=(0, 2))
    var = x.var(axis=(0, 2))
    istd = 1.0 / np.sqrt(var + eps)
    xhat = (x - mean[None, :, None]) * istd[None, :, None]
    return xhat * gamma[None, :, None] + beta[None, :, None], xhat, istd


def test_gradient_against_numpy_with_values_on_the_bounds(monkeypatch):
    """y = clip(BatchNorm(x), 0, 6) · w summed; x has channel values whose normalised value is
    exactly 0 (beta 0), where clip passes the gradient (bounds included) and relu does not."""
    x = np.array([[[-1.0, 0.0, 1.0, 2.0], [3.0, 3.0, 5.0, 1.0]],
                  [[0.0, -2.0, 0.0, 0.0], [3.0, 2.0, 4.0, 3.0]]])  # channel means 0 and 3, exactly
    gamma, beta, eps = np.array([1.5, 0.5]), np.array([0.0, 0.0]), 1e-3
    w = np.random.default_rng(3).standard_normal(x.shape)
    for act, lo, hi in [("clip", 0.0, 6.0), ("relu", 0.0, np.inf)]:
        data = sym.var("data")
        y = sym.BatchNorm(data, fix_gamma=False, eps=eps, name="bn")
        y = sym.clip(y, a_min=lo, a_max=hi) if act == "clip" else sym.Activation(y, act_type="relu")
        loss = sym.MakeLoss(sym.sum(y * sym.var("w")))
        monkeypatch.setenv("FERROGRAD_TRAINING_FUSION", "1")
        reqs = {"data": "write", "bn_gamma": "write", "bn_beta": "write", "w": "null"}
        exe = loss.simple_bind(CTX, grad_req=reqs, type_dict={"data": "float64", "w": "float64"},
                               data=x.shape, w=x.shape)
        exe.arg_dict["data"][:] = x
        exe.arg_dict["w"][:] = w
        exe.arg_dict["bn_gamma"][:] = gamma
        exe.arg_dict["bn_beta"][:] = beta
        ops = profiled_ops(lambda: step(exe))  # noqa: B023 (called at once)
        assert ops[f"_backward_fused_BatchNorm_{act}"] == 1

        t, xhat, istd = numpy_bn_train(x, gamma, beta, eps)
        assert np.sum(t == 0.0) == 8  # the values equal to their channel's mean
        mask = (t >= lo) & (t <= hi) if act == "clip" else t > 0
        g = w * mask
        m = x.shape[0] * x.shape[2]
        dgamma = (g * xhat).sum(axis=(0, 2))
        dbeta = g.sum(axis=(0, 2))
        gh = g * gamma[None, :, None]
        dx = istd[None, :, None] / m * (m * gh - gh.sum(axis=(0, 2))[None, :, None]
                                         - xhat * (gh * xhat).sum(axis=(0, 2))[None, :, None])
        grads = {k: v.asnumpy() for k, v in exe.grad_dict.items() if v is not None}
        np.testing.assert_allclose(grads["bn_gamma"], dgamma, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(grads["bn_beta"], dbeta, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(grads["data"], dx, rtol=1e-9, atol=1e-12)


def test_monitor_sees_every_output_as_unfused(monkeypatch):
    """A monitor sees the fused pairs' BatchNorm outputs too (recomputed, the same bits)."""
    seen, symbol = {}, net()
    for fused in (True, False):
        exe = bind(symbol, monkeypatch, fused)
        got = seen[fused] = {}
        exe.set_monitor_callback(lambda name, arr, got=got: got.setdefault(name, arr.asnumpy()))
        exe.forward(is_train=True)
    assert "c1_bn_output" in seen[True] and "dw_bn_output" in seen[True]
    assert [k for k in seen[True] if k.endswith("_output")] == \
        [k for k in seen[False] if k.endswith("_output")]
    for k, v in seen[False].items():
        np.testing.assert_array_equal(seen[True][k], v, err_msg=k)


def test_hybridized_gluon_trains_as_imperative():
    """A hybridized Conv-BN-ReLU block (fused executor) and the same block run imperatively (the
    tape, separate ops) take the same SGD steps, bit for bit."""
    from ferrograd.gluon import nn

    def build():
        b = nn.HybridSequential()
        b.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
              nn.Conv2D(4, 1), nn.BatchNorm(), nn.Dense(3))
        b.initialize(mx.init.Xavier(rnd_type="gaussian"))
        return b

    a, b = build(), build()
    x = mx.nd.array(np.random.default_rng(1).standard_normal((5, 2, 6, 6)))
    a(x)
    b(x)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values(), strict=True):
        pb.set_data(pa.data().copy())
    init = {k: p.data().asnumpy() for k, p in a.collect_params().items()}
    b.hybridize()
    ta = mx.gluon.Trainer(a.collect_params(), "sgd", {"learning_rate": 0.01})
    tb = mx.gluon.Trainer(b.collect_params(), "sgd", {"learning_rate": 0.01})
    for _ in range(3):
        for blk, tr in [(a, ta), (b, tb)]:
            with mx.autograd.record():
                loss = (blk(x) ** 2).mean()
            loss.backward()
            tr.step(5)
    moved = 0
    pairs = zip(a.collect_params().items(), b.collect_params().items(), strict=True)
    for (na, pa), (nb, pb) in pairs:
        va, vb = pa.data().asnumpy(), pb.data().asnumpy()
        np.testing.assert_array_equal(va, vb, err_msg=f"{na}/{nb}")
        moved += not np.array_equal(va, init[na])
    assert moved >= 10  # weights, biases, gammas, betas and running statistics all moved

    def hybrid_step():
        with mx.autograd.record():
            loss = (b(x) ** 2).mean()
        loss.backward()

    ops = profiled_ops(hybrid_step)
    assert ops["_fused_BatchNorm_relu"] == 1 and ops["_backward_fused_BatchNorm_relu"] == 1
