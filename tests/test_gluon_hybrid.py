"""Hybridized HybridBlocks run on the Executor: same outputs and gradients as imperative runs,
one trace per block, train/predict modes, grad_req, repeated calls before backward, summary,
GroupNorm and clear errors for blocks that cannot be traced."""

import contextlib
import io

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, gluon
from ferrograd.base import MXNetError
from ferrograd.gluon import nn

LAYERS = [
    (lambda: nn.Dense(5), (3, 4)),
    (lambda: nn.Dense(5, activation="tanh", flatten=False), (2, 3, 4)),
    (lambda: nn.Conv1D(3, 2, padding=1), (2, 2, 7)),
    (lambda: nn.Conv2D(4, (3, 2), strides=(2, 1), groups=2), (2, 4, 7, 6)),
    (lambda: nn.Conv3D(2, 2, activation="relu"), (1, 2, 4, 4, 4)),
    (lambda: nn.Conv1DTranspose(3, 3, strides=2), (2, 2, 5)),
    (lambda: nn.Conv2DTranspose(2, 3, padding=1, output_padding=0), (2, 3, 4, 4)),
    (lambda: nn.Conv3DTranspose(2, 2), (1, 2, 3, 3, 3)),
    (lambda: nn.MaxPool1D(2), (2, 3, 8)),
    (lambda: nn.MaxPool2D(3, 2, 1), (2, 3, 7, 7)),
    (lambda: nn.MaxPool3D(2), (1, 2, 4, 4, 4)),
    (lambda: nn.AvgPool2D(2, ceil_mode=True), (2, 3, 5, 5)),
    (lambda: nn.AvgPool3D(2, count_include_pad=False, padding=1), (1, 2, 4, 4, 4)),
    (lambda: nn.GlobalMaxPool2D(), (2, 3, 4, 5)),
    (lambda: nn.GlobalAvgPool3D(), (1, 2, 3, 3, 3)),
    (lambda: nn.BatchNorm(), (4, 3, 2, 2)),
    (lambda: nn.InstanceNorm(scale=True), (2, 3, 5)),
    (lambda: nn.LayerNorm(), (3, 6)),
    (lambda: nn.GroupNorm(2), (2, 4, 3, 3)),
    (lambda: nn.Flatten(), (2, 3, 4)),
    (lambda: nn.Activation("sigmoid"), (3, 4)),
    (lambda: nn.LeakyReLU(0.2), (3, 4)),
    (lambda: nn.PReLU(), (3, 4)),
    (lambda: nn.ELU(), (3, 4)),
    (lambda: nn.SELU(), (3, 4)),
    (lambda: nn.GELU(), (3, 4)),
    (lambda: nn.Swish(), (3, 4)),
    (lambda: nn.ReflectionPad2D(1), (1, 2, 3, 3)),
    (lambda: nn.HybridLambda(lambda F, x: F.relu(x) * 2), (3, 4)),
]


def _pair(factory, shape, seed=0):
    """The same layer twice (equal parameters), run once so deferred shapes are filled."""
    x = mx.nd.array(np.random.RandomState(seed).uniform(-1, 1, shape).astype("f"))
    a, b = factory(), factory()
    a.initialize(mx.init.Uniform(0.5))
    b.initialize()
    a(x), b(x)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values(), strict=True):
        pb.set_data(pa.data())
    return a, b, x


def _run(net, x, head):
    x = x.copy()
    x.attach_grad()
    with autograd.record():
        y = net(x)
        loss = (y * head).sum()
    loss.backward()
    return y.asnumpy(), x.grad.asnumpy()


