"""Symbolic control flow: ``sym.contrib.foreach``, ``while_loop`` and ``cond`` as subgraph nodes.

Forward values against NumPy loops written here, gradients against central finite differences
and against the NDArray forms under autograd, inference through the bodies, the JSON round trip
(including the layout MXNet 1.9.1 writes), a hybridized Gluon block looping a cell with
``F.contrib.foreach``, and the errors for malformed bodies."""

import json
import os

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, gluon, nd
from ferrograd.base import MXNetError

sym = mx.sym
RNG = np.random.default_rng(7)


def _bind(out, values, grads=True):
    """Binds ``out`` on float64 copies of ``values`` (with gradient buffers)."""
    args = {k: nd.array(v, dtype="float64") for k, v in values.items()}
    names = out.list_arguments()
    args_grad = {k: nd.zeros(args[k].shape, dtype="float64") for k in names} if grads else None
    return out.bind(mx.cpu(), args={k: args[k] for k in names}, args_grad=args_grad)


def _forward(out, values):
    return [o.asnumpy() for o in _bind(out, values, grads=False).forward()]


def _gradients(out, values, head_grads):
    exe = _bind(out, values)
    exe.forward(is_train=True)
    exe.backward([nd.array(h, dtype="float64") for h in head_grads])
    return {k: exe.grad_dict[k].asnumpy() for k in out.list_arguments()}


def _finite_differences(out, values, head_grads, eps=1e-6):
    """d/dv sum_j <head_j, out_j(v)> for every argument, by central differences."""
    def objective(vals):
        return sum(float((o * h).sum()) for o, h in zip(_forward(out, vals), head_grads,
                                                         strict=True))
    grads = {}
    for name in out.list_arguments():
        base = np.asarray(values[name], dtype=np.float64)
        g = np.zeros_like(base)
        for i in np.ndindex(base.shape):
            plus, minus = base.copy(), base.copy()
            plus[i] += eps
            minus[i] -= eps
            up, down = objective({**values, name: plus}), objective({**values, name: minus})
            g[i] = (up - down) / (2 * eps)
        grads[name] = g
    return grads


def _heads(out, values):
    return [RNG.standard_normal(o.shape) for o in _forward(out, values)]


# -- foreach ---------------------------------------------------------------------------------


def _rnn_step(x, states, w, u):
    h = sym.tanh(sym.dot(x, w) + sym.dot(states[0], u))
    return h * 2, [h]


def _rnn_values():
    return {"x": RNG.standard_normal((4, 2, 3)), "h0": RNG.standard_normal((2, 5)),
            "w": RNG.standard_normal((3, 5)) * 0.5, "u": RNG.standard_normal((5, 5)) * 0.5}


def _rnn_numpy(v):
    h, outs = v["h0"], []
    for t in range(v["x"].shape[0]):
        h = np.tanh(v["x"][t] @ v["w"] + h @ v["u"])
        outs.append(h * 2)
    return np.stack(outs), h


def _rnn_symbol():
    w, u = sym.var("w"), sym.var("u")
    outs, states = sym.contrib.foreach(lambda x, s: _rnn_step(x, s, w, u), sym.var("x"),
                                       [sym.var("h0")])
    return outs, states


def test_foreach_forward_matches_a_numpy_loop_and_the_structure_is_mxnets():
    outs, states = _rnn_symbol()
    assert isinstance(outs, sym.Symbol) and isinstance(states, list) and len(states) == 1
    group = sym.Group([outs] + states)
    assert sorted(group.list_arguments()) == ["h0", "u", "w", "x"]
    assert len(group.list_outputs()) == 2 and group.list_outputs()[0].endswith("_output0")
    v = _rnn_values()
    got_outs, got_h = _forward(group, v)
    want_outs, want_h = _rnn_numpy(v)
    np.testing.assert_allclose(got_outs, want_outs, rtol=1e-12)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-12)


