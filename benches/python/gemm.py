#!/usr/bin/env python3
"""ferrograd's GEMM (``nd.dot``) against PyTorch's ``torch.mm`` on the shapes that matter.

Usage: ``python benches/python/gemm.py [--threads N] [--dtype float32|float64] [--rounds R]
[--only PATTERN] [--markdown] [--cpu-time]``. Run it with a Python that has both ferrograd and
PyTorch, e.g.
``PYTHONPATH=python /opt/torchenv/bin/python benches/python/gemm.py --threads 2``.

The shapes are an MLP's layers (784→512→512, batch 128: forward, data and weight gradients) and
ResNet-18's convolutions lowered to GEMM at batch 8, 112×112 (the M, N, K that
``conv/convolution.rs`` hands to the GEMM: forward ``W·cols``, data gradient ``Wᵀ·dy`` and weight
gradient ``dy·colsᵀ``). Both libraries see the same strided operands: a transposed operand is a
transposed view, never a copy. Rounds are interleaved (ferrograd, PyTorch, ferrograd, ...), each
block after a pause that lets the other library's threads go idle; the table shows medians.
On a shared machine, ``--threads 1 --cpu-time`` times each call in the process's CPU time
(one computing thread each, so CPU time is compute time), which other processes' load does
not inflate.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import time
import timeit

# (label, M, K, N, transpose_a, transpose_b)
SHAPES = [
    ("mlp fwd 128x512·512x512", 128, 512, 512, False, False),
    ("mlp dgrad 128x512·(784x512)ᵀ", 128, 512, 784, False, True),
    ("mlp wgrad (128x512)ᵀ·128x512", 512, 128, 512, True, False),
    ("mlp wgrad (128x512)ᵀ·128x784", 512, 128, 784, True, False),
    ("mlp tt (128x512)ᵀ·(512x128)ᵀ", 512, 128, 512, True, True),
    ("conv1 fwd", 64, 147, 3136, False, False),
    ("conv1 wgrad", 64, 3136, 147, False, True),
    ("layer1 fwd", 64, 576, 784, False, False),
    ("layer1 dgrad", 576, 64, 784, True, False),
    ("layer1 wgrad", 64, 784, 576, False, True),
    ("layer2 fwd", 128, 1152, 588, False, False),
    ("layer2 dgrad", 1152, 128, 588, True, False),
    ("layer2 wgrad", 128, 588, 1152, False, True),
    ("layer3 fwd", 256, 2304, 392, False, False),
    ("layer3 dgrad", 2304, 256, 392, True, False),
    ("layer3 wgrad", 256, 392, 2304, False, True),
    ("layer4 fwd", 512, 4608, 128, False, False),
    ("layer4 dgrad", 4608, 512, 128, True, False),
    ("layer4 wgrad", 512, 128, 4608, False, True),
    ("square 1024³", 1024, 1024, 1024, False, False),
]

SETTLE_S = 0.15
BLOCK_S = 0.08


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def loops_for(timer: timeit.Timer) -> int:
    n = 1
    while timer.timeit(n) < BLOCK_S:
        n *= 2
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=None, help="regex on the shape label")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time in process CPU time (needs --threads 1)")
    args = ap.parse_args()
    if args.cpu_time and args.threads != 1:
        ap.error("--cpu-time sums all threads: use it with --threads 1")
    timer = time.process_time if args.cpu_time else time.perf_counter

    os.environ["RAYON_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import ferrograd as mx
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    tdt = getattr(torch, args.dtype)
    rng = np.random.default_rng(0)
    rows = []
    for label, m, k, n, ta, tb in SHAPES:
        if args.only and not re.search(args.only, label):
            continue
        a_np = rng.uniform(-1, 1, (k, m) if ta else (m, k)).astype(args.dtype)
        b_np = rng.uniform(-1, 1, (n, k) if tb else (k, n)).astype(args.dtype)
        fa, fb = mx.nd.array(a_np, dtype=args.dtype), mx.nd.array(b_np, dtype=args.dtype)
        ta_t, tb_t = torch.from_numpy(a_np), torch.from_numpy(b_np)
        ta_v = ta_t.t() if ta else ta_t
        tb_v = tb_t.t() if tb else tb_t
        assert ta_v.dtype == tdt
        # Same numbers from both (a cheap guard that the shapes and flags agree).
        got = mx.nd.dot(fa, fb, transpose_a=ta, transpose_b=tb).asnumpy()
        want = torch.mm(ta_v, tb_v).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * k)
        timers = {
            "ferrograd": timeit.Timer(
                "dot(fa, fb, transpose_a=ta, transpose_b=tb).wait_to_read()",
                globals={"dot": mx.nd.dot, "fa": fa, "fb": fb, "ta": ta, "tb": tb},
                timer=timer,
            ),
            "torch": timeit.Timer(
                "mm(a, b)", globals={"mm": torch.mm, "a": ta_v, "b": tb_v}, timer=timer
            ),
        }
        loops = {fw: loops_for(t) for fw, t in timers.items()}
        samples = {fw: [] for fw in timers}
        for _ in range(args.rounds):
            for fw, t in timers.items():
                time.sleep(SETTLE_S)
                t.timeit(max(1, loops[fw] // 8))
                samples[fw].append(t.timeit(loops[fw]) / loops[fw])
        med = {fw: statistics.median(s) for fw, s in samples.items()}
        flops = 2.0 * m * n * k
        gf = {fw: flops / t / 1e9 for fw, t in med.items()}
        ratio = gf["ferrograd"] / gf["torch"]
        rows.append((label, m, k, n, ta, tb, med, gf, ratio))
        print(
            f"{label:32s} {m:5d}x{k:5d}x{n:5d} {'t' if ta else 'n'}{'t' if tb else 'n'}  "
            f"ferrograd {med['ferrograd'] * 1e6:8.1f} µs {gf['ferrograd']:6.1f} GF/s   "
            f"torch {med['torch'] * 1e6:8.1f} µs {gf['torch']:6.1f} GF/s   ratio {ratio:5.2f}",
            flush=True,
        )
    ratios = [r[-1] for r in rows]
    if ratios:
        geo = statistics.geometric_mean(ratios)
        print(f"geometric mean of ferrograd/PyTorch GFLOP/s: {geo:.2f}; worst {min(ratios):.2f}")
    if args.markdown:
        print()
        print(f"{cpu_model()}, {args.threads} thread(s), {args.dtype}, "
              f"PyTorch {torch.__version__}, medians of {args.rounds} interleaved rounds, "
              f"{'process CPU time' if args.cpu_time else 'wall time'}, "
              f"load average {os.getloadavg()[0]:.1f}")
        print()
        print("| shape | M×K×N | op | ferrograd µs | GFLOP/s | PyTorch µs | GFLOP/s | ratio |")
        print("|---|---|---|---|---|---|---|---|")
        for label, m, k, n, ta, tb, med, gf, ratio in rows:
            op = ("t" if ta else "n") + ("t" if tb else "n")
            print(f"| {label} | {m}×{k}×{n} | {op} | {med['ferrograd'] * 1e6:.0f} "
                  f"| {gf['ferrograd']:.0f} | {med['torch'] * 1e6:.0f} | {gf['torch']:.0f} "
                  f"| {ratio:.2f} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