@pytest.mark.parametrize("factory,shape", LAYERS)
def test_every_layer_hybridized_matches_imperative(factory, shape):
    a, b, x = _pair(factory, shape)
    b.hybridize()
    head = mx.nd.array(np.random.RandomState(1).uniform(-1, 1, a(x).shape).astype("f"))
    ya, gxa = _run(a, x, head)
    yb, gxb = _run(b, x, head)
    np.testing.assert_allclose(yb, ya, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gxb, gxa, rtol=1e-4, atol=1e-5)
    for pa, pb in zip(a.collect_params().values(), b.collect_params().values(), strict=True):
        np.testing.assert_allclose(pb.data().asnumpy(), pa.data().asnumpy(), rtol=1e-5,
                                   atol=1e-6)
        if pa.grad_req != "null":
            np.testing.assert_allclose(pb.grad().asnumpy(), pa.grad().asnumpy(), rtol=1e-4,
                                       atol=1e-5)


class Branchy(gluon.HybridBlock):
    """Two inputs, a shared layer, a parameter of its own and two outputs."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.body = nn.HybridSequential()
            self.body.add(nn.Dense(6, activation="relu"), nn.Dense(4))
            self.scale = self.params.get("scale", shape=(4,), init=mx.init.Constant(1.5))

    def hybrid_forward(self, F, x, y, scale):
        hx, hy = self.body(x), self.body(y)
        return F.broadcast_mul(hx, scale) + hy, [F.sum(hx * hy, axis=1)]


def test_composite_net_with_two_inputs_and_nested_outputs():
    mx.random.seed(3)
    x = mx.nd.random.uniform(shape=(3, 5))
    y = mx.nd.random.uniform(shape=(3, 5))
    nets = [Branchy(), Branchy()]
    for n in nets:
        n.initialize(mx.init.Xavier())
        n(x, y)
    for pa, pb in zip(*(n.collect_params().values() for n in nets), strict=True):
        pb.set_data(pa.data())
    nets[1].hybridize(static_alloc=True, static_shape=True)
    results = []
    for n in nets:
        with autograd.record():
            out, (dots,) = n(x, y)
            loss = (out * out).sum() + dots.sum()
        loss.backward()
        results.append((out.asnumpy(), dots.asnumpy(),
                        [p.grad().asnumpy() for p in n.collect_params().values()]))
    (oa, da, ga), (ob, db, gb) = results
    np.testing.assert_allclose(ob, oa, rtol=1e-5)
    np.testing.assert_allclose(db, da, rtol=1e-5)
    for u, v in zip(ga, gb, strict=True):
        np.testing.assert_allclose(v, u, rtol=1e-4, atol=1e-6)


class Counting(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.traces = 0
        with self.name_scope():
            self.dense = nn.Dense(3)

    def hybrid_forward(self, F, x):
        self.traces += 1
        assert F is mx.sym
        return self.dense(x)


def test_traced_once_and_rebound_for_new_shapes():
    net = Counting()
    net.initialize()
    net.hybridize()
    for batch in (2, 2, 5, 2):
        assert net(mx.nd.ones((batch, 4))).shape == (batch, 3)
    assert net.traces == 1
    net.hybridize()  # re-hybridizing drops the cache
    net(mx.nd.ones((2, 4)))
    assert net.traces == 2


def test_deferred_init_through_the_traced_graph():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(3, 3), nn.Dense(2))
    net.initialize()
    net.hybridize()
    assert net(mx.nd.ones((1, 2, 5, 5))).shape == (1, 2)
    assert net[0].weight.shape == (3, 2, 3, 3)
    assert net[1].weight.shape == (2, 27)


def test_dropout_train_and_predict_modes():
    net = nn.Dropout(0.5)
    net.hybridize()
    x = mx.nd.ones((200, 50))
    np.testing.assert_array_equal(net(x).asnumpy(), x.asnumpy())
    with autograd.record():
        y = net(x)
    values = np.unique(y.asnumpy())
    assert set(values.tolist()) == {0.0, 2.0}
    assert 0.4 < (y.asnumpy() == 0).mean() < 0.6
    with autograd.record(train_mode=False):
        np.testing.assert_array_equal(net(x).asnumpy(), x.asnumpy())


def test_batchnorm_running_stats_only_in_training():
    net = nn.BatchNorm(in_channels=2, momentum=0.5)
    net.initialize()
    net.hybridize()
    x = mx.nd.array(np.arange(16, dtype="f").reshape(4, 2, 2))
    out = net(x)  # predict mode: running stats (0, 1) are used and left alone
    np.testing.assert_allclose(out.asnumpy(), x.asnumpy() / np.sqrt(1 + 1e-5), rtol=1e-5)
    np.testing.assert_array_equal(net.running_mean.data().asnumpy(), [0, 0])
    with autograd.record():
        y = net(x)
    # as in MXNet, the training forward leaves them alone and its backward updates them
    np.testing.assert_array_equal(net.running_mean.data().asnumpy(), [0, 0])
    y.backward()
    mean = x.asnumpy().transpose(1, 0, 2).reshape(2, -1).mean(1)
    np.testing.assert_allclose(net.running_mean.data().asnumpy(), 0.5 * mean, rtol=1e-5)


def test_grad_req_add_and_null():
    net = nn.Dense(2, in_units=3)
    net.initialize()
    net.hybridize()
    net.weight.grad_req = "add"
    net.bias.grad_req = "null"
    x = mx.nd.array([[1.0, 2.0, 3.0]])
    for _ in range(2):
        with autograd.record():
            y = net(x)
        y.backward()
    np.testing.assert_allclose(net.weight.grad().asnumpy(), 2 * np.array([[1, 2, 3]] * 2))
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        net.bias.grad()


def test_block_called_twice_before_backward():
    """The second recorded call must not overwrite the first one's saved state."""
    net = nn.Dense(1, in_units=2, use_bias=False)
    net.initialize(mx.init.One())
    net.hybridize()
    a, b = mx.nd.array([[1.0, 2.0]]), mx.nd.array([[3.0, 5.0]])
    with autograd.record():
        ya, yb = net(a), net(b)
        loss = ya * ya + yb
    loss.backward()
    # d/dw (w.a)^2 + w.b = 2 (w.a) a + b with w = (1, 1): 2 * 3 * (1, 2) + (3, 5)
    np.testing.assert_allclose(net.weight.grad().asnumpy(), [[9.0, 17.0]])


