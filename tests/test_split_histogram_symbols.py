"""``sym.split_v2`` and the ``_split_v2`` op, ``sym.histogram``, and ``sym.contrib.boolean_mask``
(a node whose output shape depends on its index's values, so graphs cannot run it).

References are NumPy (``numpy.split``/``array_split``/``histogram``) and gradients derived by
hand: a split's input gradient is its head gradients joined along the axis. The JSON strings in
MXNet's format are what MXNet 1.9.1 printed for ``mx.sym.split_v2(a, 3, axis=1).tojson()``,
``mx.sym.split_v2(a, (1, 3), axis=-1)`` and ``mx.sym.contrib.boolean_mask(data, index)``."""

import json

import ferrograd as mx
import numpy as np
import pytest

nd, sym = mx.nd, mx.sym


def _x(*shape):
    return np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * 0.5 - 3.0


def _run(s, **inputs):
    ex = s.bind(mx.cpu(), {k: nd.array(v, dtype=v.dtype) for k, v in inputs.items()})
    return [o.asnumpy() for o in ex.forward()]


@pytest.mark.parametrize("shape, spec, axis, want", [
    ((2, 6, 4), 3, 1, lambda x: np.split(x, 3, axis=1)),
    ((2, 6, 4), (1, 3), -1, lambda x: np.split(x, (1, 3), axis=-1)),
    ((3, 5, 2), (2, 2, 4), 1, lambda x: np.split(x, (2, 2, 4), axis=1)),
    ((4, 3, 2), (1,), 0, lambda x: np.split(x, (1,), axis=0)),
    # An int that does not divide the axis: MXNet's op gives numpy.array_split's parts.
    ((2, 6, 1), 4, 1, lambda x: np.array_split(x, 4, axis=1)),
    ((2, 10), 4, -1, lambda x: np.array_split(x, 4, axis=-1)),
    ((2, 3, 2), 4, 1, lambda x: np.array_split(x, 4, axis=1)),
])
def test_sym_split_v2_matches_numpy(shape, spec, axis, want):
    x = _x(*shape)
    s = sym.split_v2(sym.var("a"), spec, axis=axis)
    expected = want(x)
    assert len(s.list_outputs()) == len(expected)
    _, out_shapes, _ = s.infer_shape(a=shape)
    assert out_shapes == [e.shape for e in expected]
    for got, w in zip(_run(s, a=x), expected, strict=True):
        np.testing.assert_array_equal(got, w)


def test_sym_split_v2_squeeze_negative_axis_and_one_part():
    x = _x(2, 3, 4)
    s = sym.split_v2(sym.var("a"), 3, axis=-2, squeeze_axis=True)
    assert s.infer_shape(a=x.shape)[1] == [(2, 4)] * 3
    for k, got in enumerate(_run(s, a=x)):
        np.testing.assert_array_equal(got, x[:, k, :])
    s = sym.split_v2(sym.var("a"), (1, 2), axis=1, squeeze_axis=True)
    for k, got in enumerate(_run(s, a=x)):
        np.testing.assert_array_equal(got, x[:, k, :])
    one = sym.split_v2(sym.var("a"), 1, axis=2)
    assert len(one.list_outputs()) == 1 and one.list_outputs()[0].endswith("_output")
    np.testing.assert_array_equal(_run(one, a=x)[0], x)
    # Integer data keeps its dtype.
    xi = np.arange(12, dtype=np.int32).reshape(3, 4)
    parts = _run(sym.split_v2(sym.var("a"), (1,), axis=0), a=xi)
    assert [p.dtype for p in parts] == [np.int32, np.int32]
    np.testing.assert_array_equal(parts[1], xi[1:])


def test_nd_split_v2_is_one_op_with_the_numpy_parts():
    x = _x(2, 6, 3)
    for spec in [3, (1, 4), (2,)]:
        got = nd.split_v2(nd.array(x, dtype="float64"), spec, axis=1)
        for g, w in zip(got, np.split(x, spec, axis=1), strict=True):
            np.testing.assert_array_equal(g.asnumpy(), w)
    parts = nd.split_v2(nd.array(x), 6, axis=1, squeeze_axis=True)
    assert [p.shape for p in parts] == [(2, 3)] * 6
    assert nd.split_v2(nd.array(x), 1, axis=0).shape == (2, 6, 3)
    raw = nd._internal._split_v2(nd.array(x), indices=(0, 2), axis=-2)
    assert [p.shape for p in raw] == [(2, 2, 3), (2, 4, 3)]


