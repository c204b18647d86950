"""Partial shape inference: unknown dimensions (0 in MXNet's legacy shapes) filled in from the
rest of the graph, forward and backward, until nothing changes. Expected shapes are derived by
hand from each op's shape rule (and agree with MXNet 1.9.1)."""

import warnings

import ferrograd as mx
import pytest
from ferrograd.base import MXNetError

sym = mx.sym


def arg_shapes(s, **known):
    args, _, _ = s.infer_shape(**known)
    return dict(zip(s.list_arguments(), args, strict=True))


def test_elementwise_add_joins_two_half_known_shapes():
    a = sym.var("a", shape=(0, 10))
    b = sym.var("b", shape=(12, 0))
    args, outs, _ = (a + b).infer_shape()
    assert args == [(12, 10), (12, 10)]
    assert outs == [(12, 10)]


def test_fully_connected_batch_comes_back_from_a_later_add():
    a = sym.var("a", shape=(0, 10))
    fc = sym.FullyConnected(data=a, num_hidden=21, name="fc")
    c = sym.var("c", shape=(5, 0))
    shapes = arg_shapes(fc + c)
    assert shapes == {"a": (5, 10), "fc_weight": (21, 10), "fc_bias": (21,), "c": (5, 21)}


def test_split_outputs_tell_the_input_its_other_dimensions():
    a = sym.var("a", shape=(0, 10))
    parts = sym.SliceChannel(data=a, num_outputs=10, axis=1, squeeze_axis=True)
    c = sym.var("c", shape=(5,))
    assert arg_shapes(parts[1] + c)["a"] == (5, 10)
    a = sym.var("a", shape=(0, 15, 0))
    parts = sym.SliceChannel(data=a, num_outputs=3, squeeze_axis=False)
    c = sym.var("c", shape=(3, 5, 2))
    # axis 1: 3 outputs of 5 each -> 15; the others come from c.
    assert arg_shapes(parts[1] + c)["a"] == (3, 15, 2)


def test_convolution_recovers_batch_and_stride_one_spatial_sizes():
    a = sym.var("a", shape=(0, 10, 0, 0))
    conv = sym.Convolution(data=a, num_filter=21, kernel=(3, 3), pad=(1, 1), name="conv")
    c = sym.var("c", shape=(5, 21, 32, 32))
    shapes = arg_shapes(conv + c)
    # stride 1, pad 1, kernel 3: input size = output size.
    assert shapes["a"] == (5, 10, 32, 32)
    assert shapes["conv_weight"] == (21, 10, 3, 3)


def test_convolution_with_stride_two_keeps_spatial_sizes_unknown():
    data = sym.var("data", shape=(1, 0, 0, 0))
    w = sym.var("weight")
    conv = sym.Convolution(data=sym.cast(data, dtype="float16"),
                           weight=sym.cast(w, dtype="float16"), pad=(3, 3), num_filter=64,
                           stride=(2, 2), no_bias=True, kernel=(7, 7))
    args, outs, _ = conv.infer_shape_partial()
    assert args == [(1, 0, 0, 0), (64, 0, 7, 7)]
    assert outs == [(1, 64, 0, 0)]


def test_concat_sums_the_joined_axis_and_shares_the_others():
    a = sym.var("a", shape=(0, 10))
    b = sym.var("b", shape=(0, 5))
    d = sym.var("d", shape=(2, 0))
    shapes = arg_shapes(d + sym.Concat(a, b, num_args=2, dim=1))
    assert shapes == {"d": (2, 15), "a": (2, 10), "b": (2, 5)}


