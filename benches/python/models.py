#!/usr/bin/env python3
"""Real networks, ferrograd against PyTorch (when importable), in one process.

Usage: ``python3 benches/python/models.py [--models resnet18_v1,...] [--batch 8] [--size 112]
[--rounds 5] [--json FILE] [--profile]``. ``--profile`` prints ferrograd's time per operator type
(from ``mx.profiler``) instead of the comparison.

Each model is built from ferrograd's own Gluon model zoo, traced to a Symbol and bound once with
``simple_bind`` under a ``SoftmaxOutput`` head. A training step is forward + backward + a plain
SGD update of every parameter (the fused ``sgd_update`` when it exists); inference is a forward
with ``is_train=False``. PyTorch runs torchvision's equivalent with ``CrossEntropyLoss`` and
``torch.optim.SGD``. Rounds alternate between the frameworks, with a pause before each block so
the other library's idle threads are asleep; the medians are reported with their ratio
(ferrograd / PyTorch: below 1 is faster). ``--ab-fusion`` adds a third side to the inference
rows: ferrograd with the inference fusion off (``FERROGRAD_INFERENCE_FUSION=0`` at bind), so the
fusion's gain is measured in the same process, interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

# The same (model zoo name, torchvision name) pairs on both sides.
MODELS = {
    "resnet18_v1": "resnet18",
    "mobilenetv2_1.0": "mobilenet_v2",
    "densenet121": "densenet121",
    "inceptionv3": "inception_v3",
}
# The zoo's DenseNet and Inception end in fixed-size pooling: they need their full input size.
MIN_SIZE = {"densenet121": 224, "inceptionv3": 299}
SETTLE_S = 0.3
LR = 1e-3


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


class FerrogradModel:
    """A zoo model bound on an Executor for training and for inference."""

    def __init__(self, name: str, batch: int, size: int, ab_fusion: bool = False):
        import ferrograd as mx
        from ferrograd.gluon.model_zoo import vision

        self.mx = mx
        net = vision.get_model(name, classes=1000)
        out = mx.sym.SoftmaxOutput(net(mx.sym.var("data")), mx.sym.var("softmax_label"),
                                   name="softmax")
        shapes = {"data": (batch, 3, size, size), "softmax_label": (batch,)}
        req = {n: ("null" if n in shapes else "write") for n in out.list_arguments()}
        self.train = out.simple_bind(mx.cpu(), grad_req=req, **shapes)
        self.infer = out.simple_bind(mx.cpu(), grad_req="null", shared_exec=self.train, **shapes)
        self.infer_unfused = None
        if ab_fusion:
            saved = os.environ.get("FERROGRAD_INFERENCE_FUSION")
            os.environ["FERROGRAD_INFERENCE_FUSION"] = "0"
            self.infer_unfused = out.simple_bind(mx.cpu(), grad_req="null", shared_exec=self.train,
                                                 **shapes)
            if saved is None:
                del os.environ["FERROGRAD_INFERENCE_FUSION"]
            else:
                os.environ["FERROGRAD_INFERENCE_FUSION"] = saved
        rng = np.random.default_rng(0)
        for n, arr in self.train.arg_dict.items():
            if n == "softmax_label":
                arr[:] = rng.integers(0, 1000, size=arr.shape).astype(np.float32)
            else:
                arr[:] = (rng.standard_normal(arr.shape) * 0.05).astype(np.float32)
        for n, arr in self.train.aux_dict.items():
            arr[:] = np.ones(arr.shape, np.float32) if n.endswith("var") else 0
        self.params = [(self.train.arg_dict[n], self.train.grad_dict[n])
                       for n in out.list_arguments() if req[n] == "write"]
        self.fused_sgd = hasattr(mx.nd, "sgd_update")

    def train_step(self):
        self.train.forward(is_train=True)
        self.train.backward()
        nd = self.mx.nd
        for w, g in self.params:
            if self.fused_sgd:
                nd.sgd_update(w, g, lr=LR, out=w)
            else:
                w -= LR * g
        self.train.outputs[0].wait_to_read()

    def inference(self):
        self.infer.forward(is_train=False)
        self.infer.outputs[0].wait_to_read()

    def inference_unfused(self):
        self.infer_unfused.forward(is_train=False)
        self.infer_unfused.outputs[0].wait_to_read()


class TorchModel:
    def __init__(self, torch, name: str, batch: int, size: int):
        import torchvision

        self.torch = torch
        kwargs = {"aux_logits": False, "init_weights": False} if name == "inception_v3" else {}
        self.net = getattr(torchvision.models, name)(num_classes=1000, **kwargs)
        self.x = torch.randn(batch, 3, size, size)
        self.y = torch.randint(0, 1000, (batch,))
        self.loss = torch.nn.CrossEntropyLoss()
        self.opt = torch.optim.SGD(self.net.parameters(), lr=LR)

    def train_step(self):
        self.net.train()
        self.opt.zero_grad()
        self.loss(self.net(self.x), self.y).backward()
        self.opt.step()

    def inference(self):
        self.net.eval()
        with self.torch.no_grad():
            self.net(self.x)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(models: list, batch: int, size: int, rounds: int, threads: int | None,
        ab_fusion: bool = False) -> list:
    try:
        import torch
        import torchvision  # noqa: F401
        if threads:
            torch.set_num_threads(threads)
    except ImportError:
        torch = None
    rows = []
    requested = size
    for name in models:
        size = max(requested, MIN_SIZE.get(name, 0))
        fg = FerrogradModel(name, batch, size, ab_fusion)
        th = TorchModel(torch, MODELS[name], batch, size) if torch is not None else None
        for task in ("train_step", "inference"):
            sides = {"ferrograd": getattr(fg, task)}
            if th is not None:
                sides["torch"] = getattr(th, task)
            if ab_fusion and task == "inference":
                sides["unfused"] = fg.inference_unfused
            for fn in sides.values():  # warm-up: allocation, packing, first-touch
                fn()
                fn()
            times = {k: [] for k in sides}
            for _ in range(rounds):
                for k, fn in sides.items():
                    time.sleep(SETTLE_S)
                    times[k].append(timed(fn))
            med = {k: statistics.median(v) for k, v in times.items()}
            ratio = med["ferrograd"] / med["torch"] if "torch" in med else None
            rows.append({"model": name, "task": task, "batch": batch, "size": size,
                         "ferrograd_ms": med["ferrograd"] * 1e3,
                         "torch_ms": med["torch"] * 1e3 if "torch" in med else None,
                         "ratio": ratio,
                         "unfused_ms": med["unfused"] * 1e3 if "unfused" in med else None})
            shown = f"{ratio:5.2f}x" if ratio is not None else "  n/a"
            torch_ms = f"{med['torch'] * 1e3:9.1f}" if "torch" in med else "      n/a"
            fg_ms = med["ferrograd"] * 1e3
            unfused = (f"  unfused {med['unfused'] * 1e3:7.1f} ms (fused/unfused "
                       f"{med['ferrograd'] / med['unfused']:.3f})" if "unfused" in med else "")
            print(f"{name:18s} {task:11s} b{batch} {size}^2  ferrograd {fg_ms:9.1f} ms"
                  f"  PyTorch {torch_ms} ms  ratio {shown}{unfused}", flush=True)
    return rows


def profile(models: list, batch: int, size: int, steps: int = 3) -> None:
    """ferrograd only: the time per operator type (``mx.profiler``) of a training step and of
    inference, as a share of the op total, so the slow layer types show."""
    import ferrograd as mx

    for name in models:
        fg = FerrogradModel(name, batch, max(size, MIN_SIZE.get(name, 0)))
        for task in ("train_step", "inference"):
            fn = getattr(fg, task)
            fn()
            mx.profiler.dumps(reset=True)
            mx.profiler.set_state("run")
            for _ in range(steps):
                fn()
            mx.profiler.set_state("stop")
            ops = json.loads(mx.profiler.dumps(reset=True, format="json"))["Time"]["operator"]
            total = sum(r["Total"] for r in ops.values())
            print(f"\n{name} {task} b{batch}: {total / steps:.1f} ms of operators per step")
            for op, r in sorted(ops.items(), key=lambda kv: -kv[1]["Total"])[:12]:
                print(f"  {op:32s} {r['Total'] / steps:8.2f} ms  {100 * r['Total'] / total:5.1f}%"
                      f"  ({r['Count'] // steps} calls)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated zoo names")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=112)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for PyTorch (default: its own)")
    ap.add_argument("--json", default=None, help="write the rows and the machine to this file")
    ap.add_argument("--ab-fusion", action="store_true",
                    help="also time inference with the Conv-BN-activation fusion off")
    ap.add_argument("--profile", action="store_true",
                    help="instead: ferrograd's time per operator type (mx.profiler)")
    args = ap.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        ap.error(f"unknown models {unknown}; known: {sorted(MODELS)}")
    print(f"# {cpu_name()}, {os.cpu_count()} logical CPUs, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.2f}")
    if args.profile:
        profile(models, args.batch, args.size)
        return 0
    rows = run(models, args.batch, args.size, args.rounds, args.threads, args.ab_fusion)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpu": cpu_name(), "load_average": os.getloadavg(), "rows": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