def test_foreach_list_outputs_and_multiple_data_keep_their_nesting():
    def body(xs, states):
        a, b = xs
        total = states[0] + a * b
        return [total, a - b], [total, states[1] * 2]

    outs, states = sym.contrib.foreach(body, [sym.var("a"), sym.var("b")],
                                       [sym.var("s"), sym.var("t")])
    assert isinstance(outs, list) and len(outs) == 2 and len(states) == 2
    a, b = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2))
    s, t = RNG.standard_normal(2), RNG.standard_normal(4)
    got = _forward(sym.Group(outs + states), {"a": a, "b": b, "s": s, "t": t})
    np.testing.assert_allclose(got[0], s + np.cumsum(a * b, axis=0), rtol=1e-12)
    np.testing.assert_allclose(got[1], a - b, rtol=1e-12)
    np.testing.assert_allclose(got[2], s + (a * b).sum(0), rtol=1e-12)
    np.testing.assert_allclose(got[3], t * 8, rtol=1e-12)


def test_multi_output_symbols_count_as_lists_of_their_outputs():
    halves = sym.split(sym.var("d"), num_outputs=2, axis=1)
    outs, states = sym.contrib.foreach(
        lambda x, st: (sym.split(x[0] + x[1] + st[0], num_outputs=2, axis=1), [st[0] * 2]),
        halves, [sym.var("s")])
    assert isinstance(outs, list) and len(outs) == 2
    d, s = RNG.standard_normal((3, 2, 2)), RNG.standard_normal((1, 2))
    got = _forward(sym.Group(outs + states), {"d": d, "s": s})
    rows = d[:, 0] + d[:, 1] + s * 2.0 ** np.arange(3)[:, None]
    np.testing.assert_allclose(got[0], rows[:, None, :1], rtol=1e-12)
    np.testing.assert_allclose(got[1], rows[:, None, 1:], rtol=1e-12)
    np.testing.assert_allclose(got[2], s * 8, rtol=1e-12)


def test_foreach_gradients_match_finite_differences_and_the_ndarray_form():
    outs, states = _rnn_symbol()
    group = sym.Group([outs] + states)
    v = _rnn_values()
    heads = _heads(group, v)
    got = _gradients(group, v, heads)
    want = _finite_differences(group, v, heads)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-8, err_msg=k)
    arrays = {k: nd.array(x, dtype="float64") for k, x in v.items()}
    for a in arrays.values():
        a.attach_grad()
    with autograd.record():
        def step(x, s):
            h = nd.tanh(nd.dot(x, arrays["w"]) + nd.dot(s[0], arrays["u"]))
            return h * 2, [h]
        o, st = nd.contrib.foreach(step, arrays["x"], [arrays["h0"]])
        loss = (o * nd.array(heads[0], dtype="float64")).sum() + \
            (st[0] * nd.array(heads[1], dtype="float64")).sum()
    loss.backward()
    for k, a in arrays.items():
        np.testing.assert_allclose(got[k], a.grad.asnumpy(), rtol=1e-10, err_msg=k)


def test_foreach_cuts_values_computed_outside_the_body_into_node_inputs():
    w = sym.var("w")
    scaled = w * 3  # computed once, outside the loop
    outs, _ = sym.contrib.foreach(lambda x, s: (x * scaled + s[0], [s[0] + 1]), sym.var("x"),
                                  [sym.var("s")])
    graph = json.loads(outs.tojson())
    node = [n for n in graph["nodes"] if n["op"] == "_foreach"][0]
    body_names = [n["name"] for n in node["subgraphs"][0]["nodes"]]
    assert any(n.endswith("_output") for n in body_names)  # the cut value, as a body input
    assert "_mulscalar" not in " ".join(n for n in body_names if not n.endswith("_output"))
    x, wv, s = RNG.standard_normal((3, 2)), RNG.standard_normal(2), RNG.standard_normal(2)
    got = _forward(outs, {"x": x, "w": wv, "s": s})[0]
    np.testing.assert_allclose(got, x * wv * 3 + s + np.arange(3)[:, None], rtol=1e-12)
    heads = _heads(outs, {"x": x, "w": wv, "s": s})
    g = _gradients(outs, {"x": x, "w": wv, "s": s}, heads)
    np.testing.assert_allclose(g["w"], 3 * (heads[0] * x).sum(0), rtol=1e-10)


