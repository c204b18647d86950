"""Inference fusion of Convolution → BatchNorm → relu/clip in the executor (issue 18 item 3).

A bound executor's ``forward(is_train=False)`` runs such chains as one step: the convolution's
planes get BatchNorm's inference affine and the activation right after they are written. The
results must be those of the separate ops (bitwise: the same expressions in the same dtype),
training forwards and gradients must not change, and chains whose intermediate values are
needed elsewhere must run unfused. ``FERROGRAD_INFERENCE_FUSION=0`` (read when binding) turns
the fusion off: the reference executor here.
"""


import ferrograd as mx
import numpy as np
import pytest
from conftest import profiled_ops
from ferrograd import sym

CTX = mx.cpu()
FUSED_OP = "_fused_Convolution_BatchNorm"


def conv_bn(x, name, act, channels=6, kernel=(3, 3), pad=(1, 1), stride=(1, 1), num_group=1,
            fix_gamma=False, no_bias=True):
    y = sym.Convolution(x, num_filter=channels, kernel=kernel, pad=pad, stride=stride,
                        num_group=num_group, no_bias=no_bias, name=f"{name}_conv")
    y = sym.BatchNorm(y, fix_gamma=fix_gamma, eps=1e-3, name=f"{name}_bn")
    if act == "relu":
        y = sym.Activation(y, act_type="relu", name=f"{name}_relu")
    elif act == "relu6":
        y = sym.clip(y, a_min=0.0, a_max=6.0, name=f"{name}_relu6")
    return y


def small_net():
    """Conv-BN-ReLU, a depthwise Conv-BN-clip, a Conv-BN into an add (no activation), a head."""
    x = sym.var("data")
    a = conv_bn(x, "c1", "relu", channels=6, no_bias=False)
    b = conv_bn(a, "dw", "relu6", channels=6, num_group=6, fix_gamma=True)
    c = conv_bn(b, "pw", None, channels=6, kernel=(1, 1), pad=(0, 0))
    y = a + c
    y = sym.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type="max")
    return sym.FullyConnected(sym.flatten(y), num_hidden=5, name="fc")


def bind(net, monkeypatch, fused, dtype="float32", grad_req="null", shape=(3, 4, 10, 10), seed=0):
    monkeypatch.setenv("FERROGRAD_INFERENCE_FUSION", "1" if fused else "0")
    exe = net.simple_bind(CTX, grad_req=grad_req, type_dict={"data": dtype}, data=shape)
    rng = np.random.default_rng(seed)
    for arr in exe.arg_dict.values():
        arr[:] = rng.standard_normal(arr.shape).astype(dtype) * 0.5
    for name, arr in exe.aux_dict.items():
        if name.endswith("moving_var"):
            arr[:] = rng.uniform(0.2, 3.0, arr.shape).astype(dtype)
        else:
            arr[:] = rng.standard_normal(arr.shape).astype(dtype)
    return exe


