"""gluon.Trainer against a pure-nd training loop, and mx.kv.create('local'|'device') semantics."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, gluon, nd


def _make_net(seed):
    mx.random.seed(seed)
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Xavier())
    return net


def test_trainer_adam_matches_pure_nd_loop():
    rng = np.random.default_rng(0)
    x = nd.array(rng.standard_normal((8, 4)).astype(np.float32))
    y = nd.array(rng.standard_normal((8, 3)).astype(np.float32))
    net = _make_net(1)
    w0, b0 = net.weight.data().asnumpy(), net.bias.data().asnumpy()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05, "wd": 0.01})
    losses = []
    for _ in range(5):
        with autograd.record():
            loss = ((net(x) - y) ** 2).sum()
        loss.backward()
        trainer.step(8)
        losses.append(float(loss.asscalar()))
    assert losses[-1] < losses[0]

    # The same updates written with nd ops only.
    w, b = nd.array(w0), nd.array(b0)
    states = {k: [np.zeros_like(v), np.zeros_like(v)] for k, v in (("w", w0), ("b", b0))}
    for t in range(1, 6):
        w.attach_grad()
        b.attach_grad()
        with autograd.record():
            loss = ((nd.dot(x, w, transpose_b=True) + b - y) ** 2).sum()
        loss.backward()
        new = {}
        for k, p in (("w", w), ("b", b)):
            g = p.grad.asnumpy() / 8 + 0.01 * p.asnumpy()
            m, v = states[k]
            m[:] = 0.9 * m + 0.1 * g
            v[:] = 0.999 * v + 0.001 * g * g
            lr = 0.05 * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
            new[k] = nd.array(p.asnumpy() - lr * m / (np.sqrt(v) + 1e-8))
        w, b = new["w"], new["b"]
    np.testing.assert_allclose(net.weight.data().asnumpy(), w.asnumpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(net.bias.data().asnumpy(), b.asnumpy(), rtol=1e-5, atol=1e-5)


def _two_ctx_param():
    x = gluon.Parameter("x", shape=(5,))
    x.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    return x


def _backward_plus_one(x):
    with autograd.record():
        for w in x.list_data():
            (w + 1).backward()


def test_trainer_two_contexts_sums_gradients_on_kvstore():
    x = _two_ctx_param()
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "momentum": 0.5})
    _backward_plus_one(x)
    trainer.step(1)
    assert trainer._kvstore.type == "device" and trainer._update_on_kvstore
    for d in x.list_data():
        np.testing.assert_allclose(d.asnumpy(), -2.0)
    x.lr_mult = 0.5
    _backward_plus_one(x)
    trainer.step(1)
    # momentum: mom = 0.5*(-2) - 0.5*2 = -2 -> x = -4
    np.testing.assert_allclose(x.data(mx.cpu(1)).asnumpy(), -4.0)


def test_trainer_single_context_has_no_kvstore_and_stale_grad_check():
    x = gluon.Parameter("x", shape=(3,))
    x.initialize(init="zeros")
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0})
    _backward_plus_one(x)
    trainer.step(1)
    assert trainer._kvstore is None and trainer._update_on_kvstore is None
    with pytest.raises(UserWarning, match="has not been updated by backward"):
        trainer.step(1)
    trainer.step(1, ignore_stale_grad=True)
    np.testing.assert_allclose(x.data().asnumpy(), -1.0)


def test_trainer_allreduce_update_save_load_and_learning_rate(tmp_path):
    x = _two_ctx_param()
    trainer = gluon.Trainer(
        [x], "sgd", {"learning_rate": 1.0, "momentum": 0.5}, update_on_kvstore=False
    )
    with autograd.record():
        for i, w in enumerate(x.list_data()):
            (w * (i + 1)).backward()
    trainer.allreduce_grads()
    np.testing.assert_allclose(x.grad(mx.cpu(0)).asnumpy(), 3.0)
    trainer.update(1)
    np.testing.assert_allclose(x.data(mx.cpu(1)).asnumpy(), -3.0)
    f = str(tmp_path / "t.states")
    trainer.save_states(f)
    before = trainer._updaters[0].states[0].asnumpy()
    trainer.load_states(f)
    np.testing.assert_allclose(trainer._updaters[0].states[0].asnumpy(), before)
    assert trainer._optimizer is trainer._updaters[1].optimizer
    assert trainer.learning_rate == 1.0
    trainer.set_learning_rate(0.25)
    assert trainer.learning_rate == 0.25


def test_trainer_bad_arguments():
    with pytest.raises(ValueError, match="list or dict of Parameters"):
        gluon.Trainer(5, "sgd")
    x = gluon.Parameter("x", shape=(2,))
    x.initialize()
    with pytest.raises(AssertionError, match="optimizer_params must be None"):
        gluon.Trainer([x], mx.optimizer.SGD(), {"learning_rate": 0.1})
    with pytest.raises(ValueError, match="Cannot find optimizer"):
        gluon.Trainer([x], "nope")


def test_trainer_teststore_rejects_update_on_kvstore():
    x = _two_ctx_param()
    kv = mx.kv.create("teststore")
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0}, kvstore=kv)
    _backward_plus_one(x)
    trainer.step(1)
    assert trainer._update_on_kvstore is False
    np.testing.assert_allclose(x.data(mx.cpu(1)).asnumpy(), -2.0)
    bad = gluon.Trainer([x], "sgd", kvstore=kv, update_on_kvstore=True)
    with pytest.raises(ValueError):
        bad._init_kvstore()


def test_kvstore_push_pull_semantics():
    kv = mx.kv.create("local")
    assert kv.type == "local" and kv.rank == 0 and kv.num_workers == 1
    kv.init(3, nd.zeros((2, 2)))
    kv.init([5, 7], [nd.ones((2, 2))] * 2)
    kv.push(3, [nd.ones((2, 2))] * 4)  # summed over "devices"
    out = nd.zeros((2, 2))
    kv.pull(3, out=out)
    np.testing.assert_allclose(out.asnumpy(), 4.0)
    outs = [nd.zeros((2, 2)), nd.zeros((2, 2))]
    kv.pull([5, 7], out=outs)
    np.testing.assert_allclose(outs[1].asnumpy(), 1.0)
    val = nd.ones((2, 2)) * 2
    kv.pushpull(5, val)
    np.testing.assert_allclose(val.asnumpy(), 2.0)
    b = [nd.zeros((3,)), nd.zeros((3,))]
    kv.broadcast(11, nd.ones((3,)) * 7, out=b)
    np.testing.assert_allclose(b[0].asnumpy(), 7.0)


def test_kvstore_updater_optimizer_and_states(tmp_path):
    kv = mx.kv.create("device")
    kv.init("w", nd.ones((3,)))
    kv._set_updater(lambda key, recv, local: local.__setitem__(slice(None), local + 10 * recv))
    kv.push("w", nd.ones((3,)))
    out = nd.zeros((3,))
    kv.pull("w", out=out)
    np.testing.assert_allclose(out.asnumpy(), 11.0)
    kv = mx.kv.create()
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, momentum=0.9))
    kv.init(0, nd.ones((3,)))
    kv.push(0, [nd.ones((3,)), nd.ones((3,))])
    kv.pull(0, out=out)
    np.testing.assert_allclose(out.asnumpy(), 0.0)
    f = str(tmp_path / "kv.states")
    kv.save_optimizer_states(f, dump_optimizer=True)
    kv.load_optimizer_states(f)
    np.testing.assert_allclose(kv._updater.states[0].asnumpy(), -1.0)


def test_kvstore_bad_input():
    kv = mx.kv.create()
    kv.init(1, nd.zeros((2,)))
    with pytest.raises(mx.MXNetError, match="cannot mix int and str"):
        kv.init("a", nd.zeros((2,)))
    with pytest.raises(mx.MXNetError, match="not been initialized"):
        kv.pull(2, out=nd.zeros((2,)))
    with pytest.raises(mx.MXNetError, match="duplicate"):
        kv.init(1, nd.zeros((2,)))
    with pytest.raises(mx.MXNetError, match="dist_async.*not offered.*dist_sync"):
        mx.kv.create("dist_async")
    with pytest.raises(mx.MXNetError, match="unknown kvstore type 'bogus'.*local"):
        mx.kv.create("bogus")
    assert mx.kvstore.create is mx.kv.create


@pytest.mark.parametrize("on_kvstore", [None, False])
def test_scheduler_counts_one_update_per_step_across_devices(on_kvstore):
    x = _two_ctx_param()
    sched = mx.lr_scheduler.FactorScheduler(2, factor=0.1, base_lr=1.0)
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "lr_scheduler": sched},
                            update_on_kvstore=on_kvstore)
    rates = []
    for _ in range(5):
        _backward_plus_one(x)
        trainer.step(1)
        rates.append(trainer.learning_rate)
    assert rates == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.01])
    assert trainer._optimizer.num_update == 5