def test_parameter_change_rebinds():
    net = nn.Dense(2, in_units=2)
    net.initialize(mx.init.One())
    net.hybridize()
    x = mx.nd.ones((1, 2))
    np.testing.assert_allclose(net(x).asnumpy(), [[2, 2]])
    net.weight.set_data(mx.nd.full((2, 2), 3.0))
    np.testing.assert_allclose(net(x).asnumpy(), [[6, 6]])
    net.initialize(mx.init.Constant(0.5), force_reinit=True)  # the bias keeps its zeros init
    np.testing.assert_allclose(net(x).asnumpy(), [[1.0, 1.0]])


class UsesNumpy(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return x * float(x.asnumpy().sum())


class UsesMissingOp(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.no_such_operator(x)


@pytest.mark.parametrize("cls,needle", [(UsesNumpy, "asnumpy"),
                                        (UsesMissingOp, "no_such_operator")])
def test_untraceable_hybrid_forward_is_a_clear_error(cls, needle):
    net = cls()
    x = mx.nd.ones((2, 2))
    assert net(x).shape == (2, 2) if cls is UsesNumpy else True
    net.hybridize()
    with pytest.raises(MXNetError, match=f"{cls.__name__}.hybrid_forward cannot be "
                                         f"hybridized.*{needle}"):
        net(x)


def test_hybridized_block_rejects_non_array_inputs():
    net = nn.Dense(2, in_units=2)
    net.initialize()
    net.hybridize()
    with pytest.raises(ValueError, match="NDArray"):
        net(mx.nd.ones((1, 2)), 3)


def test_infer_shape():
    net = nn.HybridSequential()
    net.add(nn.Dense(4), nn.Dense(2))
    net.infer_shape(mx.nd.ones((3, 7)))
    assert net[0].weight.shape == (4, 7) and net[1].weight.shape == (2, 4)


def test_optimize_for_is_accepted():
    net = nn.Dense(2, in_units=3)
    net.initialize()
    net.optimize_for(mx.nd.ones((1, 3)), backend="MKLDNN")
    assert net._active
    assert net(mx.nd.ones((4, 3))).shape == (4, 2)


def test_group_norm_values_and_gradient():
    rng = np.random.RandomState(0)
    x = rng.randn(2, 6, 3).astype("f")
    gamma, beta = np.array([1.5, -0.5, 2.0], "f"), np.array([0.1, 0.2, 0.3], "f")
    net = nn.GroupNorm(num_groups=3, epsilon=1e-3)
    net.initialize()
    net(mx.nd.array(x))
    assert net.gamma.shape == (3,)
    net.gamma.set_data(gamma)
    net.beta.set_data(beta)
    grouped = x.reshape(2, 3, -1)
    mean, var = grouped.mean(2, keepdims=True), grouped.var(2, keepdims=True)
    ref = ((grouped - mean) / np.sqrt(var + 1e-3) * gamma[:, None] + beta[:, None])
    xa = mx.nd.array(x)
    xa.attach_grad()
    with autograd.record():
        y = net(xa)
        (y * y).sum().backward()
    np.testing.assert_allclose(y.asnumpy(), ref.reshape(x.shape), rtol=1e-5, atol=1e-5)

    def loss(v):
        g = v.reshape(2, 3, -1)
        n = (g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + 1e-3)
        return float(((n * gamma[:, None] + beta[:, None]) ** 2).sum())

    xd = x.astype("f8")
    numeric = np.zeros_like(xd)
    for idx in np.ndindex(*x.shape):
        step = np.zeros_like(xd)
        step[idx] = 1e-5
        numeric[idx] = (loss(xd + step) - loss(xd - step)) / 2e-5
    np.testing.assert_allclose(xa.grad.asnumpy(), numeric, rtol=1e-2, atol=1e-3)
    assert repr(net) == "GroupNorm(eps=0.001, num_groups=3, center=True, scale=True)"


def _summary_text(net, *inputs):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        net.summary(*inputs)
    return buf.getvalue()


def test_summary_numbers():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Dense(5, activation="relu"),
            nn.Dense(3, in_units=5, use_bias=False))
    net.initialize()
    text = _summary_text(net, mx.nd.ones((2, 3, 6, 6)))
    rows = [line.split() for line in text.splitlines()]
    assert ["Input", "(2,", "3,", "6,", "6)", "0"] in rows
    assert ["Conv2D-1", "(2,", "4,", "6,", "6)", "112"] in rows  # 4*3*3*3 + 4
    assert ["BatchNorm-2", "(2,", "4,", "6,", "6)", "16"] in rows
    assert ["Activation-3", "(2,", "5)", "0"] in rows
    assert ["Dense-4", "(2,", "5)", "725"] in rows  # 5 * 144 + 5
    assert ["Dense-5", "(2,", "3)", "15"] in rows
    assert "   Total params: 868\n" in text
    assert "   Trainable params: 860\n" in text  # running mean/var are not trainable
    assert "   Non-trainable params: 8\n" in text
    assert "Unique parameters in model: 868\n" in text
    header = "        Layer (type)" + " " * 32 + "Output Shape" + " " * 9 + "Param #"
    assert text.splitlines()[1] == header
    net.hybridize()
    with pytest.raises(AssertionError, match="must not be hybridized"):
        net.summary(mx.nd.ones((2, 3, 6, 6)))


def test_summary_counts_shared_parameters_once():
    first = nn.Dense(3, in_units=3)
    second = nn.Dense(3, in_units=3, params=first.collect_params())
    net = nn.Sequential()
    net.add(first, second)
    net.initialize()
    text = _summary_text(net, mx.nd.ones((1, 3)))
    assert "   Total params: 24\n" in text
    assert "Shared params in forward computation graph: 12\n" in text
    assert "Unique parameters in model: 12\n" in text


@pytest.mark.parametrize("make,ndim", [
    (lambda layout: nn.MaxPool1D(3, 2, layout=layout), 1),
    (lambda layout: nn.AvgPool2D(2, padding=1, count_include_pad=False, layout=layout), 2),
    (lambda layout: nn.GlobalAvgPool3D(layout=layout), 3),
    (lambda layout: nn.Conv2D(3, (3, 2), padding=1, in_channels=4, layout=layout), 2),
    (lambda layout: nn.Conv3D(2, 2, groups=2, in_channels=4, layout=layout), 3),
])
@pytest.mark.parametrize("hybrid", [False, True])
def test_channels_last_layouts_match_channels_first(make, ndim, hybrid):
    first = make({1: "NCW", 2: "NCHW", 3: "NCDHW"}[ndim])
    last = make({1: "NWC", 2: "NHWC", 3: "NDHWC"}[ndim])
    for layer in (first, last):
        layer.initialize()
        if hybrid:
            layer.hybridize()
    to_last = (0,) + tuple(range(2, ndim + 2)) + (1,)
    if first.params:
        w = first.weight.data().asnumpy()
        assert last.weight.shape == tuple(np.array(w.shape)[list(to_last)])
        last.weight.set_data(w.transpose(to_last))
    x = np.random.RandomState(0).uniform(-1, 1, (2, 4) + (5,) * ndim).astype("f")
    want = first(mx.nd.array(x)).asnumpy().transpose(to_last)
    got = last(mx.nd.array(x.transpose(to_last))).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_unsupported_layouts_are_clear_errors():
    with pytest.raises(MXNetError, match="Conv1D: layout 'NWC' is not supported"):
        nn.Conv1D(2, 3, layout="NWC")
    with pytest.raises(MXNetError, match="Conv2DTranspose: layout 'NHWC'"):
        nn.Conv2DTranspose(2, 3, layout="NHWC")


class MaybeAdd(gluon.HybridBlock):
    def hybrid_forward(self, F, a, b=None):
        return a if b is None else a + 2 * b


def test_none_arguments_and_structure_checks():
    net = MaybeAdd()
    net.hybridize()
    one = mx.nd.ones((3,))
    np.testing.assert_allclose(net(one).asnumpy(), [1, 1, 1])
    np.testing.assert_allclose(net(one, None).asnumpy(), [1, 1, 1])  # a trailing default
    with pytest.raises(ValueError, match="argument structure"):
        net(one, one)
    other = MaybeAdd()
    other.hybridize()
    np.testing.assert_allclose(other(one, one).asnumpy(), [3, 3, 3])
    with pytest.raises(ValueError, match="at least one NDArray"):
        other(None, None)


def test_grad_req_switched_on_after_binding():
    net = nn.Dense(1, in_units=2, use_bias=False)
    net.initialize(mx.init.One())
    net.weight.grad_req = "null"
    net.hybridize()
    x = mx.nd.array([[2.0, 3.0]])
    with autograd.record():
        net(x)  # bound without a weight gradient
    net.weight.grad_req = "write"
    with autograd.record():
        y = net(x)
    y.backward()
    np.testing.assert_allclose(net.weight.grad().asnumpy(), [[2.0, 3.0]])


def test_input_gradient_flows_to_earlier_ops():
    net = nn.Dense(2, in_units=2, use_bias=False)
    net.initialize(mx.init.One())
    net.hybridize()
    x = mx.nd.array([[1.0, -1.0]])
    x.attach_grad()
    with autograd.record():
        h = x * 3  # recorded before the hybridized node
        y = net(h)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [[6.0, 6.0]])