def test_foreach_infers_shapes_and_types_through_the_body():
    outs, states = sym.contrib.foreach(
        lambda x, s: (sym.FullyConnected(x, num_hidden=4, name="fc") + s[0], [s[0] * 2]),
        sym.var("x"), [sym.var("s")])
    group = sym.Group([outs] + states)
    args, out_shapes, _ = group.infer_shape(x=(5, 2, 3), s=(2, 4))
    shapes = dict(zip(group.list_arguments(), args, strict=True))
    assert shapes == {"x": (5, 2, 3), "s": (2, 4), "fc_weight": (4, 3), "fc_bias": (4,)}
    assert out_shapes == [(5, 2, 4), (2, 4)]
    _, out_types, _ = group.infer_type(x="float64", s="float64")
    assert out_types == [np.float64, np.float64]
    exe = group.simple_bind(mx.cpu(), x=(5, 2, 3), s=(2, 4))
    assert [o.shape for o in exe.forward()] == [(5, 2, 4), (2, 4)]


def test_nested_foreach_matches_the_nested_ndarray_loops():
    w = sym.var("w")

    def outer(x, st):
        inner, inner_st = sym.contrib.foreach(lambda y, s2: (y * w + s2[0], [s2[0] + y]), x,
                                              [st[0]])
        return sym.sum(inner, axis=0), [inner_st[0] * 0.5]

    outs, states = sym.contrib.foreach(outer, sym.var("d"), [sym.var("s")])
    group = sym.Group([outs] + states)
    v = {"d": RNG.standard_normal((2, 3, 2)), "s": RNG.standard_normal(2),
         "w": RNG.standard_normal(2)}
    heads = _heads(group, v)
    got_out = _forward(group, v)
    got_grad = _gradients(group, v, heads)
    arrays = {k: nd.array(x, dtype="float64") for k, x in v.items()}
    for a in arrays.values():
        a.attach_grad()
    with autograd.record():
        def nd_outer(x, st):
            inner, inner_st = nd.contrib.foreach(
                lambda y, s2: (y * arrays["w"] + s2[0], [s2[0] + y]), x, [st[0]])
            return nd.sum(inner, axis=0), [inner_st[0] * 0.5]
        o, st = nd.contrib.foreach(nd_outer, arrays["d"], [arrays["s"]])
        loss = (o * nd.array(heads[0], dtype="float64")).sum() + \
            (st[0] * nd.array(heads[1], dtype="float64")).sum()
    loss.backward()
    np.testing.assert_allclose(got_out[0], o.asnumpy(), rtol=1e-12)
    np.testing.assert_allclose(got_out[1], st[0].asnumpy(), rtol=1e-12)
    for k, a in arrays.items():
        np.testing.assert_allclose(got_grad[k], a.grad.asnumpy(), rtol=1e-10, err_msg=k)


# -- while_loop ------------------------------------------------------------------------------


def _while_symbol(max_iterations=6):
    w = sym.var("w")
    return sym.contrib.while_loop(lambda i, s: i < 4,
                                  lambda i, s: ([s * w], [i + 1, sym.broadcast_add(s * w, i)]),
                                  [sym.var("i"), sym.var("s")], max_iterations=max_iterations)


def test_while_loop_pads_its_stacked_outputs_with_zeros_to_max_iterations():
    outs, (i, s) = _while_symbol()
    assert isinstance(outs, list) and len(outs) == 1
    group = sym.Group(outs + [i, s])
    assert group.infer_shape(i=(1,), s=(2,), w=(2,))[1] == [(6, 2), (1,), (2,)]
    iv, sv, wv = np.array([1.0]), np.array([0.5, -1.0]), np.array([1.5, 0.5])
    got = _forward(group, {"i": iv, "s": sv, "w": wv})
    rows, cur_i, cur_s = [], iv.copy(), sv.copy()
    while cur_i[0] < 4:
        rows.append(cur_s * wv)
        cur_i, cur_s = cur_i + 1, cur_s * wv + cur_i
    want = np.concatenate([np.stack(rows), np.zeros((6 - len(rows), 2))])
    np.testing.assert_allclose(got[0], want, rtol=1e-12)
    np.testing.assert_allclose(got[1], cur_i, rtol=1e-12)
    np.testing.assert_allclose(got[2], cur_s, rtol=1e-12)
    # max_iterations stops the loop before cond does.
    outs2, (i2, _) = _while_symbol(max_iterations=2)
    assert _forward(i2, {"i": iv, "s": sv, "w": wv})[0].tolist() == [3.0]