def test_split_v2_gradient_through_autograd_is_the_heads_joined():
    x = nd.array(_x(2, 5, 3), dtype="float64")
    x.attach_grad()
    rng = np.random.default_rng(0)
    with mx.autograd.record():
        parts = nd.split_v2(x, (1, 3), axis=1)
    heads = [rng.standard_normal(p.shape) for p in parts]
    mx.autograd.backward(parts, [nd.array(h, dtype="float64") for h in heads])
    np.testing.assert_allclose(x.grad.asnumpy(), np.concatenate(heads, axis=1), rtol=0, atol=0)
    # Squeezed parts: the heads stacked back along the axis; an unused part contributes zeros.
    with mx.autograd.record():
        parts = nd.split_v2(x, 5, axis=1, squeeze_axis=True)
        loss = (parts[0] * 2 + parts[3] * parts[3]).sum()
    loss.backward()
    want = np.zeros((2, 5, 3))
    want[:, 0, :] = 2
    want[:, 3, :] = 2 * x.asnumpy()[:, 3, :]
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-12)


@pytest.mark.parametrize("spec, squeeze", [((1, 3), False), (4, True), (3, False)])
def test_split_v2_gradient_in_an_executor(spec, squeeze):
    n = 4 if squeeze else 5
    shape = (2, n, 3)
    s = sym.split_v2(sym.var("a"), spec, axis=-2, squeeze_axis=squeeze)
    ex = s.simple_bind(mx.cpu(), a=shape, type_dict={"a": "float64"})
    ex.forward(is_train=True, a=nd.array(_x(*shape), dtype="float64"))
    rng = np.random.default_rng(1)
    heads = [rng.standard_normal(o.shape) for o in ex.outputs]
    ex.backward([nd.array(h, dtype="float64") for h in heads])
    joined = np.stack(heads, axis=1) if squeeze else np.concatenate(heads, axis=1)
    np.testing.assert_allclose(ex.grad_dict["a"].asnumpy(), joined, rtol=0, atol=0)


def test_split_v2_second_order_against_finite_differences():
    # L = sum_k c_k * sum(p_k ** 3); G(x) = sum(dL/dx * w); dG/dx by autograd against central
    # differences of G computed with first-order gradients.
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((2, 5))
    w = rng.standard_normal((2, 5))
    c = [1.0, -2.0, 0.5]

    def first(xv, create_graph=False):
        x = nd.array(xv, dtype="float64")
        x.attach_grad()
        with mx.autograd.record():
            parts = nd.split_v2(x, (2, 3), axis=1)
            loss = sum(ck * (p ** 3).sum() for ck, p in zip(c, parts, strict=True))
            (g,) = mx.autograd.grad(loss, [x], create_graph=create_graph)
            big_g = (g * nd.array(w, dtype="float64")).sum()
        return x, big_g

    x, big_g = first(x0, create_graph=True)
    big_g.backward()
    got = x.grad.asnumpy()
    coef = np.repeat([c[0], c[1], c[2]], [2, 1, 2])[None, :]
    np.testing.assert_allclose(got, 6 * coef * x0 * w, rtol=1e-12)
    h, fd = 1e-5, np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        d = np.zeros_like(x0)
        d[i] = h
        fd[i] = (first(x0 + d)[1].asscalar() - first(x0 - d)[1].asscalar()) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


# Printed by MXNet 1.9.1 for mx.sym.split_v2(mx.sym.var('a'), 3, axis=1).tojson().
_MX_SPLIT_JSON = (
    "{\n"
    '  "nodes": [\n'
    "    {\n"
    '      "op": "null", \n'
    '      "name": "a", \n'
    '      "inputs": []\n'
    "    }, \n"
    "    {\n"
    '      "op": "_split_v2", \n'
    '      "name": "_split_v20", \n'
    '      "attrs": {\n'
    '        "axis": "1", \n'
    '        "indices": "[]", \n'
    '        "sections": "3", \n'
    '        "squeeze_axis": "False"\n'
    "      }, \n"
    '      "inputs": [[0, 0, 0]]\n'
    "    }\n"
    "  ], \n"
    '  "arg_nodes": [0], \n'
    '  "node_row_ptr": [0, 1, 4], \n'
    '  "heads": [[1, 0, 0], [1, 1, 0], [1, 2, 0]], \n'
    '  "attrs": {"mxnet_version": ["int", 10901]}\n'
    "}"
)

# MXNet's JSON for ``mx.sym.split_v2(a, (1, 3), axis=-1)``: only the node's name and attrs differ.
_MX_SPLIT_INDICES_JSON = (_MX_SPLIT_JSON.replace('"_split_v20"', '"_split_v21"')
                          .replace('"axis": "1"', '"axis": "-1"')
                          .replace('"indices": "[]"', '"indices": "[0, 1, 3]"')
                          .replace('"sections": "3"', '"sections": "0"'))


