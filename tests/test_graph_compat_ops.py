"""Graph helpers MXNet code uses: ``argmax_channel``, ``shape_array``, ``size_array``,
``reshape_like`` (nd, sym and fluent), ``_identity_with_attr_like_rhs`` (backward shape
inference), common-subexpression elimination at bind time, the Zipfian samplers and
``mx.image``."""

import os

import ferrograd as mx
import numpy as np
import pytest


def _run(sym, **arrays):
    exe = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in arrays.items()})
    return [o.asnumpy() for o in exe.forward()]


def test_graph_helpers_in_symbols_and_as_methods():
    x = np.random.rand(4, 5, 3).astype(np.float32)
    d = mx.sym.var("d")
    np.testing.assert_array_equal(_run(d.argmax_channel(), d=x)[0], x.argmax(axis=1))
    np.testing.assert_array_equal(_run(mx.sym.shape_array(d), d=x)[0], [4, 5, 3])
    np.testing.assert_array_equal(_run(d.size_array(), d=x)[0], [60])
    r = mx.sym.var("r")
    y = d.reshape_like(r, lhs_begin=0, lhs_end=2, rhs_begin=0, rhs_end=1)
    out = y.bind(mx.cpu(), {"d": mx.nd.array(x), "r": mx.nd.zeros((20,))}).forward()[0]
    np.testing.assert_array_equal(out.asnumpy(), x.reshape(20, 3))
    nd = mx.nd.array(x)
    assert nd.shape_array().dtype == np.int64
    np.testing.assert_array_equal(nd.argmax_channel().asnumpy(), x.argmax(axis=1))
    assert mx.nd.reshape_like(nd, mx.nd.zeros((12, 5))).shape == (12, 5)


def test_identity_with_attr_like_rhs_lets_shapes_flow_backwards():
    w, shift, data = mx.sym.var("w"), mx.sym.var("shift", shape=(1,)), mx.sym.var("data")
    wt = mx.sym._internal._identity_with_attr_like_rhs(mx.sym.broadcast_add(w, shift), w)
    net = mx.sym.FullyConnected(data=data, weight=wt, num_hidden=6, no_bias=True)
    args, outs, _ = net.infer_shape(data=(2, 9))
    assert dict(zip(net.list_arguments(), args, strict=True))["w"] == (6, 9)
    assert outs == [(2, 6)]
    # The value is lhs's; rhs gets a zero gradient.
    a, b = mx.nd.array([[1.0, 2.0]]), mx.nd.array([[5.0, 7.0]])
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = mx.nd._internal._identity_with_attr_like_rhs(a * 3, b)
    y.backward()
    np.testing.assert_array_equal(y.asnumpy(), [[3.0, 6.0]])
    np.testing.assert_array_equal(a.grad.asnumpy(), [[3.0, 3.0]])
    np.testing.assert_array_equal(b.grad.asnumpy(), [[0.0, 0.0]])
    with pytest.raises(mx.base.MXNetError, match="_identity_with_attr_like_rhs"):
        mx.nd._internal._identity_with_attr_like_rhs(mx.nd.ones((2,)), mx.nd.ones((3,)))


def _bound(sym, cse, grad_req="write", **shapes):
    old = os.environ.get("MXNET_ELIMINATE_COMMON_EXPR")
    os.environ["MXNET_ELIMINATE_COMMON_EXPR"] = "1" if cse else "0"
    try:
        return sym.simple_bind(mx.cpu(), grad_req=grad_req, **shapes)
    finally:
        if old is None:
            del os.environ["MXNET_ELIMINATE_COMMON_EXPR"]
        else:
            os.environ["MXNET_ELIMINATE_COMMON_EXPR"] = old


@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_common_subexpressions_are_merged_without_changing_results(grad_req):
    a, b, c = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c")
    d = a + 1
    cases = [((a + 1) + (a + 2), 0), ((a + b) + (a + b), 1), (((a + b) + c) + ((a + b) + c), 2),
             (mx.sym.Group([a * d, a * d]), 0), (mx.sym.Group([a * d + b, a * d + b]), 1)]
    vals = {k: np.random.rand(3, 4).astype(np.float32) for k in "abc"}
    for sym, saved in cases:
        shapes = {k: (3, 4) for k in sym.list_arguments()}
        plain = _bound(sym, False, grad_req, **shapes)
        merged = _bound(sym, True, grad_req, **shapes)
        n_plain = len(plain.get_optimized_symbol().get_internals())
        n_merged = len(merged.get_optimized_symbol().get_internals())
        assert n_plain - n_merged == saved, sym.tojson()
        assert merged.get_optimized_symbol().list_arguments() == sym.list_arguments()
        for exe in (plain, merged):
            exe.forward(is_train=True, **{k: vals[k] for k in shapes})
            exe.backward([mx.nd.ones_like(o) for o in exe.outputs])
        pairs = zip(plain.outputs + plain.grad_arrays, merged.outputs + merged.grad_arrays,
                    strict=True)
        for p, m in pairs:
            np.testing.assert_allclose(p.asnumpy(), m.asnumpy(), rtol=1e-6)
        # Repeated outputs keep separate arrays.
        outs = merged.outputs
        if len(outs) == 2:
            assert outs[0] is not outs[1]


