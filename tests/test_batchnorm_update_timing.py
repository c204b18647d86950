"""When BatchNorm's moving statistics change: as in MXNet, in the backward pass through a
forward that ran in training, once per backward; never in a forward alone."""
import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, nd

MOM = 0.9
X = np.random.RandomState(3).randn(4, 3, 2, 2)


def batch_mean(x):
    return x.mean(axis=(0, 2, 3))


def batch_var(x):
    return x.var(axis=(0, 2, 3))


def fold(moving, batch):
    m = float(np.float32(MOM))
    return moving * m + batch * (1 - m)


def stats():
    return nd.zeros(3, dtype="float64"), nd.ones(3, dtype="float64")


def params():
    return nd.ones(3, dtype="float64"), nd.zeros(3, dtype="float64")


def bn(x, mean, var):
    g, b = params()
    return nd.BatchNorm(x, g, b, mean, var, momentum=MOM, fix_gamma=False)


def test_forward_alone_never_updates():
    x = nd.array(X, dtype="float64")
    mean, var = stats()
    bn(x, mean, var)
    with autograd.train_mode():
        bn(x, mean, var)
    x.attach_grad()
    with autograd.record():
        bn(x, mean, var)
    np.testing.assert_array_equal(mean.asnumpy(), 0)
    np.testing.assert_array_equal(var.asnumpy(), 1)


def test_backward_folds_in_the_batch_statistics():
    x = nd.array(X, dtype="float64")
    x.attach_grad()
    mean, var = stats()
    with autograd.record():
        y = bn(x, mean, var)
    y.backward()
    np.testing.assert_allclose(mean.asnumpy(), fold(0, batch_mean(X)), rtol=1e-13)
    np.testing.assert_allclose(var.asnumpy(), fold(1, batch_var(X)), rtol=1e-13)


def test_two_forwards_one_backward_fold_both_in_reverse_order():
    x = nd.array(X, dtype="float64")
    x.attach_grad()
    mean, var = stats()
    with autograd.record():
        z = bn(x, mean, var) + bn(x * 2, mean, var)
    np.testing.assert_array_equal(mean.asnumpy(), 0)
    z.backward()
    # the second application is reached first by the reverse sweep
    want = fold(fold(0, batch_mean(2 * X)), batch_mean(X))
    np.testing.assert_allclose(mean.asnumpy(), want, rtol=1e-13)


def test_each_backward_of_a_retained_graph_updates_once():
    x = nd.array(X, dtype="float64")
    x.attach_grad()
    mean, var = stats()
    with autograd.record():
        y = bn(x, mean, var)
    y.backward(retain_graph=True)
    y.backward()
    twice = fold(fold(0, batch_mean(X)), batch_mean(X))
    np.testing.assert_allclose(mean.asnumpy(), twice, rtol=1e-13)


def test_predict_mode_backward_does_not_update():
    x = nd.array(X, dtype="float64")
    x.attach_grad()
    mean, var = stats()
    with autograd.record(train_mode=False):
        y = bn(x, mean, var)
    y.backward(train_mode=False)
    np.testing.assert_array_equal(mean.asnumpy(), 0)


@pytest.mark.parametrize("steps, folds", [("f", 0), ("fb", 1), ("fbf", 1), ("ff", 0), ("fbb", 2),
                                          ("fbfb", 2)])
def test_executor_updates_once_per_backward(steps, folds):
    sym = mx.sym.BatchNorm(mx.sym.var("data"), fix_gamma=False, momentum=MOM, name="bn")
    exe = sym.simple_bind(mx.cpu(), data=X.shape, type_dict={"data": "float64"})
    exe.arg_dict["data"][:] = X
    exe.arg_dict["bn_gamma"][:] = 1
    for s in steps:
        if s == "f":
            exe.forward(is_train=True)
        else:
            exe.backward(nd.ones(X.shape, dtype="float64"))
    want = 0.0
    for _ in range(folds):
        want = fold(want, batch_mean(X))
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"].asnumpy(), want, rtol=1e-13)


@pytest.mark.parametrize("hybridize", [False, True])
def test_gluon_forward_in_record_without_backward_keeps_running_stats(hybridize):
    net = mx.gluon.nn.BatchNorm(momentum=MOM, in_channels=3)
    net.initialize()
    if hybridize:
        net.hybridize()
    net.cast("float64")
    x = nd.array(X, dtype="float64")
    with autograd.record():
        net(x)
    np.testing.assert_array_equal(net.running_mean.data().asnumpy(), 0)
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    np.testing.assert_allclose(net.running_mean.data().asnumpy(), fold(0, batch_mean(X)),
                               rtol=1e-13)
