"""ferrograd.executor: bind/simple_bind forms, forward/backward semantics and errors (spec §3),
executor results against autograd, and the memory plan."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.base import MXNetError

sym, nd = mx.sym, mx.nd
CTX = mx.cpu()


def mlp(hidden=8, classes=3):
    data = sym.var("data")
    fc1 = sym.FullyConnected(data=data, num_hidden=hidden, name="fc1")
    act = sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = sym.FullyConnected(act, num_hidden=classes, name="fc2")
    return sym.SoftmaxOutput(fc2, name="softmax")


def init(exe, seed=0):
    rng = np.random.default_rng(seed)
    for k, v in exe.arg_dict.items():
        if k == "softmax_label":
            v[:] = rng.integers(0, 3, size=v.shape).astype(np.float32)
        else:
            v[:] = rng.standard_normal(v.shape).astype(np.float32) * 0.5


# ------------------------------------------------------------------------------ bind forms


def test_bind_list_and_dict_by_reference():
    a, b = sym.var("a"), sym.var("b")
    s = a * b
    args = [nd.array([1.0, 2.0]), nd.array([3.0, 4.0])]
    exe = s.bind(CTX, args)
    assert exe.arg_arrays is args and exe.grad_arrays is None
    assert exe.arg_dict["a"] is args[0]
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [3.0, 8.0])
    d = {"a": nd.array([2.0]), "b": nd.array([5.0])}
    exe = s.bind(CTX, d)
    assert exe.arg_dict["b"] is d["b"]
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [10.0])


def test_bind_errors():
    a, b = sym.var("a"), sym.var("b")
    s = a + b
    with pytest.raises(TypeError, match="Context type error"):
        s.bind("cpu", [nd.ones(1), nd.ones(1)])
    with pytest.raises(ValueError, match="Length of args does not match the number of arguments"):
        s.bind(CTX, [nd.ones(1)])
    with pytest.raises(ValueError, match="key `b` is missing in `args`"):
        s.bind(CTX, {"a": nd.ones(1)})
    with pytest.raises(TypeError, match="Only accept list of NDArrays or dict of str to NDArray"):
        s.bind(CTX, [nd.ones(1), np.ones(1)])
    with pytest.raises(ValueError, match="grad_req must be in"):
        s.bind(CTX, [nd.ones(1), nd.ones(1)], grad_req="sometimes")
    with pytest.raises(KeyError):
        s.bind(CTX, [nd.ones(1), nd.ones(1)], [nd.ones(1), nd.ones(1)], grad_req=["write", "x"])
    with pytest.raises(MXNetError, match="_plus"):
        s.bind(CTX, [nd.ones(2), nd.ones(3)])
    bn = sym.BatchNorm(sym.var("x"), name="bn")
    with pytest.raises(ValueError, match="key `bn_moving_mean` is missing in `aux_states`"):
        bn.bind(CTX, {"x": nd.ones((2, 3)), "bn_gamma": nd.ones(3), "bn_beta": nd.zeros(3)})


def test_partial_args_grad_dict_and_grad_req_dict():
    a, b = sym.var("a"), sym.var("b")
    s = sym.MakeLoss(a * b)
    ga = nd.zeros(2)
    exe = s.bind(CTX, {"a": nd.array([1.0, 2.0]), "b": nd.array([3.0, 4.0])},
                 args_grad={"a": ga})
    assert exe.grad_arrays[1] is None and exe.grad_dict["a"] is ga
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_array_equal(ga.asnumpy(), [3.0, 4.0])
    gb = nd.zeros(2)
    exe = s.bind(CTX, {"a": nd.array([1.0, 2.0]), "b": nd.array([3.0, 4.0])},
                 args_grad={"a": nd.zeros(2), "b": gb}, grad_req={"a": "write"})
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_array_equal(gb.asnumpy(), [0.0, 0.0])  # b defaulted to 'null'


def test_grad_req_add_accumulates_and_null_leaves_alone():
    a = sym.var("a")
    s = sym.MakeLoss(a * a)
    ga = nd.array([10.0, 10.0])
    exe = s.bind(CTX, [nd.array([1.0, 2.0])], [ga], grad_req="add")
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward()
    np.testing.assert_allclose(ga.asnumpy(), [10 + 2 * 2.0, 10 + 2 * 4.0])
    gn = nd.array([7.0, 7.0])
    exe = s.bind(CTX, [nd.array([1.0, 2.0])], [gn], grad_req="null")
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_array_equal(gn.asnumpy(), [7.0, 7.0])


# ------------------------------------------------------------------------------ simple_bind


def test_simple_bind_allocates_zeros_with_inferred_shapes():
    exe = mlp().simple_bind(CTX, data=(5, 4))
    assert [a.shape for a in exe.arg_arrays] == [(5, 4), (8, 4), (8,), (3, 8), (3,), (5,)]
    assert all(float(np.abs(a.asnumpy()).sum()) == 0 for a in exe.arg_arrays)
    assert [g.shape for g in exe.grad_arrays] == [a.shape for a in exe.arg_arrays]
    assert exe.outputs[0].shape == (5, 3)
    bn = sym.BatchNorm(sym.var("x"), name="bn").simple_bind(CTX, x=(2, 3))
    assert [a.shape for a in bn.aux_arrays] == [(3,), (3,)]
    assert float(bn.aux_dict["bn_moving_var"].asnumpy().sum()) == 0  # MXNet starts it at 0 too


def test_simple_bind_grad_req_forms_and_types():
    net = mlp()
    assert net.simple_bind(CTX, grad_req="null", data=(2, 4)).grad_arrays == [None] * 6
    exe = net.simple_bind(CTX, grad_req={"fc1_weight": "write"}, data=(2, 4))
    assert [g is None for g in exe.grad_arrays] == [True, False, True, True, True, True]
    with pytest.raises(RuntimeError, match="grad_req in simple_bind cannot be an empty list"):
        net.simple_bind(CTX, grad_req=[], data=(2, 4))
    exe = net.simple_bind(CTX, type_dict={"data": "float64"}, data=(2, 4))
    assert all(a.dtype == np.float64 for a in exe.arg_arrays)


def test_simple_bind_errors():
    with pytest.raises(RuntimeError, match=r"simple_bind error. Arguments:\n"
                                           r"(.|\n)*cannot decide shapes(.|\n)*x: None"):
        sym.FullyConnected(sym.var("x"), num_hidden=2, name="f").simple_bind(CTX, z=[3])
    with pytest.raises(RuntimeError, match="Shape inconsistent"):
        mlp().simple_bind(CTX, data=(5, 4), fc1_weight=(9, 4))


# ------------------------------------------------------------------------------ forward/backward


def test_forward_kwargs_and_errors_keep_executor_usable():
    a = sym.var("a")
    exe = (a * 2).bind(CTX, [nd.array([1.0, 2.0])])
    out = exe.forward(a=nd.array([3.0, 4.0]))
    np.testing.assert_array_equal(out[0].asnumpy(), [6.0, 8.0])
    np.testing.assert_array_equal(exe.forward(a=np.array([1.0, 1.0]))[0].asnumpy(), [2.0, 2.0])
    with pytest.raises(TypeError, match="Unknown argument z"):
        exe.forward(z=nd.ones(2))
    with pytest.raises(ValueError, match=r"Shape not match! Argument a, need: \(2,\), "
                                         r"received: \(3,\)"):
        exe.forward(a=nd.ones(3))
    with pytest.raises(ValueError, match="only accept keyword argument of NDArrays"):
        exe.forward(a=[1, 2])
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [2.0, 2.0])


def test_outputs_keep_their_storage():
    a = sym.var("a")
    exe = (a + 1).bind(CTX, [nd.array([1.0])])
    old = exe.forward()[0]
    exe.forward(a=nd.array([5.0]))
    assert float(old.asnumpy()[0]) == 6.0


def test_backward_needs_head_gradient_for_non_loss_outputs():
    a = sym.var("a")
    s = sym.exp(a)
    g = nd.zeros(2)
    exe = s.bind(CTX, [nd.array([0.0, 1.0])], [g])
    exe.forward(is_train=True)
    with pytest.raises(MXNetError, match="Because the last operator is not Loss function, "
                                         "head_gradient is required"):
        exe.backward()
    with pytest.raises(MXNetError, match=r"shape \(3\)|\(3,\)"):
        exe.backward(nd.ones(3))
    with pytest.raises(TypeError, match="inputs must be NDArray"):
        exe.backward([np.ones(2)])
    exe.backward(nd.array([2.0, 3.0]))  # still usable after the errors
    np.testing.assert_allclose(g.asnumpy(), [2.0, 3.0 * np.e], rtol=1e-6)
    exe.backward({"exp0_output": nd.array([1.0, 1.0])} if False else [nd.array([1.0, 1.0])])
    np.testing.assert_allclose(g.asnumpy(), [1.0, np.e], rtol=1e-6)


def test_group_of_makeloss_and_blockgrad_needs_no_out_grads():
    a = sym.var("a")
    s = sym.Group([sym.MakeLoss(a * 3), sym.BlockGrad(a * 5)])
    g = nd.zeros(2)
    exe = s.bind(CTX, [nd.array([1.0, 2.0])], [g])
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_array_equal(g.asnumpy(), [3.0, 3.0])
    d = exe.output_dict
    assert sorted(d) == sorted(s.list_outputs())


def test_executor_matches_autograd_on_mlp():
    exe = mlp().simple_bind(CTX, data=(6, 5))
    init(exe)
    exe.forward(is_train=True)
    exe.backward()
    args = {k: v.copy() for k, v in exe.arg_dict.items()}
    for k in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"):
        args[k].attach_grad()
    with mx.autograd.record():
        h = nd.relu(nd.FullyConnected(args["data"], args["fc1_weight"], args["fc1_bias"],
                                      num_hidden=8))
        o = nd.FullyConnected(h, args["fc2_weight"], args["fc2_bias"], num_hidden=3)
        p = nd.SoftmaxOutput(o, args["softmax_label"])
    p.backward()
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), p.asnumpy(), rtol=1e-5)
    for k in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"):
        np.testing.assert_allclose(exe.grad_dict[k].asnumpy(), args[k].grad.asnumpy(),
                                   rtol=1e-4, atol=1e-6)
    # And against the hand-derived softmax gradient for the last bias: sum over rows of p - onehot.
    onehot = np.eye(3)[args["softmax_label"].asnumpy().astype(int)]
    np.testing.assert_allclose(exe.grad_dict["fc2_bias"].asnumpy(),
                               (p.asnumpy() - onehot).sum(axis=0), rtol=1e-4, atol=1e-6)


def test_batchnorm_moving_stats_update_in_training_backward():
    x = np.random.default_rng(1).standard_normal((8, 3)).astype(np.float32)
    bn = sym.BatchNorm(sym.var("x"), fix_gamma=False, momentum=0.9, name="bn")
    exe = bn.simple_bind(CTX, x=(8, 3))
    exe.arg_dict["bn_gamma"][:] = 1.0
    exe.forward(is_train=False, x=nd.array(x))
    assert float(np.abs(exe.aux_dict["bn_moving_mean"].asnumpy()).sum()) == 0
    exe.forward(is_train=True)
    assert float(np.abs(exe.aux_dict["bn_moving_mean"].asnumpy()).sum()) == 0
    exe.backward(nd.ones((8, 3)))
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"].asnumpy(), 0.1 * x.mean(axis=0),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(),
                               (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-4, atol=1e-5)


def test_dropout_follows_is_train():
    d = sym.Dropout(sym.var("x"), p=0.5)
    exe = d.bind(CTX, [nd.ones((100,))])
    np.testing.assert_array_equal(exe.forward(is_train=False)[0].asnumpy(), np.ones(100))
    out = exe.forward(is_train=True)[0].asnumpy()
    assert set(np.unique(out)) <= {0.0, 2.0} and 10 < (out == 0).sum() < 90


def test_copy_params_from_and_reshape():
    exe = mlp().simple_bind(CTX, data=(4, 5))
    w = np.random.rand(8, 5)
    exe.copy_params_from({"fc1_weight": nd.array(w, dtype="float64")})
    assert exe.arg_dict["fc1_weight"].dtype == np.float32
    np.testing.assert_allclose(exe.arg_dict["fc1_weight"].asnumpy(), w, rtol=1e-6)
    with pytest.raises(ValueError, match='Find name "zzz" that is not in the arguments'):
        exe.copy_params_from({"zzz": nd.ones(1)})
    exe.copy_params_from({"zzz": nd.ones(1)}, allow_extra_params=True)
    small = exe.reshape(data=(2, 5), softmax_label=(2,))
    assert small.arg_dict["fc1_weight"] is exe.arg_dict["fc1_weight"]
    assert small.arg_dict["data"].shape == (2, 5)
    with pytest.raises(MXNetError, match="larger than original"):
        exe.reshape(data=(9, 5), softmax_label=(9,))
    with pytest.raises(MXNetError, match="Shape of unspecifie arg: softmax_label changed"):
        exe.reshape(data=(2, 5))


def test_monitor_callback_sees_names_and_arrays():
    seen = {}
    exe = mlp().simple_bind(CTX, data=(2, 4))
    init(exe)
    exe.set_monitor_callback(lambda name, arr: seen.__setitem__(name, arr.asnumpy()))
    exe.forward()
    assert list(seen) == ["fc1_output", "relu1_output", "fc2_output", "softmax_output"]
    assert all(isinstance(k, str) for k in seen)
    np.testing.assert_array_equal(seen["softmax_output"], exe.outputs[0].asnumpy())
    np.testing.assert_array_equal(seen["relu1_output"], np.maximum(seen["fc1_output"], 0))


def test_debug_str_lists_schedule_and_memory():
    exe = mlp().simple_bind(CTX, data=(2, 4))
    text = exe.debug_str()
    assert "Op:FullyConnected, Name=fc1" in text
    assert "backward" in text and "MB allocated" in text


def test_memory_plan_peak_on_mlp_is_below_sixty_percent():
    data = sym.var("data")
    h = data
    for i, n in enumerate((512, 512)):
        h = sym.Activation(sym.FullyConnected(h, num_hidden=n, name=f"fc{i}"), act_type="relu")
    net = sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=10, name="out"), name="softmax")
    exe = net.simple_bind(CTX, data=(128, 784))
    planned, naive = exe.handle.memory()
    assert naive > 0 and planned <= 0.6 * naive, (planned, naive)


def test_no_backward_work_for_gradients_nobody_asked_for():
    net = sym.FullyConnected(sym.var("data"), num_hidden=4, name="fc")
    ops = lambda exe: [op for _, op in exe.handle.schedule()]  # noqa: E731
    full = net.simple_bind(CTX, data=(3, 5))
    weights_only = net.simple_bind(CTX, grad_req={"fc_weight": "write", "fc_bias": "write"},
                                   data=(3, 5))
    assert ops(full).count("dot") == 2 and ops(weights_only).count("dot") == 1
    assert weights_only.grad_dict["data"] is None


def test_grad_ready_callback_gets_each_final_gradient_during_backward():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.FullyConnected(net, num_hidden=2, name="fc2")
    net = mx.sym.sum(net)
    rs = np.random.RandomState(0)
    args = {n: mx.nd.array(rs.randn(*s)) for n, s in
            zip(net.list_arguments(), net.infer_shape(data=(3, 5))[0], strict=True)}
    grads = {n: mx.nd.zeros(a.shape) for n, a in args.items()}
    exe = net.bind(mx.cpu(), args, args_grad=grads)
    seen = []
    exe._grad_ready = lambda i, g: seen.append((net.list_arguments()[i], g.asnumpy().copy()))
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((1,)))
    names = [n for n, _ in seen]
    assert sorted(names) == sorted(net.list_arguments())
    assert names.index("fc2_weight") < names.index("fc1_weight")
    for name, g in seen:
        np.testing.assert_array_equal(g, grads[name].asnumpy())
    # hand-derived: d sum(fc2(h)) / d fc2_bias = batch size for each unit
    np.testing.assert_allclose(dict(seen)["fc2_bias"], [3.0, 3.0])

    def boom(i, g):
        raise KeyError("no room for gradient")
    exe._grad_ready = boom
    exe.forward(is_train=True)
    with pytest.raises(MXNetError, match="grad_ready callback raised KeyError"):
        exe.backward(mx.nd.ones((1,)))