def test_while_loop_gradients_match_finite_differences_and_the_ndarray_form():
    outs, (i, s) = _while_symbol()
    group = sym.Group(outs + [s])
    v = {"i": np.array([1.0]), "s": np.array([0.5, -1.0]), "w": np.array([1.5, 0.5])}
    heads = _heads(group, v)
    got = _gradients(group, v, heads)
    want = _finite_differences(group, v, heads)
    for k in ("s", "w"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-8, err_msg=k)
    arrays = {k: nd.array(x, dtype="float64") for k, x in v.items()}
    for a in arrays.values():
        a.attach_grad()
    with autograd.record():
        o, (_, fs) = nd.contrib.while_loop(
            lambda i, s: i < 4, lambda i, s: ([s * arrays["w"]],
                          [i + 1, nd.broadcast_add(s * arrays["w"], i)]),
            [arrays["i"], arrays["s"]], max_iterations=6)
        loss = (o[0] * nd.array(heads[0], dtype="float64")).sum() + \
            (fs * nd.array(heads[1], dtype="float64")).sum()
    loss.backward()
    for k in ("s", "w"):
        np.testing.assert_allclose(got[k], arrays[k].grad.asnumpy(), rtol=1e-10, err_msg=k)


def test_while_loop_single_variable_and_no_step_outputs_follow_mxnets_structure():
    outs, final = sym.contrib.while_loop(lambda x: x < 10, lambda x: (None, x * 2), sym.var("x"),
                                         max_iterations=10)
    assert outs == [] and isinstance(final, sym.Symbol)
    assert _forward(final, {"x": np.array([3.0])})[0].tolist() == [12.0]
    outs, final = sym.contrib.while_loop(lambda x: x < 10, lambda x: (x + 1, x * 2), sym.var("x"),
                                         max_iterations=3)
    assert isinstance(outs, sym.Symbol) and isinstance(final, sym.Symbol)
    np.testing.assert_array_equal(_forward(outs, {"x": np.array([3.0])})[0].ravel(), [4, 7, 0])


# -- cond ------------------------------------------------------------------------------------


def _cond_symbol():
    a, b = sym.var("a"), sym.var("b")
    return sym.contrib.cond(sym.sum(a) > sym.sum(b), lambda: [a * b, a + 1], lambda: [b - a, b * 3])


def test_cond_runs_the_chosen_branch_and_sends_gradients_through_it():
    r = _cond_symbol()
    assert isinstance(r, list) and len(r) == 2
    group = sym.Group(r)
    for a, b in [(np.array([3.0, 1.0]), np.array([0.5, 0.2])),
                 (np.array([-3.0, 1.0]), np.array([0.5, 0.2]))]:
        v = {"a": a, "b": b}
        got = _forward(group, v)
        want = [a * b, a + 1] if a.sum() > b.sum() else [b - a, b * 3]
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12)
        heads = _heads(group, v)
        grads = _gradients(group, v, heads)
        fd = _finite_differences(group, v, heads)
        for k in ("a", "b"):
            np.testing.assert_allclose(grads[k], fd[k], rtol=1e-6, atol=1e-8)
    single = sym.contrib.cond(sym.var("p"), lambda: sym.var("a") * 2, lambda: sym.var("a") * 5)
    assert isinstance(single, sym.Symbol)
    assert _forward(single, {"p": np.array([0.0]), "a": np.array([1.0])})[0].tolist() == [5.0]


def test_cond_infers_through_both_branches():
    group = sym.Group(_cond_symbol())
    assert group.infer_shape(a=(2, 3), b=(2, 3))[1] == [(2, 3), (2, 3)]
    a = sym.var("a")
    bad = sym.contrib.cond(sym.var("p"), lambda: a * 2, lambda: sym.concat(a, a, dim=0))
    with pytest.raises(MXNetError, match="then-branch"):
        bad.infer_shape(p=(1,), a=(2,))


# -- JSON ------------------------------------------------------------------------------------


def test_json_round_trip_keeps_the_subgraphs_and_the_values():
    outs, states = _rnn_symbol()
    group = sym.Group([outs] + states)
    text = group.tojson()
    node = [n for n in json.loads(text)["nodes"] if n["op"] == "_foreach"][0]
    assert set(node["attrs"]) >= {"in_data_locs", "in_state_locs", "remain_locs", "num_args",
                                  "num_out_data", "num_outputs"}
    assert len(node["subgraphs"]) == 1 and "mxnet_version" not in json.dumps(node["subgraphs"])
    loaded = sym.load_json(text)
    assert loaded.tojson() == text
    v = _rnn_values()
    for a, b in zip(_forward(loaded, v), _forward(group, v), strict=True):
        np.testing.assert_array_equal(a, b)
    for r in (sym.Group(_cond_symbol()), sym.Group(_while_symbol()[0])):
        assert sym.load_json(r.tojson()).tojson() == r.tojson()


