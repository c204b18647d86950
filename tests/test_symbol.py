"""ferrograd.symbol: construction, naming, attributes, inference, JSON and composition (spec §2)."""

import copy
import json
import pickle

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.base import MXNetError, NotImplementedForSymbol

sym = mx.sym


def mlp():
    data = sym.var("data")
    fc1 = sym.FullyConnected(data=data, num_hidden=8, name="fc1")
    act = sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = sym.FullyConnected(act, num_hidden=3, name="fc2")
    return sym.SoftmaxOutput(fc2, name="softmax")


# ------------------------------------------------------------------------------ construction


def test_mlp_arguments_outputs_and_names():
    net = mlp()
    assert net.name == "softmax"
    assert repr(net) == "<Symbol softmax>"
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias",
                                    "softmax_label"]
    assert net.list_outputs() == ["softmax_output"]
    assert net.list_auxiliary_states() == []
    assert len(net) == 1


def test_automatic_names_count_per_hint_and_prefix():
    with mx.name.NameManager():
        a = sym.var("a")
        f0 = sym.FullyConnected(a, num_hidden=2)
        f1 = sym.FullyConnected(a, num_hidden=2)
        e0 = sym.exp(a)
        assert (f0.name, f1.name, e0.name) == ("fullyconnected0", "fullyconnected1", "exp0")
    with mx.name.Prefix("pre_"):
        f = sym.FullyConnected(a, num_hidden=2)
    assert f.name == "pre_fullyconnected0"
    assert f.list_arguments() == ["a", "pre_fullyconnected0_weight", "pre_fullyconnected0_bias"]


def test_missing_inputs_become_variables():
    fc = sym.FullyConnected(num_hidden=3, name="fc")
    assert fc.list_arguments() == ["fc_data", "fc_weight", "fc_bias"]
    ea = sym.elemwise_add(name="ea")
    assert ea.list_arguments() == ["ea_lhs", "ea_rhs"]
    c = sym.Concat(num_args=2, name="concat")
    assert c.list_arguments() == ["concat_arg0", "concat_arg1"]
    assert sym.FullyConnected(num_hidden=3, no_bias=True, name="f").list_arguments() == \
        ["f_data", "f_weight"]


