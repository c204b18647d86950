"""mx.mod.Module: binding, forward/backward against hand-derived gradients, several contexts,
parameters, reshaping, prediction and checkpoints."""

import warnings

import ferrograd as mx
import numpy as np
import pytest

nd = mx.nd
RNG = np.random.default_rng(7)


def _fc_module(contexts=None, **kwargs):
    """``out = data @ W.T + b`` (3 inputs, 4 outputs), no label."""
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    return mx.mod.Module(net, ("data",), None, context=contexts or mx.cpu(), **kwargs)


def _params():
    return {"fc_weight": nd.array(RNG.standard_normal((4, 3))),
            "fc_bias": nd.array(RNG.standard_normal(4))}


@pytest.mark.parametrize("contexts", [[mx.cpu()], [mx.cpu(0), mx.cpu(1)]])
def test_forward_backward_match_hand_derived_gradients(contexts):
    mod = _fc_module(contexts)
    mod.bind(data_shapes=[("data", (6, 3))], inputs_need_grad=True)
    params = _params()
    mod.init_params(arg_params=params)
    x = RNG.standard_normal((6, 3)).astype(np.float32)
    head = RNG.standard_normal((6, 4)).astype(np.float32)
    mod.forward(mx.io.DataBatch([nd.array(x)]), is_train=True)
    mod.backward([nd.array(head)])
    w, b = params["fc_weight"].asnumpy(), params["fc_bias"].asnumpy()
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), x @ w.T + b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mod.get_input_grads()[0].asnumpy(), head @ w, rtol=1e-5,
                               atol=1e-5)
    # each device holds the gradient of its slice of the batch; together they sum to the whole
    grads = mod._exec_group.grad_arrays
    w_grad = sum(g.asnumpy() for g in grads[0])
    b_grad = sum(g.asnumpy() for g in grads[1])
    np.testing.assert_allclose(w_grad, head.T @ x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b_grad, head.sum(0), rtol=1e-5, atol=1e-5)
    per_device = mod.get_outputs(merge_multi_context=False)[0]
    assert [o.shape[0] for o in per_device] == ([6] if len(contexts) == 1 else [3, 3])


def test_names_and_shapes():
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=5,
                                                     name="fc"), name="softmax")
    mod = mx.mod.Module(net)
    assert mod.data_names == ["data"] and mod.label_names == ["softmax_label"]
    assert mod.output_names == ["softmax_output"]
    assert not mod.binded
    mod.bind(data_shapes=[("data", (8, 3))], label_shapes=[("softmax_label", (8,))])
    assert mod.binded and mod.for_training
    assert mod.data_shapes == [("data", (8, 3))] and mod.label_shapes == [("softmax_label", (8,))]
    assert mod.output_shapes == [("softmax_output", (8, 5))]
    mod.init_params()
    args, auxs = mod.get_params()
    assert sorted(args) == ["fc_bias", "fc_weight"] and auxs == {}
    assert np.abs(args["fc_weight"].asnumpy()).max() <= 0.01  # Uniform(0.01), the default


def test_bad_names_and_shapes_are_clear_errors():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    with pytest.raises(ValueError, match="'image' is not found"):
        mx.mod.Module(net, data_names=("image",))
    with pytest.warns(UserWarning, match="'softmax_label' is not found"):
        mod = mx.mod.Module(net)
    with pytest.raises(TypeError, match="shape must be a tuple of ints"):
        mod.bind(data_shapes=[("data", nd.array([10, 10]))])
    assert not mod.binded
    with pytest.raises(ValueError, match="don't match names"):
        mod.bind(data_shapes=[("x", (2, 3))])
    with pytest.raises(mx.MXNetError, match="call bind"):
        mod.init_params()