# The graph MXNet 1.9.1 writes for foreach(lambda x, st: (x * st[0] + w, [(x * st[0] + w) * 2]),
# data, [s]) (attributes and layout as MXNet prints them).
MXNET_FOREACH_JSON = """{"nodes": [
 {"op": "null", "name": "data", "inputs": []},
 {"op": "null", "name": "s", "inputs": []},
 {"op": "null", "name": "w", "inputs": []},
 {"op": "_foreach", "name": "_foreach0",
  "attrs": {"in_data_locs": "[0]", "in_state_locs": "[1]", "num_args": "4", "num_out_data": "1",
            "num_outputs": "2", "remain_locs": "[2]"},
  "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]],
  "subgraphs": [{"nodes": [
     {"op": "null", "name": "data-0", "attrs": {"__subgraph_name__": "foreach0"}, "inputs": []},
     {"op": "null", "name": "s-0", "attrs": {"__subgraph_name__": "foreach0"}, "inputs": []},
     {"op": "elemwise_mul", "name": "_mul0", "attrs": {"__subgraph_name__": "foreach0"},
      "inputs": [[0, 0, 0], [1, 0, 0]]},
     {"op": "null", "name": "w", "inputs": []},
     {"op": "elemwise_add", "name": "_plus0", "attrs": {"__subgraph_name__": "foreach0"},
      "inputs": [[2, 0, 0], [3, 0, 0]]},
     {"op": "_mul_scalar", "name": "_mulscalar0",
      "attrs": {"__subgraph_name__": "foreach0", "scalar": "2"}, "inputs": [[4, 0, 0]]}],
    "arg_nodes": [0, 1, 3], "node_row_ptr": [0, 1, 2, 3, 4, 5, 6],
    "heads": [[4, 0, 0], [5, 0, 0]]}]}],
 "arg_nodes": [0, 1, 2], "node_row_ptr": [0, 1, 2, 3, 5], "heads": [[3, 0, 0], [3, 1, 0]],
 "attrs": {"mxnet_version": ["int", 10901]}}"""


def test_mxnet_written_foreach_json_loads_and_runs():
    loaded = sym.load_json(MXNET_FOREACH_JSON)
    assert loaded.list_arguments() == ["data", "s", "w"]
    assert loaded.list_outputs() == ["_foreach0_output0", "_foreach0_output1"]
    assert loaded.infer_shape(data=(3, 2), s=(2,), w=(2,))[1] == [(3, 2), (2,)]
    d, s, w = RNG.standard_normal((3, 2)), RNG.standard_normal(2), RNG.standard_normal(2)
    outs, state = _forward(loaded, {"data": d, "s": s, "w": w})
    rows, cur = [], s
    for t in range(3):
        o = d[t] * cur + w
        rows.append(o)
        cur = o * 2
    np.testing.assert_allclose(outs, np.stack(rows), rtol=1e-12)
    np.testing.assert_allclose(state, cur, rtol=1e-12)


def _mxnet_cases():
    path = os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_control_flow.json")
    with open(path) as f:
        return json.load(f)


@pytest.mark.parametrize("case", _mxnet_cases(), ids=lambda c: c["name"])
def test_graphs_mxnet_wrote_give_mxnets_values_and_gradients(case):
    graph = sym.load_json(case["json"])
    dtype = case["dtype"]
    args = {k: nd.array(np.array(v), dtype=dtype) for k, v in case["inputs"].items()}
    grads = {k: nd.zeros(a.shape, dtype=dtype) for k, a in args.items()}
    exe = graph.bind(mx.cpu(), args=args, args_grad=grads)
    outs = exe.forward(is_train=True)
    exe.backward([nd.array(np.array(h), dtype=dtype) for h in case["heads"]])
    tol = {"rtol": 1e-10, "atol": 1e-12} if dtype == "float64" else {"rtol": 1e-5, "atol": 1e-6}
    for j, (got, want) in enumerate(zip(outs, case["outputs"], strict=True)):
        got, want = got.asnumpy(), np.array(want)
        if "steps" in case and j == 0:  # MXNet's padding rows are uninitialised
            np.testing.assert_array_equal(got[case["steps"]:], 0)
            got, want = got[:case["steps"]], want[:case["steps"]]
        np.testing.assert_allclose(got, want, **tol)
    for k, want in case["grads"].items():
        np.testing.assert_allclose(grads[k].asnumpy(), np.array(want), **tol, err_msg=k)