def test_batchnorm_aux_and_output_mean_var_names():
    bn = sym.BatchNorm(sym.var("x"), name="bn")
    assert bn.list_arguments() == ["x", "bn_gamma", "bn_beta"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_inputs() == ["x", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]
    bn3 = sym.BatchNorm(sym.var("x"), output_mean_var=True, name="bn")
    assert bn3.list_outputs() == ["bn_output", "bn_mean", "bn_var"]
    split = sym.split(sym.var("x"), num_outputs=3, name="s")
    assert split.list_outputs() == ["s_output0", "s_output1", "s_output2"]


def test_var_attributes_and_errors():
    v = sym.var("w", shape=(2, 3), lr_mult=2.0, dtype="float64", __extra__="1")
    attrs = v.list_attr()
    assert attrs["__shape__"] == "(2, 3)"
    assert attrs["__dtype__"] == "1"
    assert attrs["__lr_mult__"] == "2.0" and attrs["lr_mult"] == "2.0"
    assert attrs["__extra__"] == "1"
    assert v.attr("__shape__") == "(2, 3)" and v.attr("nope") is None
    with pytest.raises(TypeError, match="Expect a string for variable `name`"):
        sym.var(3)
    with pytest.raises(ValueError, match="Attribute name=foo is not supported"):
        sym.var("x", foo="1")
    with pytest.raises(DeprecationWarning):
        v.list_attr(recursive=True)


def test_op_params_are_attributes_and_weights_copy_them():
    fc = sym.FullyConnected(sym.var("x"), num_hidden=3, name="f")
    assert fc.attr("num_hidden") == "3"
    d = fc.attr_dict()
    assert d["f"]["num_hidden"] == "3" and d["f_weight"]["num_hidden"] == "3"
    fc._set_attr(mood="calm")
    assert fc.attr("mood") == "calm"
    with pytest.raises(ValueError, match="Set Attr only accepts string values"):
        fc._set_attr(mood=1)


def test_attr_scope():
    with mx.attribute.AttrScope(ctx_group="dev1"):
        v = sym.var("v")
        fc = sym.FullyConnected(v, num_hidden=2, name="f")
    assert v.attr("__ctx_group__") == "dev1" and v.attr("ctx_group") == "dev1"
    assert fc.attr("__ctx_group__") == "dev1"
    assert sym.var("u").attr("__ctx_group__") is None


def test_group_indexing_and_internals():
    a, b = sym.var("a"), sym.var("b")
    g = sym.Group([a, b, a])
    assert g.list_outputs() == ["a", "b", "a"] and g.list_arguments() == ["a", "b"]
    assert g.name is None and repr(g) == "<Symbol group [a, b, a]>"
    assert g[1].name == "b" and g[-1].name == "a"
    assert g["b"].name == "b"
    assert [s.name for s in g[0:2]] == ["a", "b"]
    with pytest.raises(ValueError, match='Cannot find output that matches name "z"'):
        g["z"]
    with pytest.raises(ValueError, match="multiple outputs"):
        g["a"]
    with pytest.raises(IndexError):
        g[3]
    with pytest.raises(TypeError, match="integer index"):
        g[1.5]
    with pytest.raises(TypeError, match="Expected a list of symbols as input"):
        sym.Group([])
    with pytest.raises(TypeError, match="Expected a list of symbols as input"):
        sym.Group([a, 1])
    net = mlp()
    internals = net.get_internals()
    assert internals.list_outputs()[:5] == ["data", "fc1_weight", "fc1_bias", "fc1_output",
                                            "relu1_output"]
    fc1 = internals["fc1_output"]
    assert fc1.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert [c.name for c in fc1.get_children()] == ["data", "fc1_weight", "fc1_bias"]
    assert sym.var("x").get_children() is None


def test_dropout_mask_is_hidden():
    d = sym.Dropout(sym.var("x"), p=0.5, name="drop")
    assert d.list_outputs() == ["drop_output"]
    assert "drop_output" in d.get_internals().list_outputs()
    assert len(d.get_internals().list_outputs()) == 2


# ------------------------------------------------------------------------------ arithmetic


@pytest.mark.parametrize("expr,name", [
    (lambda a, b: a + b, "_plus"), (lambda a, b: a - b, "_minus"), (lambda a, b: a * b, "_mul"),
    (lambda a, b: a / b, "_div"), (lambda a, b: a ** b, "_power"),
    (lambda a, b: a + 2, "_plusscalar"), (lambda a, b: 2 - a, "_rminusscalar"),
    (lambda a, b: 2 * a, "_mulscalar"), (lambda a, b: -a, "_mulscalar"),
    (lambda a, b: a / 2, "_divscalar"), (lambda a, b: 2 / a, "_rdivscalar"),
    (lambda a, b: a ** 2, "_powerscalar"), (lambda a, b: 2 ** a, "_rpower_scalar"),
    (lambda a, b: abs(a), "abs"), (lambda a, b: a == b, "_equal"),
    (lambda a, b: a > 2, "_greater_scalar"), (lambda a, b: a < b, "_lesser"),
])
def test_arithmetic_names(expr, name):
    with mx.name.NameManager():
        s = expr(sym.var("a"), sym.var("b"))
    assert s.name == name + "0"


def test_arithmetic_values():
    a, b = sym.var("a"), sym.var("b")
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, 4.0, 2.0])
    expr = (a + b) * 2 - a / b + 2 ** a - (a ** 2) / 3 + 1 - (-b)
    out = expr.eval(ctx=mx.cpu(), a=mx.nd.array(x), b=mx.nd.array(y))[0].asnumpy()
    want = (x + y) * 2 - x / y + 2 ** x - (x ** 2) / 3 + 1 + y
    np.testing.assert_allclose(out, want, rtol=1e-5)
    cmp = ((a > b) + (a <= 2) + (a == b)).eval(ctx=mx.cpu(), a=mx.nd.array(x),
                                                 b=mx.nd.array(y))[0]
    np.testing.assert_array_equal(cmp.asnumpy(), (x > y) * 1.0 + (x <= 2) + (x == y))
    with pytest.raises(TypeError, match="type <class 'str'> not supported"):
        a + "x"


def test_symbol_symbol_arithmetic_does_not_broadcast():
    a, b = sym.var("a"), sym.var("b")
    with pytest.raises(MXNetError, match="_plus"):
        (a + b).eval(ctx=mx.cpu(), a=mx.nd.ones((2, 3)), b=mx.nd.ones((1, 3)))
    out = sym.broadcast_add(a, b).eval(ctx=mx.cpu(), a=mx.nd.ones((2, 3)), b=mx.nd.ones((1, 3)))
    np.testing.assert_array_equal(out[0].asnumpy(), np.full((2, 3), 2.0))