def test_split_v2_json_attrs_are_mxnets_and_round_trip():
    a = sym.var("a")
    node = [n for n in json.loads(sym.split_v2(a, 3, axis=1).tojson())["nodes"]
            if n["op"] != "null"][0]
    assert node["op"] == "_split_v2" and node["name"].startswith("_split_v2")
    assert node["attrs"] == {"axis": "1", "indices": "[]", "sections": "3",
                             "squeeze_axis": "False"}
    node = [n for n in json.loads(sym.split_v2(a, (1, 3), axis=-1).tojson())["nodes"]
            if n["op"] != "null"][0]
    assert node["attrs"] == {"axis": "-1", "indices": "[0, 1, 3]", "sections": "0",
                             "squeeze_axis": "False"}
    # A graph using the parts round-trips and computes the same.
    parts = sym.split_v2(a, (2,), axis=0, squeeze_axis=False)
    net = sym.Group([parts[1] * 2, sym.sum(parts[0])])
    back = sym.load_json(net.tojson())
    assert back.tojson() == net.tojson()
    x = _x(5, 3)
    for got, want in zip(_run(back, a=x), [x[2:] * 2, x[:2].sum(keepdims=False)], strict=True):
        np.testing.assert_allclose(got, np.asarray(want).reshape(got.shape), rtol=1e-12)


@pytest.mark.parametrize("text, want", [
    (_MX_SPLIT_JSON, lambda x: np.split(x, 3, axis=1)),
    (_MX_SPLIT_INDICES_JSON, lambda x: np.split(x, (1, 3), axis=-1)),
])
def test_split_v2_loads_mxnet_json_and_trains_in_an_executor(text, want):
    s = sym.load_json(text)
    assert s.list_arguments() == ["a"] and len(s.list_outputs()) == 3
    x = _x(2, 6, 4)
    ex = s.simple_bind(mx.cpu(), a=x.shape, type_dict={"a": "float64"})
    ex.forward(is_train=True, a=nd.array(x, dtype="float64"))
    for got, w in zip(ex.outputs, want(x), strict=True):
        np.testing.assert_array_equal(got.asnumpy(), w)
    heads = [np.full(o.shape, k + 1.0) for k, o in enumerate(ex.outputs)]
    ex.backward([nd.array(h, dtype="float64") for h in heads])
    axis = 1 if text is _MX_SPLIT_JSON else -1
    np.testing.assert_array_equal(ex.grad_dict["a"].asnumpy(), np.concatenate(heads, axis=axis))


def test_split_v2_partial_shapes():
    s = sym.split_v2(sym.var("a"), 3, axis=1)
    _, outs, _ = s.infer_shape_partial(a=(0, 6, 0))
    assert outs == [(0, 2, 0)] * 3


def test_split_v2_bad_inputs_name_the_op_and_shapes():
    a = sym.var("a")
    with pytest.raises(mx.MXNetError, match=r"_split_v2.*indices.*decrease"):
        sym.split_v2(a, (3, 1), axis=1).infer_shape(a=(2, 6, 4))
    with pytest.raises(mx.MXNetError, match=r"_split_v2: indices\[2\] = 9 .*axis 1 of size 6"):
        sym.split_v2(a, (1, 9), axis=1).infer_shape(a=(2, 6, 4))
    with pytest.raises(mx.MXNetError, match=r"squeeze_axis=True .*size 2 .*\(2, 6, 4\)"):
        sym.split_v2(a, 3, axis=1, squeeze_axis=True).infer_shape(a=(2, 6, 4))
    with pytest.raises(mx.MXNetError, match=r"_split_v2: axis 5 is out of range"):
        sym.split_v2(a, 2, axis=5).infer_shape(a=(2, 6, 4))
    with pytest.raises(mx.MXNetError, match="sections"):
        sym.split_v2(a, 0, axis=1)
    with pytest.raises(mx.MXNetError, match="sections"):
        sym.split_v2(a, -1, axis=1)
    with pytest.raises(ValueError, match="int or a tuple of ints"):
        sym.split_v2(a, 2.5)
    with pytest.raises(mx.MXNetError, match="start with 0"):
        sym._internal._split_v2(a, indices=(2, 4), axis=1)
    with pytest.raises(mx.MXNetError, match="indices"):
        sym._internal._split_v2(a, axis=1)
    x = nd.array(_x(2, 6, 4))
    with pytest.raises(ValueError, match="4 sections do not divide axis 1 of size 6"):
        nd.split_v2(x, 4, axis=1)
    with pytest.raises(mx.MXNetError, match=r"_split_v2.*decrease"):
        nd.split_v2(x, (3, 1), axis=1)
    with pytest.raises(mx.MXNetError, match=r"indices\[2\] = 9 .*\(2, 6, 4\)"):
        nd.split_v2(x, (1, 9), axis=1)