def test_op_hook_names_operators_and_their_inputs():
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(2, in_units=3), nn.Activation("relu"))
    net.initialize(mx.init.One())
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op, arr.asnumpy().tolist())))
    x = mx.nd.array([[1.0, -2.0, 0.5]])
    net(x)
    assert seen == []  # hooks run only in the hybridized graph
    net.hybridize()
    net(x)
    assert seen == [("net_dense0_fwd_output", "FullyConnected", [[-0.5, -0.5]]),
                    ("net_relu0_fwd_output", "Activation", [[0.0, 0.0]])]
    everything = []
    net.register_op_hook(lambda name, op, arr: everything.append(name), monitor_all=True)
    net(x)
    assert everything == ["net_dense0_fwd_data", "net_dense0_fwd_weight", "net_dense0_fwd_bias",
                          "net_dense0_fwd_output", "net_relu0_fwd_input0",
                          "net_relu0_fwd_output"]


def test_embedding_hybridized_matches_imperative():
    a, b = nn.Embedding(6, 3), nn.Embedding(6, 3)
    a.initialize(mx.init.Uniform(1.0))
    b.initialize()
    b.weight.set_data(a.weight.data())
    b.hybridize()
    idx = mx.nd.array([[0, 5, 2], [2, 2, 1]])
    for net in (a, b):
        with autograd.record():
            y = net(idx)
            (y * y).sum().backward()
    np.testing.assert_allclose(b(idx).asnumpy(), a(idx).asnumpy())
    np.testing.assert_allclose(b.weight.grad().asnumpy(), a.weight.grad().asnumpy(), rtol=1e-6)
    rows = a.weight.data().asnumpy()
    want = np.zeros_like(rows)
    for i in [0, 5, 2, 2, 2, 1]:
        want[i] += 2 * rows[i]
    np.testing.assert_allclose(b.weight.grad().asnumpy(), want, rtol=1e-6)


