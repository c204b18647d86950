"""``python -m ferrograd.demo``: train a small MLP on scikit-learn's 8x8 digits, twice.

1. Imperatively, with ``autograd.record()`` and ``backward()`` (MXNet's Gluon-free style).
2. Declaratively, as a ``Symbol`` bound to an ``Executor`` with ``simple_bind``.

Both paths use the same initial weights, the same mini-batches and plain SGD with momentum, so
they learn the same model. Before training, the gradients of each path are checked against finite
differences (MXNet's ``check_numeric_gradient`` for the symbol, Chainer's ``check_backward`` for
the autograd model). Needs the ``demo`` extra: ``pip install 'ferrograd[demo]'``.
"""

import time

import numpy as np

import ferrograd as mx
from ferrograd import autograd, nd, test_utils

HIDDEN, CLASSES = 128, 10
BATCH, EPOCHS, LR, MOMENTUM = 64, 12, 0.1, 0.9


def load_digits(seed=0):
    """Standardised 8x8 digits (1797 images), split 75/25 with a fixed seed."""
    from sklearn.datasets import load_digits as sk_digits

    x, y = sk_digits(return_X_y=True)
    x = (x / 16.0 - 0.5).astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order].astype(np.float32)
    cut = int(0.75 * len(x))
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def init_params(n_in, seed=0):
    rng = np.random.default_rng(seed)
    scale1, scale2 = np.sqrt(2.0 / n_in), np.sqrt(2.0 / HIDDEN)
    return {
        "fc1_weight": (rng.standard_normal((HIDDEN, n_in)) * scale1).astype(np.float32),
        "fc1_bias": np.zeros(HIDDEN, np.float32),
        "fc2_weight": (rng.standard_normal((CLASSES, HIDDEN)) * scale2).astype(np.float32),
        "fc2_bias": np.zeros(CLASSES, np.float32),
    }


def batches(n, epoch, seed=0):
    order = np.random.default_rng(seed + epoch).permutation(n)
    return [order[i:i + BATCH] for i in range(0, n - BATCH + 1, BATCH)]


def sgd(params, grads, velocity, lr):
    """``v = momentum * v - lr * g; w += v`` in place, for NDArrays."""
    for k, w in params.items():
        velocity[k][:] = velocity[k] * MOMENTUM - grads[k] * lr
        w[:] = w + velocity[k]


def _progress(total, desc, quiet):
    if quiet:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="step", leave=True, ncols=78)


def mlp_forward(p, x):
    """The model as autograd code: logits of a 64-128-10 relu MLP."""
    h = nd.relu(nd.FullyConnected(x, p["fc1_weight"], p["fc1_bias"], num_hidden=HIDDEN))
    return nd.FullyConnected(h, p["fc2_weight"], p["fc2_bias"], num_hidden=CLASSES)


