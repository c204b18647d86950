"""Task ops20's operators from Python: the sequence ops, hard_sigmoid, the logical helpers,
all_finite / multi_all_finite, depth_to_space / space_to_depth, moments and GroupNorm, against
NumPy references written here (and MXNet 1.9.1's numbers from ``fixtures/mxnet_ops20.json`` where
its conventions matter), finite differences, symbolic inference and bad inputs."""

import json
from pathlib import Path

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, nd, sym
from ferrograd.test_utils import check_numeric_gradient

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "mxnet_ops20.json").read_text())
RNG = np.random.default_rng(2020)


# --- sequence ops -------------------------------------------------------------------------------

def seq_index(axis, t, b):
    return (t, b) if axis == 0 else (b, t)


def np_sequence_mask(x, lengths, axis, value):
    out = x.copy()
    steps = x.shape[axis]
    for b, n in enumerate(np.trunc(lengths).astype(int)):
        for t in range(steps):
            if t >= n:
                out[seq_index(axis, t, b)] = value
    return out


def np_sequence_last(x, lengths, axis):
    picks = [x[seq_index(axis, int(n) - 1, b)] for b, n in enumerate(np.trunc(lengths))]
    return np.stack(picks)


def np_sequence_reverse(x, lengths):
    out = x.copy()
    for b, n in enumerate(np.trunc(lengths).astype(int)):
        out[:n, b] = x[:n, b][::-1]
    return out


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_sequence_mask_matches_numpy(axis, dtype):
    x = np.arange(40).reshape(5, 4, 2).astype(dtype) - 7
    batch = x.shape[1 - axis]
    lengths = np.array([0, 2.7, 9, -1, 3, 1][:batch], dtype=np.float32)
    got = nd.SequenceMask(nd.array(x, dtype=dtype), nd.array(lengths), use_sequence_length=True,
                          value=-2.5, axis=axis)
    want = np_sequence_mask(x, lengths, axis, np.array(-2.5).astype(dtype))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.asnumpy(), want)
    # Without lengths nothing is masked.
    np.testing.assert_array_equal(nd.SequenceMask(nd.array(x, dtype=dtype), axis=axis).asnumpy(), x)


@pytest.mark.parametrize("axis", [0, 1])
def test_sequence_last_matches_numpy(axis):
    x = RNG.normal(size=(5, 4, 3))
    batch = x.shape[1 - axis]
    lengths = np.array([1, 4, 2.5, 3, 4][:batch])
    got = nd.SequenceLast(nd.array(x, dtype="float64"), nd.array(lengths, dtype="int32"
                          if np.all(lengths == np.trunc(lengths)) else "float64"),
                          use_sequence_length=True, axis=axis)
    np.testing.assert_array_equal(got.asnumpy(), np_sequence_last(x, lengths, axis))
    full = nd.SequenceLast(nd.array(x), axis=axis).asnumpy()
    np.testing.assert_allclose(full, (x[-1] if axis == 0 else x[:, -1]), rtol=1e-6)


def test_sequence_reverse_matches_numpy():
    x = RNG.normal(size=(4, 3, 2))
    lengths = np.array([4, 0, 2.9])
    got = nd.SequenceReverse(nd.array(x), nd.array(lengths), use_sequence_length=True)
    np.testing.assert_allclose(got.asnumpy(), np_sequence_reverse(x, lengths), rtol=1e-6)
    np.testing.assert_allclose(nd.SequenceReverse(nd.array(x)).asnumpy(), x[::-1], rtol=1e-6)
    # 2-D data (no feature axes) works too.
    x2 = np.arange(12.0).reshape(4, 3)
    got = nd.SequenceReverse(nd.array(x2), nd.array([1, 3, 4]), use_sequence_length=True)
    np.testing.assert_array_equal(got.asnumpy(), np_sequence_reverse(x2, np.array([1, 3, 4])))


