#!/usr/bin/env python3
"""Fused RNN layer forward+backward: ferrograd's ``gluon.rnn.LSTM``/``GRU`` against PyTorch's
``nn.LSTM``/``nn.GRU`` in the same process (seq 35, batch 32, 2 layers, hidden 200, float32).

Usage: ``python benches/python/rnn.py [--rounds N] [--threads N]``. Rounds interleave the two
frameworks; the report gives each one's median and the ratio ferrograd/PyTorch (target <= 1.2).
Without PyTorch only ferrograd's figures are printed.
"""

import argparse
import statistics
import time

import ferrograd as mx
import numpy as np

SEQ, BATCH, LAYERS, HIDDEN = 35, 32, 2, 200


def ferrograd_step(kind):
    layer = {"lstm": mx.gluon.rnn.LSTM, "gru": mx.gluon.rnn.GRU}[kind](HIDDEN, num_layers=LAYERS,
                                                                       input_size=HIDDEN)
    layer.initialize(mx.init.Uniform(0.1))
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (SEQ, BATCH, HIDDEN)))
    x.attach_grad()
    head = mx.nd.ones((SEQ, BATCH, HIDDEN))

    def step():
        with mx.autograd.record():
            y = layer(x)
        y.backward(head)
        mx.nd.waitall()

    return step


def torch_step(kind, torch):
    layer = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[kind](HIDDEN, HIDDEN, num_layers=LAYERS)
    x = torch.tensor(np.random.RandomState(0).uniform(-1, 1, (SEQ, BATCH, HIDDEN)),
                     dtype=torch.float32, requires_grad=True)
    head = torch.ones(SEQ, BATCH, HIDDEN)

    def step():
        y, _ = layer(x)
        y.backward(head)

    return step


def timed(fn, reps):
    fn()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0, help="PyTorch threads (0: its default)")
    args = ap.parse_args()
    try:
        import torch
        if args.threads:
            torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    for kind in ("lstm", "gru"):
        fg = ferrograd_step(kind)
        th = torch_step(kind, torch) if torch is not None else None
        ours, theirs = [], []
        for _ in range(args.rounds):
            ours.append(timed(fg, args.reps))
            if th is not None:
                theirs.append(timed(th, args.reps))
        line = f"{kind.upper():4s} fwd+bwd  ferrograd {statistics.median(ours) * 1e3:8.2f} ms"
        if theirs:
            a, b = statistics.median(ours), statistics.median(theirs)
            line += f"   PyTorch {b * 1e3:8.2f} ms   ratio {a / b:5.2f}x (target <= 1.2x)"
        else:
            line += "   PyTorch n/a"
        print(line)


if __name__ == "__main__":
    main()
