"""Module and symbol gaps MXNet 1.9 code relies on: type inference of a variable typed only by a
later consumer, ``var(shape=<int>)``, ``_square_sum``, ``contrib.SparseEmbedding``, executor
groups built from ``(name, shape)`` pairs, and a Module whose RNN states are inputs."""

import ferrograd as mx
import numpy as np
import pytest


def test_infer_type_reaches_a_variable_typed_by_a_later_step():
    # 'state' meets the shared weight before anything types it; the second FullyConnected types
    # the weight from x, and that type must flow back to the state.
    w, state, x = mx.sym.var("w"), mx.sym.var("state"), mx.sym.var("x")
    first = mx.sym.FullyConnected(state, weight=w, num_hidden=3, no_bias=True, name="a")
    second = mx.sym.FullyConnected(x, weight=w, num_hidden=3, no_bias=True, name="b")
    out = first + second
    args, outs, _ = out.infer_type(x="float16")
    assert dict(zip(out.list_arguments(), args, strict=True)) == {
        "state": np.float16, "w": np.float16, "x": np.float16}
    assert outs == [np.float16]


def test_infer_type_still_reports_an_undecidable_variable():
    lone = mx.sym.var("lone")
    out = mx.sym.Group([mx.sym.var("x") * 2, mx.sym.sin(lone)])
    with pytest.warns(UserWarning, match="lone"):
        assert out.infer_type(x="float32") == (None, None, None)
    args, _, _ = out.infer_type_partial(x="float32")
    assert args == [np.float32, None]


def test_var_int_shape_is_one_dimensional():
    bias = mx.sym.var("b", shape=3)
    assert bias.attr("__shape__") == "3"  # as MXNet stores it
    assert bias.infer_shape() == ([(3,)], [(3,)], [])
    out = mx.sym.broadcast_add(mx.sym.var("x"), bias)
    assert out.infer_shape(x=(2, 3)) == ([(2, 3), (3,)], [(2, 3)], [])
    assert mx.sym.var("c", shape=np.int64(4)).infer_shape()[0] == [(4,)]
    assert mx.sym.var("d", shape=[2, 5]).infer_shape()[0] == [(2, 5)]


@pytest.mark.parametrize("bad", ["abc", 2.5, (2.0, 3), True, [None, 2]])
def test_var_rejects_a_shape_that_is_not_ints(bad):
    with pytest.raises(TypeError, match="var: the shape of 'v'"):
        mx.sym.var("v", shape=bad)


def test_square_sum_ndarray_values_and_storage():
    x = np.array([[1.0, -2.0], [3.0, 4.0], [0.0, 0.0]], np.float32)
    rsp = mx.nd.array(x).tostype("row_sparse")
    rows = mx.nd._internal._square_sum(rsp, axis=1, keepdims=True)
    assert rows.stype == "row_sparse"
    np.testing.assert_allclose(rows.asnumpy(), [[5.0], [25.0], [0.0]])
    cols = mx.nd._internal._square_sum(rsp, axis=0)
    assert cols.stype == "default"
    np.testing.assert_allclose(cols.asnumpy(), [10.0, 20.0])
    dense = mx.nd._internal._square_sum(mx.nd.array(x))
    np.testing.assert_allclose(dense.asnumpy(), 30.0)


def test_square_sum_symbol_value_and_gradient():
    v = mx.sym.var("v")
    out = mx.sym._internal._square_sum(v, axis=1, keepdims=True)
    assert out.name.startswith("_square_sum")
    assert out.list_arguments() == ["v"]
    assert out.infer_shape(v=(3, 2)) == ([(3, 2)], [(3, 1)], [])
    x = np.array([[1.0, -2.0], [3.0, 4.0], [0.5, 0.0]], np.float32)
    exe = out.simple_bind(mx.cpu(), v=(3, 2))
    exe.arg_dict["v"][:] = x
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), (x * x).sum(1, keepdims=True))
    head = np.array([[1.0], [2.0], [3.0]], np.float32)
    exe.backward(mx.nd.array(head))
    np.testing.assert_allclose(exe.grad_dict["v"].asnumpy(), 2 * x * head)


def test_square_sum_symbol_needs_a_symbol():
    with pytest.raises(TypeError, match="_square_sum: data must be a Symbol"):
        mx.sym._internal._square_sum(mx.nd.ones((2, 2)))


def test_sparse_embedding_ndarray_rows():
    weight = mx.nd.arange(40).reshape((10, 4))
    out = mx.nd.contrib.SparseEmbedding(mx.nd.array([1, 3]), weight, input_dim=10, output_dim=4)
    np.testing.assert_allclose(out.asnumpy(), np.arange(40).reshape(10, 4)[[1, 3]])