@pytest.mark.parametrize("name,axis", [("SequenceMask", 0), ("SequenceMask", 1),
                                       ("SequenceLast", 0), ("SequenceLast", 1),
                                       ("SequenceReverse", 0)])
def test_sequence_gradients_by_finite_differences(name, axis):
    data, lengths = sym.var("data"), sym.var("lengths")
    s = getattr(sym, name)(data, lengths, use_sequence_length=True, axis=axis)
    shape = (4, 3, 2) if axis == 0 else (3, 4, 2)
    loc = {"data": RNG.normal(size=shape), "lengths": np.array([1.0, 4.0, 2.0])}
    check_numeric_gradient(s, loc, grad_nodes=["data"], dtype=np.float64, numeric_eps=1e-4,
                           rtol=1e-5, atol=1e-7)


def test_sequence_gradients_route_the_head_gradient():
    x = nd.array(np.arange(24.0).reshape(4, 3, 2))
    lengths = nd.array([1, 3, 2])
    head = nd.array(RNG.normal(size=(4, 3, 2)))
    for name, expect in [
        ("SequenceMask", lambda h: np_sequence_mask(h, np.array([1, 3, 2]), 0, 0.0)),
        ("SequenceReverse", lambda h: np_sequence_reverse(h, np.array([1, 3, 2]))),
    ]:
        x.attach_grad()
        with autograd.record():
            y = getattr(nd, name)(x, lengths, use_sequence_length=True)
        y.backward(head)
        np.testing.assert_allclose(x.grad.asnumpy(), expect(head.asnumpy()), rtol=1e-6)
    x.attach_grad()
    head_last = nd.array(RNG.normal(size=(3, 2)))
    with autograd.record():
        y = nd.SequenceLast(x, lengths, use_sequence_length=True)
    y.backward(head_last)
    want = np.zeros((4, 3, 2))
    for b, n in enumerate([1, 3, 2]):
        want[n - 1, b] = head_last.asnumpy()[b]
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-6)


def test_sequence_symbol_inference():
    s = sym.SequenceMask(sym.var("d"), sym.var("l"), use_sequence_length=True, axis=1)
    assert s.list_arguments() == ["d", "l"]
    args, outs, _ = s.infer_shape(d=(3, 5, 2))
    assert args == [(3, 5, 2), (3,)] and outs == [(3, 5, 2)]
    assert sym.SequenceMask(sym.var("d")).list_arguments() == ["d"]
    _, outs, _ = sym.SequenceLast(sym.var("d"), sym.var("l"), use_sequence_length=True,
                                  axis=1).infer_shape(d=(3, 5, 2))
    assert outs == [(3, 2)]
    _, outs, _ = sym.SequenceLast(sym.var("d"), sym.var("l"), use_sequence_length=True,
                                  axis=1).infer_type(d=np.float64, l=np.int32)
    assert outs == [np.float64]


def test_sequence_bad_inputs():
    x = nd.ones((4, 3, 2))
    with pytest.raises(mx.base.MXNetError, match=r"SequenceMask.*sequence_length.*\(3,\).*\(2,\)"):
        nd.SequenceMask(x, nd.array([1, 2]), use_sequence_length=True)
    with pytest.raises(mx.base.MXNetError, match=r"SequenceLast.*rank 2.*\(4,\)"):
        nd.SequenceLast(nd.ones(4))
    with pytest.raises(mx.base.MXNetError, match=r"SequenceMask: axis must be 0 or 1, got 2"):
        nd.SequenceMask(x, nd.array([1, 2, 3, 4]), use_sequence_length=True, axis=2)
    with pytest.raises(mx.base.MXNetError, match=r"SequenceReverse: axis must be 0, got 1"):
        nd.SequenceReverse(x, nd.array([1, 2, 3, 4]), use_sequence_length=True, axis=1)
    with pytest.raises(mx.base.MXNetError, match=r"SequenceLast.*sequence_length\[2\] = 0"):
        nd.SequenceLast(x, nd.array([1, 2, 0]), use_sequence_length=True)
    with pytest.raises(mx.base.MXNetError, match=r"SequenceReverse.*sequence_length\[0\] = 5"):
        nd.SequenceReverse(x, nd.array([5, 2, 0]), use_sequence_length=True)
    with pytest.raises(mx.base.MXNetError, match=r"SequenceMask.*sequence_length"):
        nd.SequenceMask(x, use_sequence_length=True)