def test_parameters_missing_extra_and_force_init():
    mod = _fc_module()
    mod.bind(data_shapes=[("data", (2, 3))])
    params = _params()
    mod.set_params(params, {})
    np.testing.assert_array_equal(mod.get_params()[0]["fc_weight"].asnumpy(),
                                  params["fc_weight"].asnumpy())
    with pytest.raises(RuntimeError, match="fc_bias is not presented"):
        mod.set_params({"fc_weight": params["fc_weight"]}, {})
    # allow_missing keeps the other parameters as they are
    mod.set_params({"fc_bias": nd.zeros(4)}, {}, allow_missing=True)
    args = mod.get_params()[0]
    assert args["fc_bias"].asnumpy().tolist() == [0, 0, 0, 0]
    np.testing.assert_array_equal(args["fc_weight"].asnumpy(), params["fc_weight"].asnumpy())
    with pytest.raises(ValueError, match="fc2_weight"):
        mod.set_params({**params, "fc2_weight": nd.ones(2)}, {}, allow_missing=True)
    mod.set_params({**params, "fc2_weight": nd.ones(2)}, {}, allow_missing=True,
                   allow_extra=True)
    with pytest.warns(UserWarning, match="already initialized"):
        mod.init_params()
    mod.init_params(mx.init.One(), force_init=True)  # biases are zeroed by name, as in MXNet
    assert mod.get_params()[0]["fc_weight"].asnumpy().tolist() == [[1, 1, 1]] * 4
    assert mod.get_params()[0]["fc_bias"].asnumpy().tolist() == [0, 0, 0, 0]
    mod.init_params(mx.init.Zero(), arg_params={"fc_weight": params["fc_weight"]},
                    allow_missing=True, force_init=True)
    args = mod.get_params()[0]
    assert args["fc_bias"].asnumpy().tolist() == [0, 0, 0, 0]
    np.testing.assert_array_equal(args["fc_weight"].asnumpy(), params["fc_weight"].asnumpy())


def test_get_params_averages_the_devices():
    mod = _fc_module([mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (4, 3))])
    mod.init_params(mx.init.Zero())
    weights = mod._exec_group.param_arrays[0]
    weights[0][:] = 1.0
    weights[1][:] = 3.0
    mod._params_dirty = True
    assert mod.get_params()[0]["fc_weight"].asnumpy().tolist() == [[2.0] * 3] * 4


def test_fixed_params_and_grad_req():
    mod = _fc_module(fixed_param_names=["fc_bias"])
    mod.bind(data_shapes=[("data", (2, 3))])
    assert mod._exec_group.grad_req == {"data": "null", "fc_weight": "write", "fc_bias": "null"}
    assert mod._exec_group.grad_arrays[1] == [None]
    mod = _fc_module()
    mod.bind(data_shapes=[("data", (2, 3))], for_training=False)
    assert mod._exec_group.grad_arrays is None
    with pytest.raises(mx.MXNetError, match="for_training=True"):
        mod.init_params()
        mod.forward(mx.io.DataBatch([nd.ones((2, 3))]))
        mod.backward([nd.ones((2, 4))])
    mod = _fc_module()
    mod.bind(data_shapes=[("data", (2, 3))], grad_req="add")
    mod.init_params(arg_params=_params())
    for _ in range(2):
        mod.forward(mx.io.DataBatch([nd.ones((2, 3))]), is_train=True)
        mod.backward([nd.ones((2, 4))])
    assert mod._exec_group.grad_arrays[1][0].asnumpy().tolist() == [4.0] * 4


def test_forward_reshapes_for_a_new_batch_size():
    mod = _fc_module([mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (4, 3))])
    params = _params()
    mod.init_params(arg_params=params)
    w, b = params["fc_weight"].asnumpy(), params["fc_bias"].asnumpy()
    for n in (4, 10, 2, 4):
        x = RNG.standard_normal((n, 3)).astype(np.float32)
        mod.forward(mx.io.DataBatch([nd.array(x)]), is_train=False)
        np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), x @ w.T + b, rtol=1e-5,
                                   atol=1e-5)
        assert mod.data_shapes[0].shape == (n, 3)
    mod.reshape(data_shapes=[("data", (6, 3))])
    assert mod.output_shapes == [("fc_output", (6, 4))]


def test_predict_iter_predict_and_score_inputs():
    mod = _fc_module()
    mod.bind(data_shapes=[("data", (4, 3))], for_training=False)
    params = _params()
    mod.init_params(arg_params=params)
    w, b = params["fc_weight"].asnumpy(), params["fc_bias"].asnumpy()
    x = RNG.standard_normal((10, 3)).astype(np.float32)
    expected = x @ w.T + b
    it = mx.io.NDArrayIter(x, batch_size=4)  # last batch padded by 2
    np.testing.assert_allclose(mod.predict(it).asnumpy(), expected, rtol=1e-5, atol=1e-5)
    per_batch = mod.predict(it, merge_batches=False)
    assert [len(o) for o in per_batch] == [1, 1, 1]
    assert [o[0].shape[0] for o in per_batch] == [4, 4, 2]
    assert isinstance(mod.predict(it, always_output_list=True), list)
    assert len(mod.predict(it, num_batch=1, merge_batches=False)) == 1
    seen = [(nbatch, out[0].shape) for out, nbatch, _ in mod.iter_predict(it)]
    assert seen == [(0, (4, 4)), (1, (4, 4)), (2, (2, 4))]
    np.testing.assert_allclose(mod.predict(x[:3]).asnumpy(), expected[:3], rtol=1e-5,
                               atol=1e-5)