def train_autograd(train, epochs=EPOCHS, quiet=False):
    """Imperative training; returns (params, seconds per step)."""
    (x, y) = train
    params = {k: nd.array(v) for k, v in init_params(x.shape[1]).items()}
    velocity = {k: nd.zeros(v.shape) for k, v in params.items()}
    for w in params.values():
        w.attach_grad()
    steps, spent = 0, 0.0
    bar = _progress(epochs * (len(x) // BATCH), "  autograd", quiet)
    for epoch in range(epochs):
        for idx in batches(len(x), epoch):
            xb, yb = nd.array(x[idx]), nd.array(y[idx])
            t0 = time.perf_counter()
            with autograd.record():
                loss = nd.softmax_cross_entropy(mlp_forward(params, xb), yb)
            loss.backward()
            sgd(params, {k: w.grad for k, w in params.items()}, velocity, LR / len(idx))
            spent += time.perf_counter() - t0
            steps += 1
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return params, spent / max(steps, 1)


def mlp_symbol():
    """The same model as a Symbol: weights become arguments named fc1_weight, fc1_bias, ..."""
    data = mx.sym.var("data")
    fc1 = mx.sym.FullyConnected(data=data, num_hidden=HIDDEN, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=CLASSES, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def train_executor(train, epochs=EPOCHS, quiet=False):
    """Symbolic training with one bound executor; returns (executor, seconds per step)."""
    (x, y) = train
    net = mlp_symbol()
    req = {n: "null" if n in ("data", "softmax_label") else "write" for n in net.list_arguments()}
    exe = net.simple_bind(mx.cpu(), grad_req=req, data=(BATCH, x.shape[1]))
    exe.copy_params_from({k: nd.array(v) for k, v in init_params(x.shape[1]).items()})
    params = {k: exe.arg_dict[k] for k in init_params(x.shape[1])}
    velocity = {k: nd.zeros(v.shape) for k, v in params.items()}
    steps, spent = 0, 0.0
    bar = _progress(epochs * (len(x) // BATCH), "  executor", quiet)
    for epoch in range(epochs):
        for idx in batches(len(x), epoch):
            t0 = time.perf_counter()
            exe.forward(is_train=True, data=x[idx], softmax_label=y[idx])
            exe.backward()  # SoftmaxOutput's gradient needs no head gradient
            sgd(params, {k: exe.grad_dict[k] for k in params}, velocity, LR / BATCH)
            spent += time.perf_counter() - t0
            steps += 1
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return exe, spent / max(steps, 1)


def accuracy_autograd(params, data):
    x, y = data
    return float((mlp_forward(params, nd.array(x)).asnumpy().argmax(1) == y).mean())


def accuracy_executor(exe, data):
    x, y = data
    test_exe = exe.reshape(allow_up_sizing=True, data=(len(x), x.shape[1]),
                           softmax_label=(len(x),))
    out = test_exe.forward(is_train=False, data=x)[0].asnumpy()
    return float((out.argmax(1) == y).mean())


def check_gradients(train):
    """Finite-difference checks of both models on a few samples, in float64."""
    x, y = train[0][:4].astype(np.float64), train[1][:4]
    p = {k: v.astype(np.float64) for k, v in init_params(x.shape[1]).items()}
    loc = {"data": x, "softmax_label": y, **p}
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=HIDDEN, name="fc1")
    small = mx.sym.FullyConnected(mx.sym.tanh(fc), num_hidden=CLASSES, name="fc2")
    test_utils.check_numeric_gradient(small, {k: v for k, v in loc.items() if k != "softmax_label"},
                                      grad_nodes=["fc2_weight", "fc1_bias"], dtype=np.float64,
                                      rtol=1e-4, atol=1e-6)
    w2 = nd.array(p["fc2_weight"], dtype="float64")
    b1 = nd.array(p["fc1_bias"], dtype="float64")
    w1, b2 = nd.array(p["fc1_weight"], dtype="float64"), nd.array(p["fc2_bias"], dtype="float64")
    xb = nd.array(x, dtype="float64")

    def model(w2, b1):
        h = nd.tanh(nd.FullyConnected(xb, w1, b1, num_hidden=HIDDEN))
        return nd.FullyConnected(h, w2, b2, num_hidden=CLASSES)

    y_grad = np.random.default_rng(1).standard_normal((4, CLASSES))
    test_utils.check_backward(model, (w2, b1), y_grad, atol=1e-5, rtol=1e-4)


def main(epochs=EPOCHS, quiet=False):
    print(f"ferrograd {mx.__version__}: a 64-{HIDDEN}-{CLASSES} MLP on scikit-learn's digits")
    train, test = load_digits()
    print(f"  {len(train[0])} training and {len(test[0])} test images, batch {BATCH}, "
          f"{epochs} epochs, SGD with momentum")
    t0 = time.perf_counter()
    check_gradients(train)
    print(f"  gradients checked against finite differences ({time.perf_counter() - t0:.2f} s): "
          "check_numeric_gradient (symbol), check_backward (autograd)")
    params, step_ag = train_autograd(train, epochs, quiet)
    exe, step_ex = train_executor(train, epochs, quiet)
    acc_ag, acc_ex = accuracy_autograd(params, test), accuracy_executor(exe, test)
    print(f"  autograd: test accuracy {acc_ag:.2%}, {step_ag * 1e6:7.1f} us per training step")
    print(f"  executor: test accuracy {acc_ex:.2%}, {step_ex * 1e6:7.1f} us per training step")
    print(f"  total {time.perf_counter() - t0:.2f} s")
    return acc_ag, acc_ex


if __name__ == "__main__":
    main()