# --- hard_sigmoid, logical helpers, all_finite ----------------------------------------------------

@pytest.mark.parametrize("case", FIXTURE["hard_sigmoid"], ids=lambda c: f"a{c['alpha']}")
def test_hard_sigmoid_matches_mxnet(case):
    x = nd.array(case["x"], dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = nd.hard_sigmoid(x, alpha=case["alpha"], beta=case["beta"])
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), case["y"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(x.grad.asnumpy(), case["grad"], rtol=1e-12)


def test_hard_sigmoid_numpy_and_finite_differences():
    x = RNG.uniform(-4, 4, size=(3, 5)).astype(np.float32)
    got = nd.hard_sigmoid(nd.array(x)).asnumpy()
    np.testing.assert_allclose(got, np.clip(np.float32(0.2) * x + 0.5, 0, 1), rtol=1e-6, atol=1e-7)
    loc = {"x": np.array([[-2.0, -1.2, 0.3], [1.7, 2.2, 4.0]])}
    check_numeric_gradient(sym.hard_sigmoid(sym.var("x"), alpha=0.3, beta=0.4), loc,
                           dtype=np.float64, numeric_eps=1e-5, rtol=1e-6, atol=1e-8)
    with pytest.raises(mx.base.MXNetError, match=r"hard_sigmoid.*int32"):
        nd.hard_sigmoid(nd.array([1, 2], dtype="int32"))


def test_hard_sigmoid_second_derivative_is_zero():
    x = nd.array([-1.0, 0.5, 1.0])
    x.attach_grad()
    with autograd.record():
        y = nd.hard_sigmoid(x, alpha=0.25, beta=0.5)
        (dx,) = autograd.grad(y, [x], head_grads=nd.array([1.0, 2.0, 3.0]), create_graph=True)
    np.testing.assert_allclose(dx.asnumpy(), [0.25, 0.5, 0.75])
    dx.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [0, 0, 0])


@pytest.mark.parametrize("name,fn", [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                                     ("logical_xor", np.logical_xor)])
def test_logical_helpers(name, fn):
    a = np.array([[0.0, 1.0, 2.0, -0.5], [0.0, 0.0, 3.0, np.nan]])
    b = np.array([0.0, 3.0, 0.0, 1.0])
    op = getattr(nd, name)
    got = op(nd.array(a), nd.array(b))
    assert got.dtype == np.float32 and got.shape == (2, 4)
    np.testing.assert_array_equal(got.asnumpy(), fn(a != 0, b != 0).astype(np.float32))
    np.testing.assert_array_equal(op(nd.array(a), 0.0).asnumpy(), fn(a != 0, False))
    np.testing.assert_array_equal(op(1, nd.array(b)).asnumpy(), fn(True, b != 0))
    assert op(2, 0) == int(fn(True, False))
    ints = op(nd.array([0, 1, 2], dtype="int32"), nd.array([1, 1, 0], dtype="int32"))
    assert ints.dtype == np.int32
    with pytest.raises(mx.base.MXNetError):
        op(nd.array(b), nd.array([1.0, 2.0]))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_all_finite(dtype):
    for values, flag in [([1.0, -2.0], 1.0), ([1.0, np.inf], 0.0), ([np.nan], 0.0),
                         ([-np.inf, 0.0], 0.0), ([], 1.0)]:
        x = nd.array(np.array(values), dtype=dtype)
        for init in (True, False):
            out = nd.all_finite(x, init_output=init)
            assert out.dtype == np.float32 and out.shape == (1,)
            assert out.asnumpy()[0] == flag
        good = nd.ones((3,), dtype="float32")
        multi = nd.multi_all_finite(good, x, good, num_arrays=3)
        assert multi.shape == (1,) and multi.asnumpy()[0] == flag