def test_module_level_power_maximum_minimum_hypot():
    a, b = sym.var("a"), sym.var("b")
    x, y = np.array([1.0, 4.0]), np.array([3.0, 2.0])
    ev = lambda s: s.eval(ctx=mx.cpu(), a=mx.nd.array(x), b=mx.nd.array(y))[0].asnumpy()  # noqa
    np.testing.assert_allclose(ev(sym.power(a, b)), x ** y)
    np.testing.assert_allclose(ev(sym.pow(a, 2) + 0 * b), x ** 2)
    np.testing.assert_allclose(ev(sym.maximum(a, b)), np.maximum(x, y))
    np.testing.assert_allclose(ev(sym.minimum(a, 2.0) + 0 * b), np.minimum(x, 2.0))
    np.testing.assert_allclose(ev(sym.hypot(a, b)), np.hypot(x, y), rtol=1e-6)


def test_ndarray_only_methods_raise():
    a = sym.var("a")
    with pytest.raises(NotImplementedForSymbol, match=r'__iadd__ \(namely operator "\+="\)'):
        a += 1
    with pytest.raises(NotImplementedForSymbol, match="asnumpy"):
        a.asnumpy()


def test_fluent_methods():
    a = sym.var("a")
    s = a.exp().sum(axis=1)
    x = np.array([[0.0, 1.0], [2.0, 3.0]])
    out = s.eval(ctx=mx.cpu(), a=mx.nd.array(x))[0].asnumpy()
    np.testing.assert_allclose(out, np.exp(x).sum(axis=1), rtol=1e-6)
    r = a.reshape((4,)).eval(ctx=mx.cpu(), a=mx.nd.array(x))[0].asnumpy()
    np.testing.assert_array_equal(r, x.reshape(4))
    t = a.transpose().flatten().expand_dims(axis=0).squeeze(axis=0)
    out = t.eval(ctx=mx.cpu(), a=mx.nd.array(x))[0].asnumpy()
    np.testing.assert_array_equal(out, x.T.reshape(2, 2))


# ------------------------------------------------------------------------------ inference


def test_infer_shape_keyword_and_positional():
    net = mlp()
    want = ([(5, 4), (8, 4), (8,), (3, 8), (3,), (5,)], [(5, 3)], [])
    assert net.infer_shape(data=(5, 4)) == want
    assert net.infer_shape((5, 4)) == want  # MXNet 1.9 broke the positional form
    assert net.infer_shape_partial() == ([()] * 6, [()], [])
    with pytest.warns(UserWarning, match="Cannot decide shape for the following arguments"):
        assert net.infer_shape() == (None, None, None)


def test_infer_shape_errors(capsys):
    net = mlp()
    with pytest.raises(TypeError, match="Arguments need to be shapes"):
        net.infer_shape(data=[5, 4])
    with pytest.raises(ValueError, match="either by positional or kwargs"):
        net.infer_shape((5, 4), data=(5, 4))
    with pytest.raises(MXNetError, match="InferShapeKeyword argument name bogus not found"):
        net.infer_shape(bogus=(1,))
    with pytest.raises(MXNetError, match=r"Error in operator fc1: Shape inconsistent, "
                                         r"Provided = \[9,4\], inferred shape=\(8, 4\)"):
        net.infer_shape(data=(5, 4), fc1_weight=(9, 4))
    assert "infer_shape error. Arguments:" in capsys.readouterr().out


def test_shape_attribute_takes_part_and_is_overridden():
    x = sym.var("x", shape=(2, 3))
    s = sym.FullyConnected(x, num_hidden=4, name="f")
    assert s.infer_shape()[1] == [(2, 4)]
    assert s.infer_shape(x=(7, 3))[1] == [(7, 4)]


def test_infer_type():
    net = mlp()
    arg, out, aux = net.infer_type(data="float64")
    assert arg == [np.float64] * 6 and out == [np.float64] and aux == []
    arg, out, _ = net.infer_type(np.float32)
    assert out == [np.float32]
    with pytest.raises(MXNetError, match="InferTypeKeyword argument name nope not found"):
        net.infer_type(nope="float32")


# ------------------------------------------------------------------------------ JSON and copies


