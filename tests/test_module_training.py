"""Module training end to end: update/fit against a pure-nd reference loop (SGD with momentum
and weight decay, MXNet's rescale_grad = 1/batch and no decay on biases), on one and two
contexts; fit's callbacks, log lines, score and optimizer states."""

import logging

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd

nd = mx.nd
BATCH, LR, MOMENTUM, WD = 8, 0.1, 0.9, 0.01


def _data(n=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 5)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.float32) + (x[:, 2] > 0.5)
    return x, y.astype(np.float32)


def _initial(seed=1):
    rng = np.random.default_rng(seed)
    return {"fc1_weight": rng.standard_normal((6, 5)).astype(np.float32) * 0.5,
            "fc1_bias": rng.standard_normal(6).astype(np.float32) * 0.1,
            "fc2_weight": rng.standard_normal((3, 6)).astype(np.float32) * 0.5,
            "fc2_bias": np.zeros(3, np.float32)}


def _symbol():
    h = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=6, name="fc1"),
                          act_type="relu")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"),
                                name="softmax")


def _reference(x, y, epochs):
    """The same training as plain nd code: autograd for the gradient of the summed softmax
    cross-entropy (SoftmaxOutput's gradient), then SGD with momentum by hand."""
    params = {k: nd.array(v) for k, v in _initial().items()}
    moms = {k: nd.zeros(v.shape) for k, v in params.items()}
    for w in params.values():
        w.attach_grad()
    for _ in range(epochs):
        for start in range(0, len(x), BATCH):
            xb, yb = nd.array(x[start:start + BATCH]), nd.array(y[start:start + BATCH])
            with autograd.record():
                h = nd.relu(nd.FullyConnected(xb, params["fc1_weight"], params["fc1_bias"],
                                              num_hidden=6))
                out = nd.FullyConnected(h, params["fc2_weight"], params["fc2_bias"],
                                        num_hidden=3)
                loss = nd.softmax_cross_entropy(out, yb)
            loss.backward()
            for name, w in params.items():
                wd = WD if name.endswith("_weight") else 0.0  # MXNet: no decay on biases
                g = w.grad / BATCH + wd * w
                moms[name][:] = MOMENTUM * moms[name] - LR * g
                w[:] = w + moms[name]
    return {k: v.asnumpy() for k, v in params.items()}


@pytest.mark.parametrize("contexts", [[mx.cpu()], [mx.cpu(0), mx.cpu(1)]])
def test_fit_equals_the_nd_reference_loop(contexts):
    x, y = _data()
    epochs = 3
    mod = mx.mod.Module(_symbol(), context=contexts)
    train = mx.io.NDArrayIter(x, y, BATCH)
    mod.fit(train, num_epoch=epochs, optimizer="sgd",
            optimizer_params={"learning_rate": LR, "momentum": MOMENTUM, "wd": WD},
            arg_params={k: nd.array(v) for k, v in _initial().items()})
    expected = _reference(x, y, epochs)
    got = mod.get_params()[0]
    for name, value in expected.items():
        np.testing.assert_allclose(got[name].asnumpy(), value, rtol=1e-5, atol=1e-5,
                                   err_msg=name)


def test_loss_decreases_and_score_predict_agree():
    x, y = _data(64)
    mod = mx.mod.Module(_symbol())
    train = mx.io.NDArrayIter(x, y, BATCH)
    mod.bind(train.provide_data, train.provide_label)
    mod.init_params(arg_params={k: nd.array(v) for k, v in _initial().items()})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": LR,
                                                          "momentum": MOMENTUM})
    assert mod._optimizer.rescale_grad == pytest.approx(1.0 / BATCH)

    def mean_loss():
        probs = mod.predict(train).asnumpy()
        return float(-np.log(probs[np.arange(len(y)), y.astype(int)]).mean())

    before = mean_loss()
    for _ in range(5):
        train.reset()
        for batch in train:
            mod.forward_backward(batch)
            mod.update()
    after = mean_loss()
    assert after < 0.5 * before
    (name, acc), = mod.score(train, "acc")
    expected = float((mod.predict(train).asnumpy().argmax(1) == y).mean())
    assert name == "accuracy" and acc == pytest.approx(expected)


def test_fit_callbacks_and_log_lines(caplog):
    caplog.set_level(logging.INFO)
    x, y = _data(32)
    mod = mx.mod.Module(_symbol())
    seen_batches, seen_epochs = [], []
    mod.fit(mx.io.NDArrayIter(x, y, BATCH), eval_data=mx.io.NDArrayIter(x, y, BATCH),
            num_epoch=2, optimizer_params={"learning_rate": 0.05},
            batch_end_callback=lambda p: seen_batches.append((p.epoch, p.nbatch)),
            epoch_end_callback=lambda e, s, a, aux: seen_epochs.append((e, sorted(a))))
    assert seen_batches == [(e, b) for e in range(2) for b in range(4)]
    assert seen_epochs == [(e, ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight"])
                           for e in range(2)]
    lines = [m.split("=")[0] for m in caplog.messages if m.startswith("Epoch[")]
    assert lines == [f"Epoch[{e}] {what}" for e in range(2)
                     for what in ("Train-accuracy", "Time cost", "Validation-accuracy")]


def test_optimizer_states_survive_a_checkpoint(tmp_path):
    x, y = _data(16)
    mod = mx.mod.Module(_symbol())
    train = mx.io.NDArrayIter(x, y, BATCH)
    mod.fit(train, num_epoch=1, optimizer_params={"learning_rate": LR, "momentum": MOMENTUM})
    prefix = str(tmp_path / "run")
    mod.save_checkpoint(prefix, 1, save_optimizer_states=True)
    again = mx.mod.Module.load(prefix, 1, load_optimizer_states=True)
    again.bind(train.provide_data, train.provide_label)
    again.init_optimizer(optimizer_params={"learning_rate": LR, "momentum": MOMENTUM})
    # one more identical step on both gives identical weights (the momenta were restored)
    batch = next(iter(train))
    for m in (mod, again):
        m.forward_backward(batch)
        m.update()
    for name, value in mod.get_params()[0].items():
        np.testing.assert_allclose(again.get_params()[0][name].asnumpy(), value.asnumpy(),
                                   rtol=1e-6, atol=1e-7)


def test_init_optimizer_with_an_optimizer_object():
    mod = mx.mod.Module(_symbol())
    mod.bind([("data", (BATCH, 5))], [("softmax_label", (BATCH,))])
    mod.init_params()
    with pytest.warns(UserWarning, match="rescale_grad"):
        mod.init_optimizer(optimizer=mx.optimizer.SGD(learning_rate=0.1))
    assert mod._optimizer.idx2name == dict(enumerate(["fc1_weight", "fc1_bias", "fc2_weight",
                                                      "fc2_bias"]))
    with pytest.raises(TypeError, match="optimizer must be a name"):
        mod.init_optimizer(optimizer=3, force_init=True)