def test_sparse_embedding_symbol_names_and_gradient():
    with mx.name.NameManager():
        auto = mx.sym.contrib.SparseEmbedding(mx.sym.var("d"), input_dim=10, output_dim=4)
    assert auto.name == "sparseembedding0"
    assert auto.list_arguments() == ["d", "sparseembedding0_weight"]
    emb = mx.sym.contrib.SparseEmbedding(mx.sym.var("d"), input_dim=5, output_dim=2, name="emb")
    assert emb.infer_shape(d=(3,))[0] == [(3,), (5, 2)]
    exe = emb.simple_bind(mx.cpu(), d=(3,))
    w = np.arange(10, dtype=np.float32).reshape(5, 2)
    exe.arg_dict["d"][:] = np.array([4, 0, 4])
    exe.arg_dict["emb_weight"][:] = w
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), w[[4, 0, 4]])
    exe.backward(mx.nd.ones((3, 2)))
    expected = np.zeros((5, 2), np.float32)
    expected[0], expected[4] = 1.0, 2.0  # row 4 was looked up twice
    np.testing.assert_allclose(exe.grad_dict["emb_weight"].asnumpy(), expected)


def test_sparse_embedding_symbol_needs_its_sizes():
    with pytest.raises(TypeError, match="SparseEmbedding: input_dim and output_dim"):
        mx.sym.contrib.SparseEmbedding(mx.sym.var("d"), output_dim=4)


def test_executor_group_accepts_name_shape_pairs():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    group = mx.mod.DataParallelExecutorGroup(
        net, [mx.cpu(0), mx.cpu(1)], [1, 1], [("data", (6, 3))], None,
        param_names=["fc_weight", "fc_bias"], for_training=True, inputs_need_grad=False)
    assert [e.arg_dict["data"].shape for e in group.execs] == [(3, 3), (3, 3)]
    assert group.grad_req == {"data": "null", "fc_weight": "write", "fc_bias": "write"}
    assert [d.name for d in group.data_shapes] == ["data"]


def _lstm_states_module():
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(num_hidden=4, prefix="l0_"))
    begin = stack.begin_state(func=mx.sym.Variable)
    _, states = stack.unroll(3, begin_state=begin, inputs=mx.sym.Variable("data"))
    mod = mx.mod.Module(mx.sym.Group(states), context=[mx.cpu(0), mx.cpu(1)],
                        label_names=None, state_names=[s.name for s in begin])
    mod.bind(data_shapes=[("data", (5, 3))], label_shapes=None, for_training=False)
    mod.init_params(initializer=mx.init.Constant(0.1))
    return mod


def test_module_with_rnn_states_binds_and_feeds_them_back():
    mod = _lstm_states_module()
    assert [e.arg_dict["l0_begin_state_0"].shape for e in mod._exec_group.execs] == [(2, 4),
                                                                                   (3, 4)]
    batch = mx.io.DataBatch(data=[mx.nd.zeros((5, 3))], label=[])
    mod.set_states(value=1)
    mod.forward(batch)
    h1, c1 = (o.asnumpy() for o in mod.get_outputs())
    # NumPy LSTM over the 3 steps from the bound parameters (gates in MXNet's order i, f, c, o).
    p = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    h, c = np.ones((5, 4)), np.ones((5, 4))
    sigmoid = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    for _ in range(3):
        pre = p["l0_i2h_bias"] + h @ p["l0_h2h_weight"].T + p["l0_h2h_bias"]  # x is 0
        i, f, g, o = np.split(pre, 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
    np.testing.assert_allclose(h1, h, rtol=1e-5)
    np.testing.assert_allclose(c1, c, rtol=1e-5)
    mod.set_states(states=mod.get_outputs(merge_multi_context=False))
    mod.forward(batch)
    h2 = mod.get_outputs()[0].asnumpy()
    assert not np.allclose(h1, h2, rtol=1e-3)


def test_gen_atomic_symbol_repeats_the_head_op_with_fresh_inputs():
    x = mx.sym.var("x")
    fc = mx.sym.FullyConnected(x * 2, num_hidden=3, name="fc")
    atom = fc._gen_atomic_symbol()
    assert atom.list_arguments() == ["_data", "_weight", "_bias"]
    assert atom.attr("num_hidden") == "3"
    assert atom.infer_shape(_data=(4, 5))[1] == [(4, 3)]
    rnn = mx.sym.RNN(mx.sym.var("data"), mx.sym.var("param"), mx.sym.var("h0"),
                     mx.sym.var("h1"), state_size=10, num_layers=2, bidirectional=True,
                     state_outputs=True, mode="lstm", name="rnn")
    atom = rnn._gen_atomic_symbol()
    assert len(atom.list_outputs()) == 3
    params = atom.attr_dict()[""]
    assert params["mode"] == "lstm" and params["num_layers"] == "2"


def test_gen_atomic_symbol_needs_one_op():
    with pytest.raises(mx.base.MXNetError, match="_gen_atomic_symbol: .* one op"):
        mx.sym.var("x")._gen_atomic_symbol()
    two = mx.sym.Group([mx.sym.var("a") + 1, mx.sym.var("b") * 2])
    with pytest.raises(mx.base.MXNetError, match="_gen_atomic_symbol"):
        two._gen_atomic_symbol()


def test_symbols_by_position_go_to_the_ops_own_inputs():
    x, w, b = mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("b")
    assert mx.sym.FullyConnected(x, w, b, 3, name="fc").list_arguments() == ["x", "w", "b"]
    assert mx.sym.FullyConnected(x, w, num_hidden=3, name="fc").list_arguments() == [
        "x", "w", "fc_bias"]
    with pytest.raises(mx.base.DTypeError, match="multiple values for argument 'weight'"):
        mx.sym.FullyConnected(x, w, weight=b, num_hidden=3)
