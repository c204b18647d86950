#!/usr/bin/env python3
"""A full training step, hybridized Gluon against PyTorch eager (issue 17's target: ≤ 0.9×).

One step is forward under ``autograd.record()``, ``SoftmaxCrossEntropyLoss``, backward and
``Trainer.step`` with Adam; PyTorch does ``zero_grad``, forward, ``cross_entropy``, backward and
``torch.optim.Adam.step`` on the same model with the same weights. Models:

- the demo CNN (Conv3x3-BN-ReLU-MaxPool with 16 then 32 channels, Dense to 10) on 1x8x8 images;
- the MLP 784-512-512-10 (ReLU).

Batch 128, float32. Each framework runs in rounds interleaved with the other, after a pause that
lets the other's threads sleep; the figure is the median over rounds of the mean step time.
Runs without PyTorch (its column reads n/a). Also reports the imperative (not hybridized) Gluon
step. Usage: ``python benches/python/training_step.py [--rounds N] [--steps N] [--threads N]``
"""

import argparse
import os
import platform
import statistics
import time

import numpy as np

# Imported in main() once the thread counts are in the environment.
mx = autograd = gluon = nn = torch = None

BATCH = 128


def _import_frameworks(threads):
    """Every framework gets ``threads`` threads (RAYON/OMP/OPENBLAS_NUM_THREADS, set before the
    libraries load, and ``torch.set_num_threads``): on a shared 2-core machine PyTorch's OpenMP
    threads spin at barriers when a core is taken, and its step slows down 10-40x."""
    global mx, autograd, gluon, nn, torch
    os.environ["RAYON_NUM_THREADS"] = str(threads)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))
    import ferrograd as mx
    from ferrograd import autograd, gluon
    from ferrograd.gluon import nn
    try:
        import torch
        torch.set_num_threads(threads)
    except ImportError:
        torch = None


def gluon_cnn():
    net = nn.HybridSequential()
    for channels in (16, 32):
        net.add(nn.Conv2D(channels, kernel_size=3, padding=1, in_channels=1 if channels == 16
                          else 16), nn.BatchNorm(in_channels=channels), nn.Activation("relu"),
                nn.MaxPool2D(pool_size=2))
    net.add(nn.Dense(10, in_units=32 * 2 * 2))
    return net


def gluon_mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(512, activation="relu", in_units=784),
            nn.Dense(512, activation="relu", in_units=512), nn.Dense(10, in_units=512))
    return net


def torch_cnn():
    tnn = torch.nn
    return tnn.Sequential(
        tnn.Conv2d(1, 16, 3, padding=1), tnn.BatchNorm2d(16, eps=1e-3, momentum=0.1), tnn.ReLU(),
        tnn.MaxPool2d(2),
        tnn.Conv2d(16, 32, 3, padding=1), tnn.BatchNorm2d(32, eps=1e-3, momentum=0.1), tnn.ReLU(),
        tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(128, 10))


def torch_mlp():
    tnn = torch.nn
    return tnn.Sequential(tnn.Linear(784, 512), tnn.ReLU(), tnn.Linear(512, 512), tnn.ReLU(),
                          tnn.Linear(512, 10))


def copy_weights(gnet, tnet):
    """The torch model gets the Gluon model's initial values (same order of weights/biases;
    BatchNorm gamma/beta are the torch module's weight/bias)."""
    gparams = [p for p in gnet.collect_params().values()
               if not p.name.endswith(("running_mean", "running_var"))]
    tparams = list(tnet.parameters())
    assert len(gparams) == len(tparams), (len(gparams), len(tparams))
    with torch.no_grad():
        for g, t in zip(gparams, tparams, strict=True):
            t.copy_(torch.from_numpy(g.data().asnumpy().reshape(tuple(t.shape))))


def gluon_step(net, x, y, hybridize):
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 1e-3})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(BATCH)
        return loss

    return step


def torch_step(tnet, x, y):
    opt = torch.optim.Adam(tnet.parameters(), lr=1e-3)
    f = torch.nn.functional

    def step():
        opt.zero_grad(set_to_none=True)
        loss = f.cross_entropy(tnet(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def timed(step, steps):
    step()
    start = time.perf_counter()
    for _ in range(steps):
        out = step()
    if hasattr(out, "wait_to_read"):
        out.wait_to_read()
    return (time.perf_counter() - start) / steps


def bench(name, make_gluon, make_torch, shape, rounds, steps):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((BATCH, *shape)).astype(np.float32)
    ys = rng.integers(0, 10, BATCH)
    x, y = mx.nd.array(xs), mx.nd.array(ys)
    gnet = make_gluon()
    cases = {"gluon hybridized": gluon_step(gnet, x, y, True)}
    cases["gluon imperative"] = gluon_step(make_gluon(), x, y, False)
    if torch is not None:
        tnet = make_torch()
        copy_weights(gnet, tnet)
        cases["torch eager"] = torch_step(tnet, torch.from_numpy(xs), torch.from_numpy(ys))
    times = {k: [] for k in cases}
    for _ in range(rounds):
        for k, step in cases.items():
            time.sleep(0.3)  # let the other framework's worker threads go idle
            times[k].append(timed(step, steps))
    med = {k: statistics.median(v) for k, v in times.items()}
    peer = med.get("torch eager")
    print(f"\n{name}, batch {BATCH} (median of {rounds} rounds x {steps} steps)")
    for k, t in med.items():
        ratio = f"  {t / peer:.2f}x PyTorch" if peer and k != "torch eager" else ""
        print(f"  {k:18s} {t * 1e3:8.3f} ms{ratio}")
    return med


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2, help="threads for every framework")
    args = ap.parse_args()
    _import_frameworks(args.threads)
    torch_text = f"PyTorch {torch.__version__} ({torch.get_num_threads()} threads)" \
        if torch is not None else "PyTorch not importable"
    print(f"ferrograd {mx.__version__}, {torch_text}, {platform.processor() or platform.machine()}"
          f", {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    if torch is not None:
        torch.manual_seed(0)
    bench("demo CNN (Conv-BN-ReLU-Pool x2 + Dense), 1x8x8", gluon_cnn, torch_cnn, (1, 8, 8),
          args.rounds, args.steps)
    bench("MLP 784-512-512-10", gluon_mlp, torch_mlp, (784,), args.rounds, args.steps)


if __name__ == "__main__":
    main()