def test_shared_module_shares_parameter_memory():
    mod = _fc_module()
    mod.bind(data_shapes=[("data", (4, 3))])
    mod.init_params(arg_params=_params())
    other = _fc_module()
    other.bind(data_shapes=[("data", (2, 3))], shared_module=mod)
    assert other.params_initialized
    mod._exec_group.param_arrays[1][0][:] = 5.0
    other.forward(mx.io.DataBatch([nd.zeros((2, 3))]), is_train=False)
    assert other.get_outputs()[0].asnumpy().tolist() == [[5.0] * 4] * 2


def test_checkpoint_round_trip(tmp_path):
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    net = mx.sym.BatchNorm(net, name="bn")
    mod = mx.mod.Module(net, ("data",), None)
    mod.bind(data_shapes=[("data", (5, 3))])
    mod.init_params(mx.init.Normal(1.0))
    mod.forward(mx.io.DataBatch([nd.array(RNG.standard_normal((5, 3)))]), is_train=True)
    prefix = str(tmp_path / "net")
    mod.save_checkpoint(prefix, 3)
    loaded = mx.mod.Module.load(prefix, 3, data_names=("data",), label_names=None)
    loaded.bind(data_shapes=[("data", (5, 3))], for_training=False)
    assert loaded._symbol.tojson() == mod._symbol.tojson()
    for saved, got in zip(mod.get_params(), loaded.get_params(), strict=True):
        assert sorted(saved) == sorted(got)
        for k in saved:
            np.testing.assert_array_equal(saved[k].asnumpy(), got[k].asnumpy())
    x = nd.array(RNG.standard_normal((5, 3)))
    mod.forward(mx.io.DataBatch([x]), is_train=False)
    loaded.forward(mx.io.DataBatch([x]), is_train=False)
    np.testing.assert_allclose(loaded.get_outputs()[0].asnumpy(),
                               mod.get_outputs()[0].asnumpy(), rtol=1e-6)
    # the same files through the functional API
    sym, args, auxs = mx.model.load_checkpoint(prefix, 3)
    assert sorted(args) == ["bn_beta", "bn_gamma", "fc_bias", "fc_weight"]
    assert sorted(auxs) == ["bn_moving_mean", "bn_moving_var"]
    assert sym.tojson() == mod.symbol.tojson()


def test_states_of_a_recurrent_module():
    state = mx.sym.var("state")
    out = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc") + state
    mod = mx.mod.Module(out, ("data",), None, state_names=["state"])
    mod.bind(data_shapes=[("data", (3, 2))], for_training=False)
    mod.init_params(mx.init.Zero())
    mod.set_states(value=1.5)
    mod.forward(mx.io.DataBatch([nd.zeros((3, 2))]))
    assert mod.get_outputs()[0].asnumpy().tolist() == [[1.5, 1.5]] * 3
    mod.set_states(states=[[nd.ones((3, 2)) * 4]])
    mod.forward(mx.io.DataBatch([nd.zeros((3, 2))]))
    assert mod.get_outputs()[0].asnumpy().tolist() == [[4.0, 4.0]] * 3


def test_no_warning_on_a_correct_label_name():
    net = mx.sym.SoftmaxOutput(mx.sym.var("data"), name="softmax")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mx.mod.Module(net)


def _bucket_sym_gen(key):
    """Sequences of length ``key`` summed, then one automatically named dense layer."""
    data = mx.sym.var("data")
    pooled = mx.sym.sum(data, axis=1, keepdims=True)
    return mx.sym.FullyConnected(pooled, num_hidden=2), ("data",), None


def _bucket_batch(key, n=3, fill=1.0):
    return mx.io.DataBatch([nd.ones((n, key)) * fill], bucket_key=key,
                           provide_data=[mx.io.DataDesc("data", (n, key))])