def test_random_ops_are_not_merged():
    a = mx.sym.var("a")
    s = mx.sym.Dropout(a, p=0.5) + mx.sym.Dropout(a, p=0.5)
    n_plain = len(_bound(s, False, a=(4,)).get_optimized_symbol().get_internals())
    assert len(_bound(s, True, a=(4,)).get_optimized_symbol().get_internals()) == n_plain


def test_unique_zipfian_rows_are_distinct_and_count_their_draws():
    classes, tries = mx.nd._internal._sample_unique_zipfian(1000, shape=(3, 200))
    assert classes.shape == (3, 200) and classes.dtype == np.int64 and tries.shape == (3,)
    c = classes.asnumpy()
    for row, n in zip(c, tries.asnumpy(), strict=True):
        assert len(set(row.tolist())) == 200
        assert row.min() >= 0 and row.max() < 1000
        assert n >= 200
    with pytest.raises(mx.base.MXNetError, match="_sample_unique_zipfian"):
        mx.nd._internal._sample_unique_zipfian(5, shape=(1, 6))


@pytest.mark.parametrize("symbolic", [False, True])
def test_rand_zipfian_draws_and_expected_counts(symbolic):
    range_max, n = 20, 20000
    true = mx.nd.array([0, 3, 19], dtype="int32")
    if symbolic:
        t = mx.sym.var("t")
        group = mx.sym.Group(list(mx.sym.contrib.rand_zipfian(t, n, range_max)))
        sampled, exp_true, exp_sampled = group.bind(mx.cpu(), {"t": true}).forward()
    else:
        sampled, exp_true, exp_sampled = mx.nd.contrib.rand_zipfian(true, n, range_max)
    prob = np.log((np.arange(range_max) + 2) / (np.arange(range_max) + 1)) / np.log(range_max + 1)
    s = sampled.asnumpy()
    assert sampled.dtype == np.int64 and exp_true.dtype == np.float64
    np.testing.assert_allclose(exp_true.asnumpy(), prob[[0, 3, 19]] * n, rtol=1e-12)
    np.testing.assert_allclose(exp_sampled.asnumpy(), prob[s] * n, rtol=1e-12)
    freq = np.bincount(s, minlength=range_max) / n
    np.testing.assert_allclose(freq, prob, atol=0.01)


def test_image_resize_and_errors():
    img = mx.nd.array(np.arange(2 * 4 * 1).reshape(2, 4, 1), dtype="uint8")
    near = mx.image.imresize(img, 2, 1, interp=0)
    np.testing.assert_array_equal(near.asnumpy()[:, :, 0], [[0, 2]])
    lin = mx.image.imresize(mx.nd.array([[[0.0], [4.0]]]), 4, 1, interp=1)
    np.testing.assert_allclose(lin.asnumpy()[0, :, 0], [0.0, 1.0, 3.0, 4.0])
    with pytest.raises(mx.base.MXNetError, match="interp"):
        mx.image.imresize(mx.nd.ones((4, 4, 3)), 2, 2, interp=-1)
    with pytest.raises(mx.base.MXNetError):
        mx.image.imdecode(b"")
    with pytest.raises(mx.base.MXNetError, match="imread"):
        mx.image.imread("/nonexistent/picture.jpg")


def test_symbol_constants_and_alias_names():
    z, o = mx.sym.zeros((2, 3)), mx.sym.ones(4, dtype="int32")
    f = mx.sym.full((2,), 7.5, dtype=np.float64)
    assert [z.name[:6], o.name[:5], f.name[:5]] == ["_zeros", "_ones", "_full"]
    outs = mx.sym.Group([z, o, f]).bind(mx.cpu(), {}).forward()
    np.testing.assert_array_equal(outs[0].asnumpy(), np.zeros((2, 3), np.float32))
    assert outs[1].dtype == np.int32 and outs[1].asnumpy().tolist() == [1, 1, 1, 1]
    assert outs[2].dtype == np.float64 and outs[2].asnumpy().tolist() == [7.5, 7.5]
    x = mx.sym.var("x")
    # A symbol is auto-named after the name it was created by (an alias keeps its own name).
    with mx.name.NameManager():
        assert mx.sym.flip(x, axis=0).name == "flip0"
        assert x.flip(axis=0).name == "flip1"
        assert mx.sym.reverse(x, axis=0).name == "reverse0"