def test_recorded_calls_without_backward_reuse_one_executor():
    net = nn.Dense(2, in_units=2)
    net.initialize()
    net.hybridize()
    x = mx.nd.ones((1, 2))
    for _ in range(5):
        with autograd.record():
            net(x)  # output dropped: its recorded node is freed with it
    kept = []
    for _ in range(2):
        with autograd.record():
            kept.append(net(x))  # kept alive: each needs its own executor state
    runs = [r for pool in net._cached_graph.pools.values() for r in pool]
    assert len(runs) == 2
    kept[0].backward()
    np.testing.assert_allclose(net.weight.grad().asnumpy(), [[1.0, 1.0], [1.0, 1.0]])


def test_gradients_handed_out_stay_as_they_were_while_the_next_step_writes_anew():
    # The executor writes each step's weight gradients straight into the Parameters' gradient
    # arrays; a zero-copy NumPy export of last step's gradient holds that buffer, so the next
    # step writes a new buffer, completely, and the export keeps the old values.
    rng = np.random.RandomState(4)
    nets = []
    for hybrid in (True, False):
        net = nn.HybridSequential()
        net.add(nn.Dense(6, activation="relu", in_units=5), nn.Dense(3, in_units=6))
        net.initialize(mx.init.Xavier(), force_reinit=True)
        if hybrid:
            net.hybridize(static_alloc=True, static_shape=True)
        nets.append(net)
    for p_hyb, p_imp in zip(nets[0].collect_params().values(),
                            nets[1].collect_params().values(), strict=True):
        p_imp.set_data(p_hyb.data())
    exports, copies = None, None
    for _ in range(3):
        x = mx.nd.array(rng.randn(4, 5))
        grads = []
        for net in nets:
            with autograd.record():
                loss = (net(x) ** 2).sum()
            loss.backward()
            grads.append([p.grad() for p in net.collect_params().values()])
        for g_hyb, g_imp in zip(*grads, strict=True):
            np.testing.assert_allclose(g_hyb.asnumpy(), g_imp.asnumpy(), rtol=1e-5, atol=1e-6)
        if exports is not None:
            for view, copy in zip(exports, copies, strict=True):
                np.testing.assert_array_equal(view, copy)
        exports = [g.to_numpy() for g in grads[0]]
        copies = [g.asnumpy() for g in grads[0]]