@pytest.mark.parametrize("build,known,expected", [
    (lambda x, y: sym.dot(x, y), {"x": (0, 3, 4), "y": (4, 5)}, (0, 3, 5)),
    (lambda x, y: sym.batch_dot(x, y), {"x": (0, 3, 4), "y": (0, 4, 5)}, (0, 3, 5)),
    # batch_dot needs every matrix dimension.
    (lambda x, y: sym.batch_dot(x, y), {"x": (0, 3, 4), "y": (0, 0, 5)}, ()),
    (lambda x, y: sym.Embedding(data=x, weight=y, input_dim=100, output_dim=10),
     {"x": (0, 5), "y": (100, 10)}, (0, 5, 10)),
    (lambda x, y: sym.pick(x, y, axis=1), {"x": (0, 3, 3), "y": (0, 3)}, (0, 3)),
])
def test_outputs_keep_an_unknown_batch(build, known, expected):
    s = build(sym.var("x"), sym.var("y"))
    _, outs, _ = s.infer_shape_partial(**known)
    assert outs == [expected]


def test_transpose_moves_unknown_dimensions_with_their_axes():
    y = sym.transpose(sym.var("x"), axes=(0, 3, 2, 1))
    _, outs, _ = y.infer_shape_partial(x=(0, 3, 224, 225))
    assert outs == [(0, 225, 224, 3)]


def test_where_needs_a_known_condition():
    w = sym.where(sym.var("c"), sym.var("x"), sym.var("y"))
    _, outs, _ = w.infer_shape_partial(c=(0, 2), x=(0, 2), y=(0, 2))
    assert outs == [()]


def test_unknown_variable_is_an_empty_tuple_and_full_inference_gives_none():
    s = sym.sin(sym.var("data"))
    assert s.infer_shape_partial() == ([()], [()], [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert s.infer_shape() == (None, None, None)
    assert "Cannot decide shape" in str(caught[0].message)


def test_partially_known_inputs_leave_full_inference_undecided():
    data = sym.var("data")
    prev = sym.var("prev")
    out = sym.Activation(sym.elemwise_add(sym.FullyConnected(data, num_hidden=8, name="x2h"),
                                          sym.FullyConnected(prev, num_hidden=8, name="h2h")),
                         act_type="relu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert out.infer_shape(data=(4, 6)) == (None, None, None)
    args, outs, _ = out.infer_shape_partial(data=(4, 6))
    shapes = dict(zip(out.list_arguments(), args, strict=True))
    assert shapes["x2h_weight"] == (8, 6)
    # h2h's output is known, (4, 8), but FullyConnected infers nothing without its data's rank.
    assert shapes["prev"] == ()
    assert shapes["h2h_weight"] == ()
    assert outs == [(4, 8)]


def test_partial_weight_attribute_is_completed_from_the_data():
    w = sym.var("weight", shape=(128, 0))
    net = sym.FullyConnected(sym.var("data"), w, num_hidden=128)
    args, outs, _ = net.infer_shape(data=(10, 784))
    assert args == [(10, 784), (128, 784), (128,)]
    assert outs == [(10, 128)]


def test_conflicting_dimensions_name_the_operator():
    a = sym.var("a", shape=(0, 10))
    b = sym.var("b", shape=(12, 11))
    with pytest.raises(MXNetError, match="Shape inconsistent"):
        (a + b).infer_shape()


def test_numpy_shape_semantics_use_minus_one_and_none(monkeypatch):
    monkeypatch.setattr("ferrograd.symbol.symbol._is_np_shape", lambda: True)
    z = sym.dot(sym.var("x"), sym.var("y"))
    assert z.infer_shape_partial(x=(-1, 3, 4), y=(4, 5))[1] == [(-1, 3, 5)]
    b = sym.batch_dot(sym.var("x"), sym.var("y"))
    assert b.infer_shape_partial(x=(-1, 3, 4), y=(-1, -1, 5))[1] == [None]
    assert sym.sin(sym.var("d")).infer_shape_partial() == ([None], [None], [])
    # 0 is a real (empty) dimension here.
    assert sym.sin(sym.var("d")).infer_shape(d=(0, 3))[1] == [(0, 3)]
    assert '"is_np_shape": ["int", 1]' in sym.var("a").tojson()
