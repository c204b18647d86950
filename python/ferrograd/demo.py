"""``python -m ferrograd.demo``: train a small CNN on scikit-learn's 8x8 digits, twice.

1. With Gluon: a hybridized ``HybridSequential`` (Conv-BN-ReLU-Pool x2 + Dense), a ``DataLoader``,
   ``SoftmaxCrossEntropyLoss``, ``Trainer`` with Adam and the ``Accuracy`` metric.
2. With the symbolic API: the same network as a Symbol trained by ``mx.mod.Module.fit`` from an
   ``NDArrayIter``.

Both show a progress bar, the loss and accuracy per epoch and the time per training step;
``--plot FILE`` draws the curves (matplotlib). Needs the ``demo`` extra:
``pip install 'ferrograd[demo]'``.
"""

import argparse
import importlib.util
import sys
import time

import numpy as np

import ferrograd as mx
from ferrograd import autograd, gluon, nd
from ferrograd.gluon import nn

BATCH, EPOCHS, LR = 64, 8, 0.01


def load_digits(seed=0):
    """The 1797 digits as (N, 1, 8, 8) images in [-0.5, 0.5], split 75/25 with a fixed seed."""
    from sklearn.datasets import load_digits as sk_digits

    x, y = sk_digits(return_X_y=True)
    x = (x / 16.0 - 0.5).astype(np.float32).reshape(-1, 1, 8, 8)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order].astype(np.float32)
    cut = int(0.75 * len(x))
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def make_cnn():
    """Conv-BN-ReLU-Pool twice (16 and 32 channels), then a dense layer to the 10 classes."""
    net = nn.HybridSequential()
    for channels in (16, 32):
        net.add(nn.Conv2D(channels, kernel_size=3, padding=1), nn.BatchNorm(),
                nn.Activation("relu"), nn.MaxPool2D(pool_size=2))
    net.add(nn.Dense(10))
    return net


class _Progress:
    """tqdm when installed, else a one-line text bar on stderr; silent when ``quiet``."""

    def __init__(self, total, desc, quiet):
        self.total, self.desc, self.quiet, self.n = total, desc, quiet, 0
        self.bar = None
        if quiet:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self.bar = tqdm(total=total, desc=desc, unit="step", leave=False, ncols=78)

    def update(self, postfix=""):
        self.n += 1
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(postfix, refresh=False)
            self.bar.update(1)
            return
        filled = 30 * self.n // self.total
        sys.stderr.write(f"\r{self.desc} [{'#' * filled}{'.' * (30 - filled)}] "
                         f"{self.n}/{self.total} {postfix}")
        sys.stderr.flush()

    def close(self):
        if self.bar is not None:
            self.bar.close()
        elif not self.quiet:
            sys.stderr.write("\r" + " " * 78 + "\r")


def _report(name, epoch, history, quiet):
    if not quiet:
        print(f"  {name} epoch {epoch + 1:2d}: loss {history['loss'][-1]:.4f}, train accuracy "
              f"{history['train_acc'][-1]:.2%}, test accuracy {history['test_acc'][-1]:.2%}")


def train_gluon(train, test, epochs=EPOCHS, quiet=False, seed=0):
    """Gluon training; returns (net, history) with per-epoch ``loss``, ``train_acc`` and
    ``test_acc`` and the mean ``step_time`` in seconds."""
    mx.random.seed(seed)
    net = make_cnn()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": LR})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(*train), batch_size=BATCH,
                                   shuffle=True, last_batch="discard")
    history = {"loss": [], "train_acc": [], "test_acc": [], "step_time": 0.0}
    steps, spent = 0, 0.0
    for epoch in range(epochs):
        metric, total_loss, seen = mx.metric.Accuracy(), 0.0, 0
        bar = _Progress(len(loader), f"  gluon  {epoch + 1:2d}", quiet)
        for x, y in loader:
            t0 = time.perf_counter()
            with autograd.record():
                out = net(x)
                loss = loss_fn(out, y)
            loss.backward()
            trainer.step(x.shape[0])
            spent += time.perf_counter() - t0
            steps += 1
            metric.update(y, out)
            total_loss += float(loss.sum().asscalar())
            seen += x.shape[0]
            bar.update(f"loss {total_loss / seen:.3f}")
        bar.close()
        history["loss"].append(total_loss / seen)
        history["train_acc"].append(float(metric.get()[1]))
        history["test_acc"].append(accuracy_gluon(net, test))
        _report("gluon ", epoch, history, quiet)
    history["step_time"] = spent / max(steps, 1)
    return net, history


def accuracy_gluon(net, data):
    x, y = data
    return float((net(nd.array(x)).asnumpy().argmax(1) == y).mean())