# -- Gluon -----------------------------------------------------------------------------------


class _LoopedCell(gluon.HybridBlock):
    """A tanh RNN cell run over the time axis with ``F.contrib.foreach``."""

    def __init__(self, hidden, inputs, **kwargs):
        super().__init__(**kwargs)
        self.hidden = hidden
        with self.name_scope():
            self.i2h = self.params.get("i2h_weight", shape=(hidden, inputs))
            self.h2h = self.params.get("h2h_weight", shape=(hidden, hidden))

    def hybrid_forward(self, F, x, h0, i2h, h2h):  # noqa: N803 - Gluon's argument name
        def step(xt, states):
            h = F.tanh(F.FullyConnected(xt, i2h, num_hidden=self.hidden, no_bias=True)
                       + F.FullyConnected(states[0], h2h, num_hidden=self.hidden, no_bias=True))
            return h, [h]
        outs, states = F.contrib.foreach(step, x, [h0])
        return outs, states[0]


def test_hybridized_foreach_block_matches_the_imperative_run():
    x = nd.array(RNG.standard_normal((5, 2, 4)))
    h0 = nd.array(RNG.standard_normal((2, 3)))
    results = []
    for hybridize in (False, True):
        net = _LoopedCell(3, 4, prefix="cell_")
        net.initialize()
        for p, value in zip(net.collect_params().values(),
                            (np.linspace(-1, 1, 12).reshape(3, 4), np.eye(3) * 0.5), strict=True):
            p.set_data(nd.array(value))
        if hybridize:
            net.hybridize()
        xs, hs = x.copy(), h0.copy()
        xs.attach_grad()
        hs.attach_grad()
        with autograd.record():
            outs, h = net(xs, hs)
            loss = (outs * outs).sum() + h.sum()
        loss.backward()
        grads = [p.grad().asnumpy() for p in net.collect_params().values()]
        results.append((outs.asnumpy(), h.asnumpy(), xs.grad.asnumpy(), hs.grad.asnumpy(), grads))
    (o1, h1, gx1, gh1, gp1), (o2, h2, gx2, gh2, gp2) = results
    np.testing.assert_allclose(o2, o1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h2, h1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gx2, gx1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gh2, gh1, rtol=1e-5, atol=1e-6)
    for a, b in zip(gp2, gp1, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert np.abs(gp1[0]).sum() > 0


class _Doubling(gluon.HybridBlock):
    """Doubles its input while its sum stays below 10, with ``F.contrib.while_loop``."""

    def hybrid_forward(self, F, x):  # noqa: N803 - Gluon's argument name
        return F.contrib.while_loop(lambda v: F.sum(v) < 10, lambda v: (v * 1, v * 2), x,
                                    max_iterations=5)


def test_hybridized_while_loop_block_matches_the_imperative_run():
    results = []
    for hybridize in (False, True):
        net = _Doubling()
        if hybridize:
            net.hybridize()
        x = nd.array([1.0, 2.0])
        x.attach_grad()
        with autograd.record():
            outs, final = net(x)
            (outs.sum() + final.sum()).backward()
        results.append((outs.asnumpy(), final.asnumpy(), x.grad.asnumpy()))
    for got in results:
        np.testing.assert_array_equal(got[0], [[1, 2], [2, 4], [0, 0], [0, 0], [0, 0]])
        np.testing.assert_array_equal(got[1], [4, 8])
        np.testing.assert_array_equal(got[2], [7, 7])  # 1 + 2 from the rows, 4 from the final


# -- bad input -------------------------------------------------------------------------------


def test_malformed_bodies_give_mxnets_errors():
    d, s = sym.var("d"), sym.var("s")
    with pytest.raises(AssertionError, match="foreach loop_vars must be"):
        sym.contrib.foreach(lambda x, st: (x + 1, 5), d, [s])
    with pytest.raises(AssertionError, match="different format"):
        sym.contrib.foreach(lambda x, st: (x + 1, [st[0], st[0]]), d, [s])
    with pytest.raises(AssertionError, match="data arrays have to be used"):
        sym.contrib.foreach(lambda x, st: (st[0] + 1, st), d, [s])
    with pytest.raises(AssertionError, match="foreach input must be"):
        sym.contrib.foreach(lambda x, st: (x, st), 3, [s])
    with pytest.raises(ValueError, match="body must return a pair"):
        sym.contrib.foreach(lambda x, st: x + 1, d, [s])
    with pytest.raises(ValueError, match="max_iterations should be specified"):
        sym.contrib.while_loop(lambda i: i < 3, lambda i: (i, i + 1), [s])
    with pytest.raises(ValueError, match="number of loop_vars should be consistent"):
        sym.contrib.while_loop(lambda i: i < 3, lambda i: (i, [i + 1, i]), [s], max_iterations=3)
    with pytest.raises(ValueError, match="Return of cond must be a Symbol"):
        sym.contrib.while_loop(lambda i: 3, lambda i: (i, [i + 1]), [s], max_iterations=3)
    with pytest.raises(ValueError, match="at least one element"):
        sym.contrib.while_loop(lambda i: i < 3, lambda i: (i, []), [], max_iterations=3)
    with pytest.raises(ValueError, match="2-th loop_var doesn't involve"):
        sym.contrib.while_loop(lambda i, j: i < 3, lambda i, j: (i, [i + 1, i * 2]), [s, d],
                               max_iterations=3)
    with pytest.raises(ValueError, match="Number of outputs differs"):
        sym.contrib.cond(d > s, lambda: [d, s], lambda: d)


def test_loop_states_that_change_shape_are_refused_at_inference():
    outs, states = sym.contrib.foreach(
        lambda x, st: (x, [sym.concat(st[0], st[0], dim=0)]), sym.var("d"), [sym.var("s")])
    group = sym.Group([outs] + states)
    with pytest.raises(MXNetError, match=r"_foreach.*state 0 of shape \(2,\) into shape \(4,\)"):
        group.infer_shape(d=(3, 2), s=(2,))
    _, final = sym.contrib.while_loop(lambda i: i < 3, lambda i: (None, [sym.concat(i, i, dim=0)]),
                                      [sym.var("i")], max_iterations=3)
    with pytest.raises(MXNetError, match=r"loop variable 0 of shape \(1,\) into shape \(2,\)"):
        final[0].infer_shape(i=(1,))
    wide = sym.contrib.cond(sym.var("p"), lambda: sym.var("a") * 2, lambda: sym.var("a") * 3)
    with pytest.raises(MXNetError, match=r"_cond: pred must give one element, got shape \(2,\)"):
        wide.infer_shape(p=(2,), a=(2,))
    _, final = sym.contrib.while_loop(lambda v: v > 0, lambda v: (None, v - 1), sym.var("v"),
                                      max_iterations=3)
    with pytest.raises(MXNetError, match=r"_while_loop: cond must give one element"):
        final.infer_shape(v=(3,))
    with pytest.raises(MXNetError, match="same length along axis 0"):
        two, _ = sym.contrib.foreach(lambda xs, st: (xs[0] + xs[1], st), [sym.var("a"),
                                                                           sym.var("b")],
                                     [sym.var("s")])
        two.infer_shape(a=(3, 2), b=(4, 2), s=(2,))


def test_malformed_control_flow_json_is_refused_with_the_node_named():
    graph = json.loads(MXNET_FOREACH_JSON)
    node = graph["nodes"][3]
    no_body = json.loads(json.dumps(graph))
    del no_body["nodes"][3]["subgraphs"]
    with pytest.raises(MXNetError, match="node '_foreach0' \\(_foreach\\) has no 'subgraphs'"):
        sym.load_json(json.dumps(no_body))
    node["attrs"]["in_data_locs"] = "[7]"
    with pytest.raises(MXNetError, match="in_data_locs.*outside the 3 body inputs"):
        sym.load_json(json.dumps(graph))
    node["attrs"]["in_data_locs"] = "[0]"
    node["attrs"]["num_outputs"] = "3"
    with pytest.raises(MXNetError, match="the body gives 2 outputs"):
        sym.load_json(json.dumps(graph))