def test_bucketing_module_shares_parameters_between_buckets():
    mod = mx.mod.BucketingModule(_bucket_sym_gen, default_bucket_key=4)
    assert mod.data_names == ("data",)
    mod.bind(data_shapes=[("data", (3, 4))])
    # names restart for every call of sym_gen, so every bucket has the same parameters
    assert mod.symbol.list_arguments() == ["data", "fullyconnected0_weight",
                                           "fullyconnected0_bias"]
    mod.init_params(mx.init.One())
    for key, fill in ((4, 1.0), (7, 2.0), (4, 0.5)):
        mod.forward(_bucket_batch(key, fill=fill), is_train=False)
        assert mod.get_outputs()[0].asnumpy().tolist() == [[key * fill] * 2] * 3
    assert sorted(mod._buckets) == [4, 7]
    weight = mod._buckets[4]._exec_group.param_arrays[0][0]
    weight[:] = 3.0  # the other bucket sees the change: the memory is shared
    mod.forward(_bucket_batch(7), is_train=False)
    assert mod.get_outputs()[0].asnumpy().tolist() == [[21.0] * 2] * 3


@pytest.mark.parametrize("grad_req, expected", [("write", [3.0, 3.0]), ("add", [3.0, 6.0])])
def test_bucketing_gradients_follow_grad_req(grad_req, expected):
    mod = mx.mod.BucketingModule(_bucket_sym_gen, default_bucket_key=4)
    mod.bind(data_shapes=[("data", (3, 4))], grad_req=grad_req)
    mod.init_params(mx.init.One())
    got = []
    for key in (4, 2):
        mod.forward(_bucket_batch(key, fill=1.0 / key), is_train=True)
        mod.backward([nd.ones((3, 2))])
        got.append(mod._curr_module._exec_group.grad_arrays[1][0].asnumpy()[0])
    assert got == expected  # the bias gradient is the batch size per pass


def test_bucketing_checkpoint_round_trip(tmp_path):
    mod = mx.mod.BucketingModule(_bucket_sym_gen, default_bucket_key=4)
    mod.bind(data_shapes=[("data", (3, 4))])
    mod.init_params(mx.init.Normal(1.0))
    mod.forward(_bucket_batch(6), is_train=False)
    prefix = str(tmp_path / "bucket")
    mod.save_checkpoint(prefix, 2)
    loaded = mx.mod.BucketingModule.load(prefix, 2, sym_gen=_bucket_sym_gen,
                                         default_bucket_key=4)
    assert sorted(loaded._buckets) == [4, 6]
    loaded.bind(data_shapes=[("data", (3, 4))], for_training=False)
    for key in (4, 6):
        mod.forward(_bucket_batch(key), is_train=False)
        loaded.forward(_bucket_batch(key), is_train=False)
        np.testing.assert_array_equal(loaded.get_outputs()[0].asnumpy(),
                                      mod.get_outputs()[0].asnumpy())
    with pytest.raises(ValueError, match="sym_gen and default_bucket_key"):
        mx.mod.BucketingModule.load(prefix, 2)


def test_work_load_list_splits_the_batch():
    mod = _fc_module([mx.cpu(0), mx.cpu(1)], work_load_list=[1, 3])
    mod.bind(data_shapes=[("data", (8, 3))])
    assert mod._exec_group.slices == [slice(0, 2), slice(2, 8)]
    mod.init_params(arg_params=_params())
    x = RNG.standard_normal((8, 3)).astype(np.float32)
    mod.forward(mx.io.DataBatch([nd.array(x)]), is_train=False)
    per_device = mod.get_outputs(merge_multi_context=False)[0]
    assert [o.shape for o in per_device] == [(2, 4), (6, 4)]
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(),
                               np.concatenate([o.asnumpy() for o in per_device]))
    with pytest.raises(ValueError, match="work_load_list has 1 entries for 2 contexts"):
        _fc_module([mx.cpu(0), mx.cpu(1)], work_load_list=[1])
    small = _fc_module([mx.cpu(0), mx.cpu(1), mx.cpu(2)])
    with pytest.raises(ValueError, match="too small"):
        small.bind(data_shapes=[("data", (2, 3))])