def test_all_finite_bad_inputs_and_symbols():
    with pytest.raises(mx.base.MXNetError, match=r"all_finite.*int32"):
        nd.all_finite(nd.array([1, 2], dtype="int32"))
    with pytest.raises(mx.base.MXNetError, match=r"num_arrays=1 but 2 array"):
        nd.multi_all_finite(nd.ones(2), nd.ones(2))
    s = sym.multi_all_finite(sym.var("a"), sym.var("b"), num_arrays=2)
    _, outs, _ = s.infer_shape(a=(2, 3), b=(4,))
    assert outs == [(1,)]
    _, types, _ = s.infer_type(a=np.float64, b=np.float16)
    assert types == [np.float32]


# --- depth_to_space / space_to_depth, moments -----------------------------------------------

def np_depth_to_space(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // (b * b), h * b, w * b)


def np_space_to_depth(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


def test_depth_space_match_numpy_and_invert_each_other():
    x = RNG.normal(size=(2, 18, 2, 3))
    y = nd.depth_to_space(nd.array(x, dtype="float64"), block_size=3)
    np.testing.assert_array_equal(y.asnumpy(), np_depth_to_space(x, 3))
    z = nd.space_to_depth(y, block_size=3)
    np.testing.assert_array_equal(z.asnumpy(), x)
    np.testing.assert_array_equal(
        nd.space_to_depth(nd.array(x[:, :2], dtype="float64"), block_size=1).asnumpy(), x[:, :2])
    v = np.arange(48).reshape(1, 3, 4, 4)
    np.testing.assert_array_equal(nd.space_to_depth(nd.array(v, dtype="int32"), block_size=2)
                                  .asnumpy(), np_space_to_depth(v, 2))


def test_depth_space_gradients_and_errors():
    for name, shape in [("depth_to_space", (1, 8, 2, 1)), ("space_to_depth", (2, 1, 4, 2))]:
        s = getattr(sym, name)(sym.var("x"), block_size=2)
        check_numeric_gradient(s, {"x": RNG.normal(size=shape)}, dtype=np.float64,
                               numeric_eps=1e-5, rtol=1e-6, atol=1e-8)
    with pytest.raises(mx.base.MXNetError,
                       match=r"depth_to_space.*\(1, 3, 2, 2\) must be a multiple of block_size"):
        nd.depth_to_space(nd.ones((1, 3, 2, 2)), block_size=2)
    with pytest.raises(mx.base.MXNetError, match=r"space_to_depth.*multiples of block_size = 3"):
        nd.space_to_depth(nd.ones((1, 3, 2, 2)), block_size=3)
    with pytest.raises(mx.base.MXNetError, match=r"space_to_depth.*4-D"):
        nd.space_to_depth(nd.ones((3, 2, 2)), block_size=1)
    with pytest.raises(mx.base.MXNetError, match=r"block_size must be a positive integer, got 0"):
        nd.depth_to_space(nd.ones((1, 4, 2, 2)), block_size=0)
    _, outs, _ = sym.depth_to_space(sym.var("x"), block_size=2).infer_shape(x=(2, 8, 3, 5))
    assert outs == [(2, 2, 6, 10)]


@pytest.mark.parametrize("axes,keepdims", [((1,), False), ((0, 2), True), ((-1, 0), False),
                                           ((0, 1, 2), False)])
def test_moments_matches_numpy(axes, keepdims):
    x = RNG.normal(size=(3, 4, 5)) * 3 + 1
    mean, var = nd.moments(nd.array(x, dtype="float64"), axes=axes, keepdims=keepdims)
    np.testing.assert_allclose(mean.asnumpy(), x.mean(axis=axes, keepdims=keepdims), rtol=1e-12)
    np.testing.assert_allclose(var.asnumpy(), x.var(axis=axes, keepdims=keepdims), rtol=1e-12)


def test_moments_gradient_and_errors():
    s = sym.moments(sym.var("x"), axes=(1,))
    assert len(s.list_outputs()) == 2
    _, outs, _ = s.infer_shape(x=(2, 3, 4))
    assert outs == [(2, 4), (2, 4)]
    x = nd.array(RNG.normal(size=(2, 3)), dtype="float64")
    x.attach_grad()
    wm, wv = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    with autograd.record():
        m, v = nd.moments(x, axes=(1,))
        loss = (m * nd.array(wm, dtype="float64") + v * nd.array(wv, dtype="float64")).sum()
    loss.backward()
    xn = x.asnumpy()
    want = wm[:, None] / 3 + wv[:, None] * 2 * (xn - xn.mean(1, keepdims=True)) / 3
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-12)
    check_numeric_gradient(sym.moments(sym.var("x"), axes=(0, 2))[1],
                           {"x": RNG.normal(size=(2, 3, 2))}, dtype=np.float64, numeric_eps=1e-5,
                           rtol=1e-6, atol=1e-8)
    with pytest.raises(mx.base.MXNetError, match=r"moments: axes must name at least one axis"):
        nd.moments(nd.ones((2, 3)))
    with pytest.raises(mx.base.MXNetError, match=r"moments: axes .* duplicate"):
        nd.moments(nd.ones((2, 3)), axes=(1, -1))


# --- GroupNorm ------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", FIXTURE["GroupNorm"], ids=lambda c: f"g{c['num_groups']}")
def test_group_norm_matches_mxnet(case):
    args = [nd.array(case[k], dtype="float64") for k in ("data", "gamma", "beta")]
    for a in args:
        a.attach_grad()
    with autograd.record():
        y, mean, std = nd.GroupNorm(*args, num_groups=case["num_groups"], eps=case["eps"],
                                    output_mean_var=True)
    y.backward(nd.array(case["head"], dtype="float64"))
    np.testing.assert_allclose(y.asnumpy(), case["out"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(mean.asnumpy(), case["mean"], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(std.asnumpy(), case["std"], rtol=1e-6)
    for a, want in zip(args, case["grads"], strict=True):
        np.testing.assert_allclose(a.grad.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_group_norm_symbol_and_finite_differences():
    s = sym.GroupNorm(sym.var("x"), num_groups=2, output_mean_var=True, name="gn")
    assert s.list_arguments() == ["x", "gn_gamma", "gn_beta"]
    assert s.list_outputs() == ["gn_output", "gn_mean", "gn_std"]
    args, outs, _ = s.infer_shape(x=(2, 4, 3, 5))
    assert args == [(2, 4, 3, 5), (2,), (2,)] and outs == [(2, 4, 3, 5), (2, 2), (2, 2)]
    loc = {"x": RNG.normal(size=(2, 4, 3)), "gn_gamma": np.array([0.7, 1.3]),
           "gn_beta": np.array([0.1, -0.4])}
    check_numeric_gradient(sym.GroupNorm(sym.var("x"), num_groups=2, name="gn"), loc,
                           dtype=np.float64, numeric_eps=1e-5, rtol=1e-5, atol=1e-7)


def test_group_norm_bad_inputs():
    with pytest.raises(mx.base.MXNetError, match=r"GroupNorm.*3 channels.*num_groups=2"):
        nd.GroupNorm(nd.ones((2, 3, 2)), nd.ones(2), nd.ones(2), num_groups=2)
    with pytest.raises(mx.base.MXNetError,
                       match=r"GroupNorm: gamma has shape \(4,\), expected \(2,\)"):
        nd.GroupNorm(nd.ones((2, 4, 2)), nd.ones(4), nd.ones(2), num_groups=2)
    with pytest.raises(mx.base.MXNetError, match=r"GroupNorm.*at least 3 axes"):
        nd.GroupNorm(nd.ones((2, 4)), nd.ones(2), nd.ones(2), num_groups=2)
    with pytest.raises(mx.base.MXNetError, match=r"num_groups must be at least 1"):
        nd.GroupNorm(nd.ones((2, 4, 2)), nd.ones(1), nd.ones(1), num_groups=0)


# --- SVMOutput, amp casts, index conversions, im2col / col2im, histogram ----------------------

@pytest.mark.parametrize("case", FIXTURE["SVMOutput"], ids=lambda c: str(sorted(c["params"])))
def test_svm_output_matches_mxnet(case):
    x = nd.array(case["data"], dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = nd.SVMOutput(x, nd.array(case["label"], dtype="float64"), **case["params"])
    y.backward(nd.ones_like(y) * 5)  # ignored, as MXNet
    np.testing.assert_array_equal(y.asnumpy(), case["data"])
    np.testing.assert_allclose(x.grad.asnumpy(), case["grad"], rtol=1e-12, atol=1e-12)


def test_svm_output_symbol_and_errors():
    s = sym.SVMOutput(sym.var("d"), name="svm")
    assert s.list_arguments() == ["d", "svm_label"]
    args, _, _ = s.infer_shape(d=(4, 5, 3))
    assert args == [(4, 5, 3), (4, 5)]
    exe = s.simple_bind(mx.cpu(), d=(2, 3))
    exe.forward(is_train=True, d=nd.array([[0.5, -0.3, 1.2], [2.0, 0.1, -1.0]]),
                svm_label=nd.array([2, 0]))
    exe.backward()  # a loss: no head gradient needed
    np.testing.assert_allclose(exe.grad_dict["d"].asnumpy(), [[3, 1.4, 0], [0, 2.2, 0]], rtol=1e-6)
    with pytest.raises(mx.base.MXNetError, match=r"SVMOutput: label\[1\] = 3"):
        nd.SVMOutput(nd.ones((2, 3)), nd.array([0, 3]))
    with pytest.raises(mx.base.MXNetError, match=r"SVMOutput: label of shape \(3,\).*\(2, 3\)"):
        nd.SVMOutput(nd.ones((2, 3)), nd.array([0, 1, 2]))


def test_amp_cast_and_multicast():
    x = nd.array([1.5, -2.25, 70000.0])
    y = nd.amp_cast(x, dtype="float16")
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y.asnumpy(), np.array([1.5, -2.25, np.inf], np.float16))
    assert nd.amp_cast(nd.array([1, 2], dtype="int32"), dtype="float16").dtype == np.int32
    half = x.astype("float16")
    wide = nd.amp_multicast(x, half, num_outputs=2)
    assert [a.dtype for a in wide] == [np.float32, np.float32]
    narrow = nd.amp_multicast(x.astype("float64"), half, x, num_outputs=3, cast_narrow=True)
    assert [a.dtype for a in narrow] == [np.float16] * 3
    a, b = x.copy(), half.copy()
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        p, q = nd.amp_multicast(a, b, num_outputs=2)
        loss = (p * 2 + q * 3).sum()
    loss.backward()
    assert b.grad.dtype == np.float16
    np.testing.assert_array_equal(a.grad.asnumpy(), [2, 2, 2])
    np.testing.assert_array_equal(b.grad.asnumpy(), [3, 3, 3])
    s = sym.amp_multicast(sym.var("a"), sym.var("b"), num_outputs=2)
    _, types, _ = s.infer_type(a=np.float32, b=np.float16)
    assert types == [np.float32, np.float32]
    with pytest.raises(mx.base.MXNetError, match=r"amp_multicast: num_outputs=3 but 2"):
        nd.amp_multicast(x, half, num_outputs=3)


def test_ravel_and_unravel_match_numpy():
    shape = (7, 6, 5)
    flat = np.array([0, 209, 37, 123, 88])
    multi = np.stack(np.unravel_index(flat, shape))
    got = nd.unravel_index(nd.array(flat, dtype="int64"), shape=shape)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.asnumpy(), multi)
    back = nd.ravel_multi_index(nd.array(multi + 0.5), shape=shape)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back.asnumpy(), flat)
    _, outs, _ = sym.ravel_multi_index(sym.var("a"), shape=(7, 6)).infer_shape(a=(2, 5))
    assert outs == [(5,)]
    with pytest.raises(mx.base.MXNetError, match=r"ravel_multi_index: index 7 on axis 0"):
        nd.ravel_multi_index(nd.array([[7], [0], [0]]), shape=shape)
    with pytest.raises(mx.base.MXNetError, match=r"unravel_index: flat index 210"):
        nd.unravel_index(nd.array([210]), shape=shape)
    with pytest.raises(mx.base.MXNetError, match=r"ravel_multi_index.*3 rows"):
        nd.ravel_multi_index(nd.array([[1], [2]]), shape=shape)


@pytest.mark.parametrize("case", FIXTURE["im2col"], ids=lambda c: str(len(c["params"])))
def test_im2col_col2im_match_mxnet(case):
    params = {k: tuple(v) for k, v in case["params"].items()}
    cols = nd.im2col(nd.array(case["data"], dtype="float64"), **params)
    np.testing.assert_array_equal(cols.asnumpy(), case["cols"])
    back = nd.col2im(cols, output_size=(3, 4), **params)
    np.testing.assert_array_equal(back.asnumpy(), case["back"])


def test_im2col_gradients_and_errors():
    params = {"kernel": (2, 2), "stride": (1, 2), "pad": (1, 0), "dilate": (2, 1)}
    check_numeric_gradient(sym.im2col(sym.var("x"), **params), {"x": RNG.normal(size=(1, 2, 3, 4))},
                           dtype=np.float64, numeric_eps=1e-5, rtol=1e-6, atol=1e-8)
    check_numeric_gradient(sym.col2im(sym.var("x"), output_size=(3, 4), **params),
                           {"x": RNG.normal(size=(1, 8, 6))}, dtype=np.float64, numeric_eps=1e-5,
                           rtol=1e-6, atol=1e-8)
    _, outs, _ = sym.im2col(sym.var("x"), kernel=(2, 2), pad=(1, 1)).infer_shape(x=(2, 3, 5, 5))
    assert outs == [(2, 12, 36)]
    with pytest.raises(mx.base.MXNetError, match=r"im2col: the dilated kernel \(4\)"):
        nd.im2col(nd.ones((1, 1, 3, 3)), kernel=(4, 1))
    with pytest.raises(mx.base.MXNetError, match=r"col2im: data must have shape \(N, C·4, 6\)"):
        nd.col2im(nd.ones((2, 8, 3)), output_size=(3, 4), kernel=(2, 2))


def test_histogram():
    d = nd.array([0, 1, 1.5, 2, 3, 3, 5, -1, 7])
    counts, edges = nd.histogram(d, bins=3, range=(0, 3))
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(counts.asnumpy(), [1, 2, 3])
    np.testing.assert_allclose(edges.asnumpy(), [0, 1, 2, 3])
    counts, edges = nd.histogram(d, bins=nd.array([0, 1, 2.5, 7]))
    np.testing.assert_array_equal(counts.asnumpy(), [1, 3, 4])
    with pytest.warns(UserWarning, match="range is not specified"):
        counts, edges = nd.histogram(d, bins=4)
    want_c, want_e = np.histogram(d.asnumpy(), bins=4)
    np.testing.assert_array_equal(counts.asnumpy(), want_c)
    np.testing.assert_allclose(edges.asnumpy(), want_e, rtol=1e-6)
    with pytest.raises(mx.base.MXNetError, match=r"bins must increase monotonically"):
        nd.histogram(d, bins=nd.array([3, 1, 5]))
    with pytest.raises(mx.base.MXNetError, match=r"lower <= upper"):
        nd.histogram(d, bins=3, range=(4, 1))
    with pytest.raises(ValueError, match="bins should be an integer or an NDArray"):
        nd.histogram(d, bins=[0, 1, 2])