def numpy_chain(x, w, b, gamma, beta, mean, var, eps, fix_gamma, act):
    """The reference of one Conv(3x3, pad 1) → BatchNorm → act, in float64."""
    n, c, h, wd = x.shape
    f = w.shape[0]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, f, h, wd))
    for i in range(3):
        for j in range(3):
            y += np.einsum("nchw,fc->nfhw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    y += b[None, :, None, None]
    g = np.ones_like(gamma) if fix_gamma else gamma
    y = (y - mean[None, :, None, None]) * (g / np.sqrt(var + eps))[None, :, None, None] \
        + beta[None, :, None, None]
    return np.maximum(y, 0) if act == "relu" else y


@pytest.mark.parametrize("act", ["relu", None])
def test_fused_chain_matches_numpy(monkeypatch, act):
    net = conv_bn(sym.var("data"), "c", act, channels=5, no_bias=False)
    exe = bind(net, monkeypatch, fused=True, dtype="float64", shape=(2, 3, 7, 6))
    counts = profiled_ops(lambda: exe.forward(is_train=False))
    assert counts.get(FUSED_OP) == 1 and "BatchNorm" not in counts and "Convolution" not in counts
    a = {k: v.asnumpy() for k, v in exe.arg_dict.items()}
    m = {k: v.asnumpy() for k, v in exe.aux_dict.items()}
    want = numpy_chain(a["data"], a["c_conv_weight"], a["c_conv_bias"], a["c_bn_gamma"],
                       a["c_bn_beta"], m["c_bn_moving_mean"], m["c_bn_moving_var"], 1e-3, False,
                       act)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_inference_equals_unfused_bitwise(monkeypatch, dtype):
    net = small_net()
    fused = bind(net, monkeypatch, fused=True, dtype=dtype)
    plain = bind(net, monkeypatch, fused=False, dtype=dtype)
    counts = profiled_ops(lambda: fused.forward(is_train=False))
    assert counts.get(FUSED_OP) == 3
    assert "BatchNorm" not in counts and "clip" not in counts and "Activation" not in counts
    plain_counts = profiled_ops(lambda: plain.forward(is_train=False))
    assert FUSED_OP not in plain_counts and plain_counts["BatchNorm"] == 3
    got, want = fused.outputs[0].asnumpy(), plain.outputs[0].asnumpy()
    assert got.dtype == np.dtype(dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(got, want)  # the same expressions: bitwise equal
    # A second forward with new data and statistics still matches (nothing is cached).
    for exe in (fused, plain):
        exe.arg_dict["data"][:] = exe.arg_dict["data"] * -1.5
        exe.aux_dict["dw_bn_moving_var"][:] = exe.aux_dict["dw_bn_moving_var"] * 2
        exe.forward(is_train=False)
    np.testing.assert_array_equal(fused.outputs[0].asnumpy(), plain.outputs[0].asnumpy())


def test_training_executor_keeps_the_ops_and_the_gradients(monkeypatch):
    net = sym.SoftmaxOutput(small_net(), sym.var("softmax_label"), name="softmax")
    shape = (3, 4, 10, 10)
    results = []
    for fused in (True, False):
        exe = bind(net, monkeypatch, fused=fused, grad_req="write", shape=shape)
        exe.arg_dict["softmax_label"][:] = np.array([0, 3, 1], np.float32)
        # Its backward reads the chain's intermediates: inference runs the ops one by one too.
        counts = profiled_ops(lambda e=exe: e.forward(is_train=False))
        # (BatchNorm → activation pairs run as one training-fusion op: test_training_fusion.py.)
        kinds = ("BatchNorm", "_fused_BatchNorm_relu", "_fused_BatchNorm_clip")
        batch_norms = sum(n for op, n in counts.items() if op in kinds)
        assert FUSED_OP not in counts and batch_norms == 3
        infer = exe.outputs[0].asnumpy()
        exe.forward(is_train=True)
        exe.backward()
        grads = {k: v.asnumpy() for k, v in exe.grad_dict.items() if v is not None}
        aux = {k: v.asnumpy() for k, v in exe.aux_dict.items()}
        results.append((infer, exe.outputs[0].asnumpy(), grads, aux))
    (i1, o1, g1, a1), (i2, o2, g2, a2) = results
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(o1, o2)
    assert g1.keys() == g2.keys() and len(g1) > 10
    for k in g1:
        np.testing.assert_array_equal(g1[k], g2[k], err_msg=k)
        if k not in ("dw_bn_gamma", "softmax_label"):  # fix_gamma; a label: zero gradients
            assert np.abs(g1[k]).sum() > 0, k
    for k in a1:  # the moving statistics were updated identically by the training backward
        np.testing.assert_array_equal(a1[k], a2[k], err_msg=k)


def test_inference_executor_sharing_a_training_one_is_fused_and_exact(monkeypatch):
    net = sym.SoftmaxOutput(small_net(), sym.var("softmax_label"), name="softmax")
    monkeypatch.setenv("FERROGRAD_INFERENCE_FUSION", "1")
    train = bind(net, monkeypatch, fused=True, grad_req="write")
    train.arg_dict["softmax_label"][:] = np.array([2, 0, 4], np.float32)
    infer = net.simple_bind(CTX, grad_req="null", shared_exec=train, data=(3, 4, 10, 10))
    monkeypatch.setenv("FERROGRAD_INFERENCE_FUSION", "0")
    plain = net.simple_bind(CTX, grad_req="null", shared_exec=train, data=(3, 4, 10, 10))
    for _ in range(2):  # inference follows the training updates of the shared parameters
        train.forward(is_train=True)
        train.backward()
        for k, g in train.grad_dict.items():
            if g is not None and k not in ("data", "softmax_label"):
                train.arg_dict[k][:] = train.arg_dict[k] - 0.1 * g
        counts = profiled_ops(lambda: infer.forward(is_train=False))
        assert counts.get(FUSED_OP) == 3
        plain.forward(is_train=False)
        np.testing.assert_array_equal(infer.outputs[0].asnumpy(), plain.outputs[0].asnumpy())


def test_chains_with_shared_intermediates_run_unfused(monkeypatch):
    x = sym.var("data")
    conv = sym.Convolution(x, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv")
    bn = sym.BatchNorm(conv, fix_gamma=False, name="bn")
    relu = sym.Activation(bn, act_type="relu", name="relu")
    cases = {
        # The convolution's output is also a head: no fusion at all.
        "conv output read twice": (sym.Group([relu, conv]), 0),
        # BatchNorm's output read by the activation and a head: conv+BN fused, relu separate.
        "bn output read twice": (sym.Group([relu, bn]), 1),
        # A sigmoid is not fused: conv+BN fused, then the activation op.
        "other activation": (sym.Activation(bn, act_type="sigmoid"), 1),
        # The activation is a head: everything fused.
        "plain chain": (relu, 1),
    }
    for what, (net, n_fused) in cases.items():
        fused = bind(net, monkeypatch, fused=True, shape=(2, 3, 6, 6))
        plain = bind(net, monkeypatch, fused=False, shape=(2, 3, 6, 6))
        counts = profiled_ops(lambda e=fused: e.forward(is_train=False))
        assert counts.get(FUSED_OP, 0) == n_fused, what
        plain.forward(is_train=False)
        assert len(fused.outputs) == len(plain.outputs)
        for a, b in zip(fused.outputs, plain.outputs, strict=True):
            np.testing.assert_array_equal(a.asnumpy(), b.asnumpy(), err_msg=what)


def test_output_mean_var_chain_keeps_its_statistics(monkeypatch):
    x = sym.var("data")
    conv = sym.Convolution(x, num_filter=4, kernel=(3, 3), pad=(1, 1), name="conv")
    bn = sym.BatchNorm(conv, fix_gamma=False, output_mean_var=True, name="bn")
    net = sym.Group([sym.Activation(bn[0], act_type="relu"), bn[1], bn[2]])
    fused = bind(net, monkeypatch, fused=True, shape=(2, 3, 5, 5))
    plain = bind(net, monkeypatch, fused=False, shape=(2, 3, 5, 5))
    counts = profiled_ops(lambda: fused.forward(is_train=False))
    assert FUSED_OP not in counts  # the statistics outputs are heads
    plain.forward(is_train=False)
    for a, b in zip(fused.outputs, plain.outputs, strict=True):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_a_monitor_sees_every_output_inside_a_fused_chain(monkeypatch):
    net = small_net()
    exe = bind(net, monkeypatch, fused=True)
    reference = bind(net, monkeypatch, fused=False)
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.__setitem__(name, arr.asnumpy()))
    exe.forward(is_train=False)
    reference.forward(is_train=False)
    for name in ("c1_conv_output", "c1_bn_output", "dw_bn_output", "pw_bn_output"):
        assert name in seen, sorted(seen)
    np.testing.assert_array_equal(seen["fc_output"], reference.outputs[0].asnumpy())
    # Without the monitor the executor runs fused again, with the same result.
    exe.set_monitor_callback(None)
    exe.forward(is_train=False)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), reference.outputs[0].asnumpy())