def test_sym_histogram_matches_numpy():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 2, size=(4, 7)).astype(np.float32)
    h = sym.histogram(sym.var("a"), bins=5, range=(0, 1))
    assert len(h.list_outputs()) == 2
    node = [n for n in json.loads(h.tojson())["nodes"] if n["op"] != "null"][0]
    assert node["op"] == "_histogram" and set(node["attrs"]) == {"bin_cnt", "range"}
    assert h.infer_shape(a=x.shape)[1] == [(5,), (6,)]
    counts, edges = _run(h, a=x)
    want_counts, want_edges = np.histogram(x, bins=5, range=(0, 1))
    np.testing.assert_array_equal(counts, want_counts)
    assert counts.dtype == np.int64
    np.testing.assert_allclose(edges, want_edges, rtol=1e-6)
    edges_in = np.array([-1.0, 0.0, 0.5, 2.0], dtype=np.float32)
    h2 = sym.histogram(sym.var("a"), bins=sym.var("b"))
    assert h2.list_arguments() == ["a", "b"]
    counts, edges = _run(h2, a=x, b=edges_in)
    np.testing.assert_array_equal(counts, np.histogram(x, bins=edges_in)[0])
    np.testing.assert_array_equal(edges, edges_in)
    back = sym.load_json(h.tojson())
    np.testing.assert_array_equal(_run(back, a=x)[0], want_counts)


def test_sym_histogram_bad_bins():
    a = sym.var("a")
    with pytest.raises(ValueError, match="null range is not supported in symbol mode"):
        sym.histogram(a, bins=5)
    with pytest.raises(ValueError, match="bins argument should be either an integer"):
        sym.histogram(a, bins=[1, 2, 3], range=(0, 1))


# Printed by MXNet 1.9.1 for mx.sym.contrib.boolean_mask(data, index).tojson().
_MX_BOOLEAN_MASK_JSON = (
    "{\n"
    '  "nodes": [\n'
    "    {\n"
    '      "op": "null", \n'
    '      "name": "data", \n'
    '      "inputs": []\n'
    "    }, \n"
    "    {\n"
    '      "op": "null", \n'
    '      "name": "index", \n'
    '      "inputs": []\n'
    "    }, \n"
    "    {\n"
    '      "op": "_contrib_boolean_mask", \n'
    '      "name": "boolean_mask0", \n'
    '      "inputs": [[0, 0, 0], [1, 0, 0]]\n'
    "    }\n"
    "  ], \n"
    '  "arg_nodes": [0, 1], \n'
    '  "node_row_ptr": [0, 1, 2, 3], \n'
    '  "heads": [[2, 0, 0]], \n'
    '  "attrs": {"mxnet_version": ["int", 10901]}\n'
    "}"
)

_DATA_DEPENDENT = (r"_contrib_boolean_mask.*depends on the values of index"
                   r".*nd\.contrib\.boolean_mask")


def test_sym_boolean_mask_builds_but_cannot_be_planned():
    s = sym.contrib.boolean_mask(sym.var("data"), sym.var("index"))
    assert s.list_arguments() == ["data", "index"]
    assert len(s.list_outputs()) == 1
    with pytest.raises(mx.MXNetError, match=_DATA_DEPENDENT):
        s.infer_shape(data=(3, 4), index=(3,))
    # simple_bind wraps the message in a RuntimeError listing the shapes, as MXNet's does.
    with pytest.raises(RuntimeError, match=_DATA_DEPENDENT):
        s.simple_bind(mx.cpu(), data=(3, 4), index=(3,))
    with pytest.raises(mx.MXNetError, match=_DATA_DEPENDENT):
        s.bind(mx.cpu(), {"data": nd.ones((3, 4)), "index": nd.array([1, 0, 1])})
    loaded = sym.load_json(_MX_BOOLEAN_MASK_JSON)
    assert loaded.list_arguments() == ["data", "index"]
    with pytest.raises(mx.MXNetError, match=_DATA_DEPENDENT):
        loaded.infer_shape(data=(3, 4), index=(3,))
    # The imperative function is untouched.
    out = nd.contrib.boolean_mask(nd.array(_x(3, 2)), nd.array([1, 0, 1]))
    np.testing.assert_array_equal(out.asnumpy(), _x(3, 2)[[0, 2]])


class _Masked(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x, index):
        return F.contrib.boolean_mask(x, index) * 2


def test_hybridized_boolean_mask_says_to_run_it_imperatively():
    x, index = nd.array(_x(3, 2)), nd.array([0, 1, 1])
    net = _Masked()
    np.testing.assert_array_equal(net(x, index).asnumpy(), _x(3, 2)[1:] * 2)
    net.hybridize()
    with pytest.raises(mx.MXNetError, match=_DATA_DEPENDENT):
        net(x, index)