def test_json_layout_and_round_trip(tmp_path):
    net = mlp()
    text = net.tojson()
    g = json.loads(text)
    assert [n["op"] for n in g["nodes"]] == ["null", "null", "null", "FullyConnected",
                                             "Activation", "null", "null", "FullyConnected",
                                             "null", "SoftmaxOutput"]
    assert g["arg_nodes"] == [0, 1, 2, 5, 6, 8]
    assert g["heads"] == [[9, 0, 0]]
    assert g["attrs"]["mxnet_version"] == ["int", 10901]
    assert g["nodes"][3]["attrs"] == {"num_hidden": "8"}
    assert g["nodes"][3]["inputs"] == [[0, 0, 0], [1, 0, 0], [2, 0, 0]]
    assert '"op": "null", \n' in text  # MXNet's separators
    back = sym.load_json(text)
    assert back.list_arguments() == net.list_arguments()
    assert back.tojson() == text
    f = str(tmp_path / "net.json")
    net.save(f)
    assert sym.load(f).tojson() == text
    with pytest.raises(TypeError, match="fname need to be string"):
        net.save(1)
    with pytest.raises(TypeError, match="fname need to be string"):
        sym.load(1)
    with pytest.raises(TypeError, match="fname required to be string"):
        sym.load_json(1)


HAND_WRITTEN = """{
  "nodes": [
    {"op": "null", "name": "x", "inputs": []},
    {"op": "null", "name": "w", "inputs": []},
    {"op": "dot", "name": "d", "param": {"transpose_b": "True"}, "inputs": [[0, 0, 0], [1, 0, 0]]},
    {"op": "tanh", "name": "t", "inputs": [[2, 0, 0]]}
  ],
  "arg_nodes": [0, 1],
  "heads": [[3, 0, 0]]
}"""


def test_hand_written_mxnet_json_loads_and_runs():
    s = sym.load_json(HAND_WRITTEN)
    assert s.list_arguments() == ["x", "w"] and s.list_outputs() == ["t_output"]
    x, w = np.random.rand(2, 3), np.random.rand(4, 3)
    out = s.eval(ctx=mx.cpu(), x=mx.nd.array(x), w=mx.nd.array(w))[0].asnumpy()
    np.testing.assert_allclose(out, np.tanh(x @ w.T), rtol=1e-5)


@pytest.mark.parametrize("text,msg", [
    ("{", "JSON"),
    ('{"nodes": [{"op": "Bogus", "name": "b", "inputs": []}], "arg_nodes": [], '
     '"heads": [[0, 0, 0]]}', "Bogus"),
    ('{"nodes": [{"op": "tanh", "name": "t", "inputs": [[5, 0, 0]]}], "arg_nodes": [], '
     '"heads": [[0, 0, 0]]}', "5"),
    ('{"nodes": [], "arg_nodes": [], "heads": [[0, 0, 0]]}', "head"),
])
def test_bad_json_raises(text, msg):
    with pytest.raises(MXNetError, match=msg):
        sym.load_json(text)


def test_copy_deepcopy_pickle():
    net = mlp()
    for other in (copy.copy(net), copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        assert other.tojson() == net.tojson()
        assert other.handle is not net.handle
    c = copy.copy(net)
    c._set_attr(mood="x")
    assert net.attr("mood") is None


def test_compose_by_call():
    data = sym.var("data")
    net1 = sym.FullyConnected(data, num_hidden=4, name="fc1")
    net2 = sym.FullyConnected(sym.var("fc3_data"), num_hidden=2, name="fc3")
    composed = net2(fc3_data=net1, name="composed")
    assert composed.name == "composed"
    assert composed.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc3_weight",
                                         "fc3_bias"]
    by_pos = net2(net1)
    assert by_pos.list_arguments()[:3] == ["data", "fc1_weight", "fc1_bias"]
    assert net2.list_arguments() == ["fc3_data", "fc3_weight", "fc3_bias"]  # unchanged
    with pytest.raises(TypeError, match="either as positional or keyword"):
        net2(net1, fc3_weight=net1)
    with pytest.raises(TypeError):
        net2(1)
    with pytest.raises(MXNetError, match="no argument named 'nope'"):
        net2(nope=net1)


def test_debug_str():
    s = sym.FullyConnected(sym.var("x"), num_hidden=4, name="fc")
    text = s.debug_str()
    for line in ["Symbol Outputs:", "\toutput[0]=fc(0)", "Variable:x", "--------------------",
                 "Op:FullyConnected, Name=fc", "Inputs:", "\targ[0]=x(0) version=0", "Attrs:",
                 "\tnum_hidden=4"]:
        assert line in text.split("\n"), line


def test_autograd_get_symbol_is_a_symbol():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.exp(x) * 2
    s = mx.autograd.get_symbol(y)
    assert isinstance(s, sym.Symbol)
    out = s.eval(ctx=mx.cpu(), **{s.list_arguments()[0]: x})[0]
    np.testing.assert_allclose(out.asnumpy(), np.exp([1.0, 2.0]) * 2, rtol=1e-6)