def test_executor_groups_share_parameters_and_inputs():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    descs = [mx.io.DataDesc("data", (4, 3))]
    first = mx.mod.DataParallelExecutorGroup(net, [mx.cpu()], [1], descs, None,
                                             ["fc_weight", "fc_bias"], True, False)
    deeper = mx.sym.FullyConnected(net, num_hidden=2, name="fc2")
    second = mx.mod.DataParallelExecutorGroup(deeper, [mx.cpu()], [1], descs, None,
                                              ["fc_weight", "fc_bias", "fc2_weight",
                                               "fc2_bias"], True, False, shared_group=first)
    a, b = first.execs[0], second.execs[0]
    for name in ("fc_weight", "fc_bias"):
        assert a.arg_dict[name] is b.arg_dict[name] and a.grad_dict[name] is b.grad_dict[name]
    assert a.arg_dict["data"] is b.arg_dict["data"]
    assert second.shared_data_arrays is first.shared_data_arrays
    assert sorted(first.shared_data_arrays[0]) == ["data"]
    with pytest.raises(ValueError, match="grad_req for 'fc_bias'"):
        mx.mod.DataParallelExecutorGroup(net, [mx.cpu()], [1], descs, None,
                                         ["fc_weight", "fc_bias"], True, False,
                                         grad_req={"fc_bias": "sometimes"})
    with pytest.raises(ValueError, match="grad_req has 2 entries for 3 arguments"):
        mx.mod.DataParallelExecutorGroup(net, [mx.cpu()], [1], descs, None,
                                         ["fc_weight", "fc_bias"], True, False,
                                         grad_req=["write", "null"])


def test_numpy_batches_and_bad_batch_shapes():
    mod = _fc_module()
    mod.bind(data_shapes=[("data", (2, 3))], for_training=False)
    params = _params()
    mod.init_params(arg_params=params)
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    mod.forward(mx.io.DataBatch([x]))
    expected = x @ params["fc_weight"].asnumpy().T + params["fc_bias"].asnumpy()
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(mx.MXNetError):
        mod.forward(mx.io.DataBatch([nd.ones((2, 5))]))


class _RecordingModule(mx.mod.BaseModule):
    """A module whose steps only record what fit asks of them."""

    def __init__(self):
        super().__init__()
        self.calls = []
        self.binded = self.params_initialized = True

    def bind(self, *args, **kwargs):
        self.calls.append("bind")

    def init_params(self, *args, **kwargs):
        self.calls.append("init_params")

    def init_optimizer(self, *args, **kwargs):
        self.calls.append("init_optimizer")

    def forward(self, batch, is_train=None):
        self.calls.append(("forward", int(batch.data[0].asscalar())))

    def backward(self, out_grads=None):
        self.calls.append("backward")

    def update(self):
        self.calls.append("update")

    def update_metric(self, metric, labels, pre_sliced=False):
        self.calls.append(("metric", int(labels[0].asscalar())))

    def get_params(self):
        return {}, {}


def test_fit_runs_the_steps_in_mxnets_order():
    mod = _RecordingModule()
    train = mx.io.NDArrayIter(np.arange(3).reshape(3, 1), np.arange(3) * 10, batch_size=1)
    ends = []
    mod.fit(train, num_epoch=2, begin_epoch=1,
            batch_end_callback=[lambda p: ends.append((p.epoch, p.nbatch))],
            epoch_end_callback=lambda *a: ends.append(("epoch", a[0])))
    per_batch = [[("forward", i), "backward", "update", ("metric", i * 10)] for i in range(3)]
    assert mod.calls == ["bind", "init_params", "init_optimizer"] + sum(per_batch, []) + [
        "init_params"]  # the end-of-epoch set_params
    assert ends == [(1, 0), (1, 1), (1, 2), ("epoch", 1)]
    with pytest.raises(ValueError, match="num_epoch"):
        mod.fit(train)


def test_score_counts_every_sample_of_every_batch():
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3,
                                                     name="fc"), name="softmax")
    mod = mx.mod.Module(net)
    x = RNG.standard_normal((10, 4)).astype(np.float32)
    y = RNG.integers(0, 3, 10).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=5)
    mod.bind(it.provide_data, it.provide_label, for_training=False)
    mod.init_params(mx.init.Normal(1.0))
    predicted = mod.predict(it).asnumpy().argmax(1)
    batches, ends = [], []
    (name, value), = mod.score(it, "acc", batch_end_callback=lambda p: batches.append(p.nbatch),
                               score_end_callback=lambda p: ends.append(p.nbatch))
    assert name == "accuracy" and value == pytest.approx(float((predicted == y).mean()))
    assert batches == [0, 1] and ends == [2]
    (_, first_half), = mod.score(it, mx.metric.Accuracy(), num_batch=1)
    assert first_half == pytest.approx(float((predicted[:5] == y[:5]).mean()))