def cnn_symbol():
    """The same network as a Symbol, ending in ``SoftmaxOutput`` (label ``softmax_label``)."""
    return mx.sym.SoftmaxOutput(make_cnn()(mx.sym.var("data")), name="softmax")


class _EpochRecorder:
    """A batch-end callback for ``Module.fit``: times the steps, feeds the progress bar and
    keeps the metric of each epoch's last batch."""

    def __init__(self, module, batches, quiet):
        self.module, self.batches, self.quiet = module, batches, quiet
        self.bar, self.last, self.steps, self.spent = None, None, 0, 0.0
        self.epoch_metrics = []

    def __call__(self, param):
        now = time.perf_counter()
        if param.nbatch == 0:
            self.bar = _Progress(self.batches, f"  module {param.epoch + 1:2d}", self.quiet)
        else:
            self.spent += now - self.last
            self.steps += 1
        self.last = now
        values = dict(param.eval_metric.get_name_value())
        self.bar.update(f"loss {values['cross-entropy']:.3f}")
        if param.nbatch == self.batches - 1:
            self.bar.close()
            self.epoch_metrics.append(values)


def train_module(train, test, epochs=EPOCHS, quiet=False, seed=0):
    """``Module.fit`` training of the same network; returns (module, history) as
    :func:`train_gluon`."""
    mx.random.seed(seed)
    np.random.seed(seed)
    train_iter = mx.io.NDArrayIter(train[0], train[1], BATCH, shuffle=True,
                                   last_batch_handle="discard")
    test_iter = mx.io.NDArrayIter(test[0], test[1], BATCH)
    mod = mx.mod.Module(cnn_symbol(), data_names=("data",), label_names=("softmax_label",))
    recorder = _EpochRecorder(mod, len(train[0]) // BATCH, quiet)
    history = {"loss": [], "train_acc": [], "test_acc": [], "step_time": 0.0}

    def at_epoch_end(epoch, symbol, arg_params, aux_params):
        values = recorder.epoch_metrics[-1]
        history["loss"].append(float(values["cross-entropy"]))
        history["train_acc"].append(float(values["accuracy"]))
        # predict drops the padding of the last batch (score would count it)
        predicted = mod.predict(test_iter).asnumpy().argmax(1)
        history["test_acc"].append(float((predicted == test[1]).mean()))
        _report("module", epoch, history, quiet)

    mod.fit(train_iter, eval_metric=["acc", "ce"], optimizer="adam",
            optimizer_params={"learning_rate": LR}, initializer=mx.init.Xavier(),
            num_epoch=epochs, batch_end_callback=recorder, epoch_end_callback=at_epoch_end)
    history["step_time"] = recorder.spent / max(recorder.steps, 1)
    return mod, history


def plot(histories, path):
    """Loss and test-accuracy curves of each run, written as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    for name, h in histories.items():
        epochs = range(1, len(h["loss"]) + 1)
        ax_loss.plot(epochs, h["loss"], marker="o", label=name)
        ax_acc.plot(epochs, h["test_acc"], marker="o", label=f"{name} (test)")
        ax_acc.plot(epochs, h["train_acc"], linestyle="--", label=f"{name} (train)")
    ax_loss.set(xlabel="epoch", ylabel="training loss", title="Loss")
    ax_acc.set(xlabel="epoch", ylabel="accuracy", title="Accuracy")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m ferrograd.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--plot", metavar="FILE", help="write the curves to a PNG file")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        parser.error("--plot needs matplotlib: pip install 'ferrograd[demo]'")
    train, test = load_digits()
    print(f"ferrograd {mx.__version__}: a small CNN (Conv-BN-ReLU-Pool x2 + Dense) on "
          f"scikit-learn's digits")
    print(f"  {len(train[0])} training and {len(test[0])} test images, batch {BATCH}, "
          f"{args.epochs} epochs, Adam (learning rate {LR})")
    t0 = time.perf_counter()
    _, h_gluon = train_gluon(train, test, args.epochs, args.quiet)
    _, h_module = train_module(train, test, args.epochs, args.quiet)
    for name, h in (("gluon ", h_gluon), ("module", h_module)):
        print(f"  {name}: test accuracy {h['test_acc'][-1]:.2%}, "
              f"{h['step_time'] * 1e3:.2f} ms per training step")
    print(f"  total {time.perf_counter() - t0:.1f} s")
    if args.plot:
        plot({"Gluon": h_gluon, "Module": h_module}, args.plot)
        print(f"  curves written to {args.plot}")
    return h_gluon, h_module


if __name__ == "__main__":
    main()
