"""gluon.Block / HybridBlock and the basic nn layers: names, reprs, forward values, gradients,
deferred init, hooks, thread-local scopes and bad input."""

import threading
import warnings

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import gluon
from ferrograd.gluon import nn


class ScaledMLP(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.a = nn.Dense(4, in_units=3)
            self.b = nn.Dense(2)
            self.c = self.params.get("scale", shape=(1,), init="ones")

    def hybrid_forward(self, F, x, c):
        return F.broadcast_mul(self.b(self.a(x)), c)


def test_names_repr_and_collect_params():
    net = ScaledMLP(prefix="my_")
    assert net.prefix == "my_" and net.name == "my"
    assert repr(net) == ("ScaledMLP(\n  (a): Dense(3 -> 4, linear)\n"
                         "  (b): Dense(None -> 2, linear)\n)")
    assert list(net.collect_params().keys()) == [
        "my_scale", "my_dense0_weight", "my_dense0_bias", "my_dense1_weight", "my_dense1_bias"]
    assert list(net.collect_params(".*weight").keys()) == ["my_dense0_weight", "my_dense1_weight"]
    assert net.b.weight.shape == (2, 0)


def test_automatic_top_level_names_count_up():
    with mx.name.NameManager():
        first, second = nn.Dense(2), nn.Dense(3)
        assert (first.prefix, second.prefix) == ("dense0_", "dense1_")
        assert first.weight.name == "dense0_weight" and first.bias.name == "dense0_bias"
        seq = nn.HybridSequential()
        with seq.name_scope():
            seq.add(nn.Dense(2, activation="relu"), nn.Dropout(0.5), nn.Flatten(),
                    nn.LeakyReLU(0.1), nn.Activation("tanh"))
    assert seq[0].act.prefix == "hybridsequential0_dense0_relu_"
    assert repr(seq) == ("HybridSequential(\n  (0): Dense(None -> 2, Activation(relu))\n"
                         "  (1): Dropout(p = 0.5, axes=())\n  (2): Flatten\n"
                         "  (3): LeakyReLU(0.1)\n  (4): Activation(tanh)\n)")
    assert len(seq) == 5 and isinstance(seq[1:3], nn.HybridSequential)


def test_forward_values_and_gradients_against_numpy():
    net = ScaledMLP()
    net.initialize(mx.init.Xavier())
    x_np = np.random.RandomState(0).randn(5, 3).astype(np.float32)
    x = mx.nd.array(x_np)
    net.c.set_data(mx.nd.array([2.0]))
    with mx.autograd.record():
        out = net(x)
    out.backward(mx.nd.ones_like(out))
    w1, b1 = net.a.weight.data().asnumpy(), net.a.bias.data().asnumpy()
    w2, b2 = net.b.weight.data().asnumpy(), net.b.bias.data().asnumpy()
    assert w2.shape == (2, 4)  # deferred in_units resolved at first forward
    h = x_np @ w1.T + b1
    expected = 2.0 * (h @ w2.T + b2)
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-5)
    # d(sum out)/d w2 = 2 * ones^T h ; d/d b2 = 2 * N ; d/d scale = sum(h w2^T + b2)
    np.testing.assert_allclose(net.b.weight.grad().asnumpy(),
                               2.0 * np.ones((5, 2)).T @ h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(net.b.bias.grad().asnumpy(), [10.0, 10.0], rtol=1e-6)
    np.testing.assert_allclose(net.c.grad().asnumpy(), [(h @ w2.T + b2).sum()], rtol=1e-4)
    np.testing.assert_allclose(net.a.weight.grad().asnumpy(),
                               (2.0 * np.ones((5, 2)) @ w2).T @ x_np, rtol=1e-4, atol=1e-5)


def test_dense_flatten_false_and_activation():
    layer = nn.Dense(3, activation="tanh", flatten=False, in_units=4,
                     weight_initializer=mx.init.Constant(0.1))
    layer.initialize()
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 24
    out = layer(mx.nd.array(x)).asnumpy()
    assert out.shape == (2, 3, 3)
    np.testing.assert_allclose(out, np.tanh(x @ np.full((4, 3), 0.1)), rtol=1e-5)
    flat = nn.Dense(3, use_bias=False)
    flat.initialize(mx.init.One())
    assert flat.bias is None
    np.testing.assert_allclose(flat(mx.nd.array(x)).asnumpy(), np.repeat(
        x.reshape(2, 12).sum(1, keepdims=True), 3, 1), rtol=1e-5)
    assert flat.weight.shape == (3, 12)


def test_sequential_activation_leaky_flatten_lambda_identity():
    x_np = np.array([[-2.0, -0.5], [0.5, 3.0]], dtype=np.float32)
    x = mx.nd.array(x_np)
    np.testing.assert_allclose(nn.LeakyReLU(0.1)(x).asnumpy(), np.where(x_np > 0, x_np, 0.1 * x_np))
    np.testing.assert_allclose(nn.Activation("sigmoid")(x).asnumpy(), 1 / (1 + np.exp(-x_np)),
                               rtol=1e-6)
    assert nn.Flatten()(mx.nd.ones((2, 3, 4))).shape == (2, 12)
    np.testing.assert_array_equal(nn.Identity()(x).asnumpy(), x_np)
    np.testing.assert_allclose(nn.Lambda("tanh")(x).asnumpy(), np.tanh(x_np), rtol=1e-6)
    np.testing.assert_allclose(nn.HybridLambda(lambda F, v: F.relu(v) * 2)(x).asnumpy(),
                               np.maximum(x_np, 0) * 2)
    np.testing.assert_allclose(nn.HybridLambda("exp")(x).asnumpy(), np.exp(x_np), rtol=1e-6)
    seq = nn.Sequential()
    seq.add(nn.Lambda(lambda v: v * 3), nn.Activation("relu"))
    np.testing.assert_allclose(seq(x).asnumpy(), np.maximum(3 * x_np, 0))
    assert repr(nn.Lambda("tanh")) == "Lambda(tanh)"


def test_dropout_training_vs_inference():
    x = mx.nd.ones((200, 50))
    drop = nn.Dropout(0.5)
    np.testing.assert_array_equal(drop(x).asnumpy(), x.asnumpy())
    with mx.autograd.record():
        y = drop(x).asnumpy()
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 0.4 < (y == 0).mean() < 0.6


def test_forward_before_initialize_and_deferred_access():
    net = nn.Dense(2)
    with pytest.raises(RuntimeError, match="has not been initialized. Note that you should"):
        net(mx.nd.ones((1, 3)))
    net.initialize()
    with pytest.raises(gluon.DeferredInitializationError):
        net.weight.data()
    net(mx.nd.ones((1, 3)))
    assert net.weight.shape == (2, 3)


def test_bad_input_errors():
    layer = nn.Dense(2, in_units=3)
    layer.initialize()
    with pytest.raises(mx.MXNetError, match="FullyConnected"):
        layer(mx.nd.ones((1, 4)))
    with pytest.raises(ValueError, match="at least one NDArray or Symbol"):
        layer([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="Children of HybridBlock must also be HybridBlock"):
        nn.HybridSequential().add(nn.Sequential())
    with pytest.raises(mx.MXNetError, match="nope"):
        nn.Lambda("nope")
    with pytest.raises(ValueError, match="alpha"):
        nn.LeakyReLU(-1)
    block = gluon.Block()
    block.child = nn.Dense(1)
    with pytest.raises(TypeError, match="Changing attribute type"):
        block.child = 3


def test_hooks_and_apply():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(2, in_units=2), nn.Activation("relu"))
    net.initialize()
    seen = []
    pre = net.register_forward_pre_hook(lambda blk, inputs: seen.append(("pre", inputs[0].shape)))
    post = net.register_forward_hook(lambda blk, inputs, out: seen.append(("post", out.shape)))
    net(mx.nd.ones((3, 2)))
    assert seen == [("pre", (3, 2)), ("post", (3, 2))]
    pre.detach()
    post.detach()
    net(mx.nd.ones((3, 2)))
    assert len(seen) == 2
    names = []
    net.apply(lambda blk: names.append(blk.name))
    assert names == [net[0].name, net[1].name, net.name]


def test_hybridize_keeps_results():
    net = ScaledMLP()
    net.initialize()
    x = mx.nd.ones((2, 3))
    before = net(x).asnumpy()
    net.hybridize()
    assert net._active and net.a._active
    np.testing.assert_array_equal(net(x).asnumpy(), before)


def test_symbolic_forward_names_parameters():
    net = ScaledMLP(prefix="s_")
    out = net(mx.sym.var("data"))
    assert out.list_arguments() == ["data", "s_dense0_weight", "s_dense0_bias",
                                    "s_dense1_weight", "s_dense1_bias", "s_scale"]


def test_params_sharing():
    first = nn.Dense(2, in_units=2)
    second = nn.Dense(2, in_units=2, params=first.collect_params())
    assert second.weight is first.weight


def test_block_scope_is_thread_local():
    result = {}

    def worker():
        net = nn.Dense(2)
        net.initialize()
        result["shape"] = net(mx.nd.array([[1.0, 2.0, 3.0]])).shape
        result["prefix"] = net.prefix

    outer = nn.HybridSequential(prefix="outer_")
    with outer.name_scope():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        inside = nn.Dense(1)
    assert result["shape"] == (1, 2)
    assert not result["prefix"].startswith("outer_")
    assert inside.prefix == "outer_dense0_"


def test_block_scope_names_symbols_on_its_own_thread():
    class FakeBlock:
        prefix = "spawned_"
        _empty_prefix = False

    names = []

    def worker():
        with gluon.block._BlockScope(FakeBlock()):
            names.append(mx.name.NameManager.current.get(None, "hello"))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert names == ["spawned_hello0"]
    # outside any scope this thread's own manager is untouched
    assert not mx.name.NameManager.current.get(None, "hello").startswith("spawned_")
    mx.name.NameManager.current = mx.name.NameManager()
    assert mx.name.current() is mx.name.NameManager.current


def test_block_cast_changes_parameter_dtypes():
    net = nn.HybridSequential()
    net.add(nn.Dense(2, in_units=3))
    net.initialize()
    net.cast("float64")
    assert net[0].weight.data().dtype == np.float64
    out = net(mx.nd.ones((1, 3), dtype="float64"))
    assert out.dtype == np.float64


class OptionalInput(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = nn.Dense(2, use_bias=False, weight_initializer=mx.init.One())

    def hybrid_forward(self, F, a, b=None):
        total = self.dense(a[0] + a[1]) if isinstance(a, list) else self.dense(a)
        return total if b is None else total * b


def test_hybrid_forward_accepts_none_and_lists_with_deferred_init():
    block = OptionalInput()
    block.initialize()
    x = mx.nd.array([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(block(x, None).asnumpy(), [[6.0, 6.0]])
    assert block.dense.weight.shape == (2, 3)
    two = OptionalInput()
    two.initialize()
    np.testing.assert_array_equal(two([x, x], mx.nd.array([[1.0, 0.5]])).asnumpy(), [[12.0, 6.0]])
    with pytest.raises(ValueError, match="NoneType"):
        block(None)
    # eager blocks take scalars like a plain Block; hybridized ones only arrays
    np.testing.assert_array_equal(block(x, 2.0).asnumpy(), [[12.0, 12.0]])
    block.hybridize()
    with pytest.raises(ValueError, match="only NDArray"):
        block(x, 2.0)
    with pytest.raises(ValueError, match="cannot mix NDArrays and Symbols"):
        block(x, mx.sym.var("b"))


def test_shared_params_merge_shapes_and_initializers():
    shared = gluon.ParameterDict("net_")
    first = shared.get("w", shape=(5, 5), init=mx.init.Constant(-1.0))
    assert shared.get("w", shape=(5, 0), init=mx.init.Constant(-1.0)) is first
    assert first.shape == (5, 5)
    with pytest.raises(mx.MXNetError, match=r"incompatible with the stored shape \(5, 5\)"):
        shared.get("w", shape=(4, 0))
    with pytest.raises(mx.MXNetError, match="attribute 'init'"):
        shared.get("w", init=mx.init.Constant(2.0))
    with pytest.raises(AssertionError, match="stype for Parameter 'p'"):
        gluon.Parameter("p", stype="dense")


def test_warnings_for_unregistered_containers_and_all_hybrid_sequential():
    class ListHolder(gluon.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.layers = [nn.Dense(2), nn.Dense(3)]
                self.table = {"a": "4", "b": 123}

    with pytest.warns(UserWarning, match='"layers" is an unregistered container with Blocks'):
        params = ListHolder().collect_params()
    assert len(params) == 0
    seq = nn.Sequential()
    seq.add(nn.Dense(2))
    with pytest.warns(UserWarning, match="Consider using HybridSequential"):
        seq.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mixed = nn.Sequential()
        mixed.add(nn.Dense(2), nn.Lambda("tanh"))
        mixed.hybridize()
        mixed.collect_params()
