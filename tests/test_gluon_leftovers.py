"""Gluon/Module leftovers: the imperative block's cached parameter arrays, cpu(i) contexts,
Module ctx groups, ``nd.reset_arrays`` and the initializers ops give their variables on compose."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.base import MXNetError
from ferrograd.gluon import nn
from ferrograd.module.executor_group import _group_contexts


def _dense(units=3, in_units=4, **kwargs):
    net = nn.Dense(units, in_units=in_units, **kwargs)
    net.initialize(mx.init.Constant(0.5))
    return net


def _expected(x, w, b):
    return x @ w.T + b


# -- the cached parameter arrays of an imperative HybridBlock ------------------------------------

def test_repeated_calls_see_set_data_values():
    net = _dense()
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    first = net(mx.nd.array(x)).asnumpy()
    np.testing.assert_allclose(first, _expected(x, np.full((3, 4), 0.5), np.zeros(3)))
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    net.weight.set_data(mx.nd.array(w))
    net.bias.set_data(mx.nd.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(net(mx.nd.array(x)).asnumpy(), _expected(x, w, [1, 2, 3]))


def test_cast_and_force_reinit_replace_the_cached_arrays():
    net = _dense()
    x = mx.nd.ones((2, 4))
    net(x)
    net.cast("float64")
    out = net(mx.nd.ones((2, 4), dtype="float64"))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy(), np.full((2, 3), 2.0))
    net.cast("float32")
    net.initialize(mx.init.Constant(2.0), force_reinit=True)
    np.testing.assert_allclose(net(x).asnumpy(), np.full((2, 3), 8.0))


def test_grad_req_null_after_a_call_stops_gradients():
    net = _dense()
    x = mx.nd.ones((2, 4))
    with mx.autograd.record():
        net(x).sum().backward()
    np.testing.assert_allclose(net.weight.grad().asnumpy(), np.full((3, 4), 2.0))
    net.weight.grad_req = "null"
    net.bias.grad()[:] = 0
    with mx.autograd.record():
        net(x).sum().backward()
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        net.weight.grad()
    np.testing.assert_allclose(net.bias.grad().asnumpy(), np.full(3, 2.0))


def test_parameter_attribute_added_after_a_call_is_used():
    class Scale(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x, **params):
            for p in params.values():
                x = F.broadcast_mul(x, p)
            return x

    block = Scale()
    x = mx.nd.ones((2,))
    np.testing.assert_allclose(block(x).asnumpy(), [1, 1])
    block.k = block.params.get("k", shape=(1,), init=mx.init.Constant(3.0))
    block.k.initialize()
    np.testing.assert_allclose(block(x).asnumpy(), [3, 3])


def test_deferred_init_then_cached_calls():
    net = nn.Dense(2)
    net.initialize(mx.init.One())
    x = mx.nd.ones((3, 5))
    np.testing.assert_allclose(net(x).asnumpy(), np.full((3, 2), 5.0))
    assert net.weight.shape == (2, 5)
    np.testing.assert_allclose(net(x * 2).asnumpy(), np.full((3, 2), 10.0))


def test_parameter_on_another_context_is_still_refused():
    net = nn.Dense(2, in_units=2)
    net.initialize(ctx=mx.cpu(0))
    net(mx.nd.ones((1, 2)))
    with pytest.raises(RuntimeError, match=r"not initialized on context cpu\(1\)"):
        net(mx.nd.ones((1, 2), ctx=mx.cpu(1)))


def test_hooks_run_only_while_registered():
    net = _dense()
    seen = []
    pre = net.register_forward_pre_hook(lambda blk, inputs: seen.append(("pre", inputs[0].shape)))
    post = net.register_forward_hook(lambda blk, inputs, out: seen.append(("post", out.shape)))
    net(mx.nd.ones((2, 4)))
    assert seen == [("pre", (2, 4)), ("post", (2, 3))]
    pre.detach()
    post.detach()
    net(mx.nd.ones((2, 4)))
    assert len(seen) == 2


# -- cpu(i) contexts -------------------------------------------------------------------------------

def test_arrays_created_on_cpu_i_report_it():
    assert mx.nd.zeros((2,), ctx=mx.cpu(1)).context == mx.cpu(1)
    assert mx.nd.ones((2,), ctx=mx.cpu(3)).context == mx.cpu(3)
    assert mx.nd.zeros((2,), ctx=mx.cpu(0)).context == mx.cpu(0)


def test_hybridized_block_refuses_inputs_on_two_contexts():
    class Add(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, a, b):
            return a + b

    a, b = mx.nd.ones((3,), ctx=mx.cpu(1)), mx.nd.ones((3,), ctx=mx.cpu(2))
    imperative = Add()
    np.testing.assert_allclose(imperative(a, b).asnumpy(), [2, 2, 2])
    hybrid = Add()
    hybrid.hybridize()
    with pytest.raises(ValueError, match=r"one context only.*cpu\(1\).*cpu\(2\)"):
        hybrid(a, b)
    np.testing.assert_allclose(hybrid(a, mx.nd.ones((3,), ctx=mx.cpu(1))).asnumpy(), [2, 2, 2])


# -- Module ctx groups -----------------------------------------------------------------------------

def _grouped_symbol():
    with mx.AttrScope(ctx_group="dev1"):
        a = mx.sym.var("a") * 3
    with mx.AttrScope(ctx_group="dev2"):
        return a + mx.sym.var("b") * 5


def _input_grads(group2ctxs):
    mod = mx.mod.Module(_grouped_symbol(), context=[mx.cpu(0)], data_names=["a", "b"],
                        label_names=None, group2ctxs=group2ctxs)
    mod.bind(data_shapes=[("a", (2, 3)), ("b", (2, 3))], inputs_need_grad=True)
    mod.init_params()
    ones = mx.nd.ones((2, 3))
    mod.forward(mx.io.DataBatch(data=[ones, ones]), is_train=True)
    mod.backward([mx.nd.ones((2, 3))])
    return mod.get_input_grads()


def test_module_places_grouped_arguments_on_their_context():
    ga, gb = _input_grads({"dev1": mx.cpu(1), "dev2": mx.cpu(2)})
    assert (ga.context, gb.context) == (mx.cpu(1), mx.cpu(2))
    np.testing.assert_allclose(ga.asnumpy(), np.full((2, 3), 3.0))
    np.testing.assert_allclose(gb.asnumpy(), np.full((2, 3), 5.0))
    plain = _input_grads(None)
    assert plain[0].context == mx.cpu(0)
    np.testing.assert_allclose(plain[0].asnumpy(), ga.asnumpy())


def test_group_contexts_normalisation():
    c0, c1, c2 = mx.cpu(0), mx.cpu(1), mx.cpu(2)
    assert _group_contexts(None, 2) == [None, None]
    assert _group_contexts({"g": c1}, 2) == [{"g": c1}, {"g": c1}]
    assert _group_contexts({"g": [c1]}, 2) == [{"g": c1}, {"g": c1}]
    assert _group_contexts({"g": [c1, c2]}, 2) == [{"g": c1}, {"g": c2}]
    assert _group_contexts([{"g": c0}, {"g": c2}], 2) == [{"g": c0}, {"g": c2}]
    with pytest.raises(ValueError, match="one dict per context"):
        _group_contexts([{"g": c0}], 2)
    with pytest.raises(ValueError, match=r"group2ctxs\['g'\]: expected 1 or 2"):
        _group_contexts({"g": [c0, c1, c2]}, 2)
    with pytest.raises(TypeError, match="group2ctxs must be"):
        _group_contexts("cpu", 1)


# -- nd.reset_arrays -------------------------------------------------------------------------------

def test_reset_arrays_zeroes_every_array_in_place():
    a = mx.nd.array(np.arange(6).reshape(2, 3))
    b = mx.nd.ones((4,), dtype="float64")
    assert mx.nd.reset_arrays(a, b, num_arrays=2) == []
    np.testing.assert_array_equal(a.asnumpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(b.asnumpy(), np.zeros(4))
    assert b.dtype == np.float64


def test_reset_arrays_bad_input_changes_nothing():
    a, n = mx.nd.ones((2,)), mx.nd.ones((2,), dtype="int32")
    with pytest.raises(MXNetError, match="num_arrays=3 but 1 arrays"):
        mx.nd.reset_arrays(a, num_arrays=3)
    with pytest.raises(MXNetError, match="num_arrays is missing"):
        mx.nd.reset_arrays(a)
    with pytest.raises(TypeError, match="argument 1 has dtype int32"):
        mx.nd.reset_arrays(a, n, num_arrays=2)
    np.testing.assert_array_equal(a.asnumpy(), [1, 1])


# -- initializers given by ops on compose -----------------------------------------------------

def test_prelu_slope_starts_at_a_quarter():
    out = mx.sym.LeakyReLU(mx.sym.var("data"), act_type="prelu", name="act")
    assert out.attr_dict()["act_gamma"]["__init__"] == '["Constant", {"value": 0.25}]'
    mod = mx.mod.Module(out, label_names=None)
    mod.bind(data_shapes=[("data", (4, 6))])
    mod.init_params()
    np.testing.assert_array_equal(mod.get_params()[0]["act_gamma"].asnumpy(), np.full(6, 0.25))


def test_user_initializer_wins_and_leaky_has_no_gamma():
    gamma = mx.sym.var("g", init=mx.init.One())
    out = mx.sym.LeakyReLU(mx.sym.var("data"), gamma, act_type="prelu")
    mod = mx.mod.Module(out, label_names=None)
    mod.bind(data_shapes=[("data", (4, 6))])
    mod.init_params()
    np.testing.assert_array_equal(mod.get_params()[0]["g"].asnumpy(), np.ones(6))
    leaky = mx.sym.LeakyReLU(mx.sym.var("data"), act_type="leaky")
    assert leaky.list_arguments() == ["data"]


def test_batchnorm_moving_stats_initializers():
    out = mx.sym.BatchNorm(mx.sym.var("data"), name="bn")
    attrs = out.attr_dict()
    assert attrs["bn_moving_mean"]["__init__"] == '["zero", {}]'
    assert attrs["bn_moving_var"]["__init__"] == '["one", {}]'
    mod = mx.mod.Module(out, label_names=None)
    mod.bind(data_shapes=[("data", (2, 3, 2, 2))])
    mod.init_params(mx.init.Constant(7.0))
    aux = mod.get_params()[1]
    np.testing.assert_array_equal(aux["bn_moving_mean"].asnumpy(), np.zeros(3))
    np.testing.assert_array_equal(aux["bn_moving_var"].asnumpy(), np.ones(3))


# -- copies to cpu(i), multi-context training --------------------------------------------------

def test_copies_report_the_context_they_were_asked_for():
    a = mx.nd.array([1.0, 2.0])
    assert a.as_in_context(mx.cpu(0)) is a
    b = a.as_in_context(mx.cpu(2))
    assert b is not a and b.context == mx.cpu(2)
    np.testing.assert_array_equal(b.asnumpy(), [1, 2])
    assert b.as_in_context(mx.cpu(2)) is b
    assert a.copyto(mx.cpu(1)).context == mx.cpu(1)
    assert a.copyto(mx.cpu(0)).context == mx.cpu(0)
    target = mx.nd.zeros((2,), ctx=mx.cpu(3))
    assert a.copyto(target) is target and target.context == mx.cpu(3)
    with pytest.raises(MXNetError, match="CPU only"):
        a.as_in_context(mx.gpu(0))


def test_gradient_flows_through_a_copy_to_another_context():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = (x.as_in_context(mx.cpu(1)) ** 2).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2, 4, 6])


def _train(ctxs, kvstore, update_on_kvstore, rows=8):
    net = nn.Dense(3, in_units=4)
    net.initialize(mx.init.Constant(0.1), ctx=ctxs)
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd",
                               {"learning_rate": 0.5, "momentum": 0.9}, kvstore=kvstore,
                               update_on_kvstore=update_on_kvstore)
    x = mx.nd.array(np.arange(32, dtype=np.float32).reshape(8, 4)[:rows] / 10)
    y = mx.nd.array(np.arange(rows) % 3)
    loss_fn = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(3):
        xs = mx.gluon.utils.split_and_load(x, ctxs)
        ys = mx.gluon.utils.split_and_load(y, ctxs)
        assert [a.context for a in xs] == list(ctxs)
        with mx.autograd.record():
            losses = [loss_fn(net(a), b) for a, b in zip(xs, ys, strict=True)]
        for loss in losses:
            loss.backward()
        trainer.step(8)
    return [w.asnumpy() for w in net.weight.list_data()]


@pytest.mark.parametrize("kvstore,update_on_kvstore", [("device", None), ("local", True),
                                                       ("local", False)])
def test_two_cpu_contexts_train_as_one(kvstore, update_on_kvstore):
    (single,) = _train([mx.cpu(0)], kvstore, update_on_kvstore)
    both = _train([mx.cpu(0), mx.cpu(1)], kvstore, update_on_kvstore)
    assert not np.allclose(single, 0.1)  # training moved the weights
    for w in both:
        np.testing.assert_allclose(w, single, rtol=1e-5, atol=1e-6)


def test_without_a_kvstore_each_context_learns_from_its_own_half():
    # MXNet's kvstore=None: no aggregation, every context steps with its own gradients.
    both = _train([mx.cpu(0), mx.cpu(1)], None, None)
    (first_half,) = _train([mx.cpu(0)], None, None, rows=4)
    np.testing.assert_allclose(both[0], first_half, rtol=1e-5, atol=1e-6)
    assert not np.allclose(both[0], both[1])


# -- sym ops keep an explicit None that differs from the default (found by the fuzzer) ---------

@pytest.mark.parametrize("op,kwargs,expected", [
    ("sort", {}, [1, 2, 3, 4, 5, 6, 7, 8, 9]),
    ("argsort", {}, [1, 2, 0, 8, 7, 6, 4, 5, 3]),
    ("topk", {"k": 2}, [3, 5]),
])
def test_symbolic_axis_none_flattens_as_the_imperative_call(op, kwargs, expected):
    values = mx.nd.array([[3, 1, 2], [9, 7, 8], [6, 5, 4]])
    out = getattr(mx.sym, op)(mx.sym.var("x"), axis=None, **kwargs)
    assert out.attr_dict()[out.name]["axis"] == "None"
    assert out.infer_shape(x=(3, 3))[1] == [(len(expected),)]
    exe = out.simple_bind(mx.cpu(), x=(3, 3))
    exe.arg_dict["x"][:] = values
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), expected)
    np.testing.assert_array_equal(getattr(mx.nd, op)(values, axis=None, **kwargs).asnumpy(),
                                  expected)
    default = getattr(mx.sym, op)(mx.sym.var("x"), **kwargs)
    assert default.attr_dict()[default.name]["axis"] == "-1"
