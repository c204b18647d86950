#!/usr/bin/env python3
"""Side-by-side timings of ferrograd, NumPy and (when importable) PyTorch, in one process.

Usage: ``python3 benches/python/compare.py [--threads N] [--only PATTERN] [--json FILE]``.
PyTorch is optional: without it its columns read "n/a". See benches/python/README.md.

Every workload is a function that builds its inputs and returns the median time per call of each
framework (``Bench.measure``); it is registered in ``WORKLOADS`` with its work amount (bytes or
FLOPs, for the GB/s / GFLOP/s columns) and its target for ferrograd.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import platform
import re
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FRAMEWORKS = ("ferrograd", "numpy", "torch")
LABELS = {"ferrograd": "ferrograd", "numpy": "NumPy", "torch": "PyTorch"}

# A case is a statement timed by timeit with its namespace: strings keep the measured loop free of
# an extra Python call, which matters for the microsecond workloads.
Case = tuple  # (stmt: str, namespace: dict)


# Pause before each framework's block of repeats: longer than OpenBLAS's default spin-wait
# (2^28 cycles, ~0.1 s) and libgomp's, so idle workers of another library are asleep.
SETTLE_S = 0.3


def case(stmt: str, **ns: Any) -> Case:
    return (stmt, ns)


# ----------------------------------------------------------------------------------------------
# Timing


@dataclass
class Bench:
    """Shared state of one run: imported modules, options and timing policy."""

    mx: Any
    np: Any
    torch: Any  # None when PyTorch is not importable
    repeat: int
    min_time: float
    notes: list = field(default_factory=list)

    def frameworks(self) -> list:
        return [fw for fw in FRAMEWORKS if fw != "torch" or self.torch is not None]

    def measure(self, builders: dict) -> dict:
        """Median seconds per call for each framework; None where its case is unavailable.

        ``builders`` maps a framework to a zero-argument function returning a ``Case`` (built
        lazily so a missing API, e.g. a function not written yet, yields "n/a" instead of an
        error). Each case is warmed up and calibrated (autorange: loops per repeat so one repeat
        lasts >= min_time), then timed in one block of repeats. Blocks are not interleaved: after
        a call, OpenBLAS and OpenMP workers spin for up to ~0.1 s and, on a 2-core machine, would
        slow the next framework down (measured: torch.mm 6.6 ms alone, 10.6 ms right after
        NumPy's matmul). So each block starts after a pause that lets the others' threads sleep.
        """
        timers, loops, samples = {}, {}, {}
        for fw in self.frameworks():
            build = builders.get(fw)
            if build is None:
                continue
            try:
                stmt, ns = build()
                timer = timeit.Timer(stmt, globals=ns)
                timer.timeit(3)  # warm-up: first-call costs (allocation, dispatch caches)
                loops[fw] = _calibrate(timer, self.min_time)
            except Exception as exc:  # a missing/unfinished API must not stop the run
                self.notes.append(f"{fw}: {type(exc).__name__}: {exc}".split("\n")[0][:160])
                continue
            timers[fw], samples[fw] = timer, []
        for fw, timer in timers.items():
            time.sleep(SETTLE_S)
            timer.timeit(max(1, loops[fw] // 10))  # wake this framework's own threads
            for _ in range(self.repeat):
                samples[fw].append(timer.timeit(loops[fw]) / loops[fw])
        out = {fw: None for fw in self.frameworks()}
        out.update({fw: statistics.median(s) for fw, s in samples.items()})
        return out


def _calibrate(timer: timeit.Timer, min_time: float) -> int:
    """Smallest loop count in 1, 2, 5, 10, 20, ... whose run lasts at least ``min_time``."""
    n = 1
    while True:
        for k in (1, 2, 5):
            loops = n * k
            if timer.timeit(loops) >= min_time:
                return loops
        n *= 10


# ----------------------------------------------------------------------------------------------
# Workloads and targets


@dataclass
class Target:
    """What ferrograd must reach. kind "max_time": seconds per call <= value; kind "vs_torch":
    throughput >= value x PyTorch's (i.e. torch_time / ferrograd_time >= value)."""

    kind: str
    value: float

    def describe(self) -> str:
        if self.kind == "max_time":
            return f"<= {fmt_time(self.value)}"
        if self.kind == "max_overhead":
            return f"<= {self.value:.2f}x base"
        return f">= {self.value:.2f}x PyTorch"

    def factor(self, times: dict) -> float | None:
        """Achieved / required, oriented so that >= 1 means met; None when not measurable."""
        fg = times.get("ferrograd")
        if fg is None:
            return None
        if self.kind == "max_time":
            return self.value / fg
        if self.kind == "max_overhead":
            base = times.get("base")
            return None if base is None else self.value / (fg / base)
        tt = times.get("torch")
        return None if tt is None else (tt / fg) / self.value


@dataclass
class Workload:
    name: str
    group: str
    run: Callable  # (Bench) -> {framework: seconds or None}
    target: Target | None = None
    work: float = 0.0  # bytes moved or FLOPs per call, for the rate columns
    unit: str = ""  # "GB/s", "GFLOP/s" or "" (no rate)


def _rng_f32(b: Bench, n: int, dtype: str = "float32"):
    return b.np.random.default_rng(0).standard_normal(n).astype(dtype)


def tiny_add(b: Bench) -> dict:
    a, c = _rng_f32(b, 16), _rng_f32(b, 16)
    builders = {
        "ferrograd": lambda: case("x + y", x=b.mx.nd.array(a), y=b.mx.nd.array(c)),
        "numpy": lambda: case("x + y", x=a, y=c),
        "torch": lambda: case("x + y", x=b.torch.from_numpy(a), y=b.torch.from_numpy(c)),
    }
    return b.measure(builders)


def keyword_op(fg_stmt: str, np_stmt: str, torch_stmt: str) -> Callable:
    """A registry op called with keyword parameters on 16 elements (the per-call overhead)."""

    def run(b: Bench) -> dict:
        a, w, bias = _rng_f32(b, 16).reshape(1, 16), _rng_f32(b, 64).reshape(4, 16), _rng_f32(b, 4)
        nd, t = b.mx.nd, b.torch
        builders = {
            "ferrograd": lambda: case(fg_stmt, nd=nd, x=nd.array(a), w=nd.array(w),
                                      b=nd.array(bias)),
            "numpy": lambda: case(np_stmt, np=b.np, x=a, w=w, b=bias),
            "torch": lambda: case(torch_stmt, torch=t, F=t.nn.functional, x=t.from_numpy(a),
                                  w=t.from_numpy(w), b=t.from_numpy(bias)),
        }
        return b.measure(builders)

    return run


N_ELEM = 4 * 1024 * 1024


def elementwise(fg_stmt: str, np_stmt: str, torch_stmt: str) -> Callable:
    """A 4M-float32 elementwise workload; statements see ``x``, ``y`` and the module ``m``."""

    def run(b: Bench) -> dict:
        a, c = _rng_f32(b, N_ELEM), _rng_f32(b, N_ELEM)
        mx, np, torch = b.mx, b.np, b.torch
        return b.measure({
            "ferrograd": lambda: case(fg_stmt, x=mx.nd.array(a), y=mx.nd.array(c), m=mx.nd),
            "numpy": lambda: case(np_stmt, x=a, y=c, m=np),
            "torch": lambda: case(torch_stmt, x=torch.from_numpy(a.copy()),
                                  y=torch.from_numpy(c.copy()), m=torch),
        })

    return run


GEMM_N = 1024


def gemm(dtype: str) -> Callable:
    def run(b: Bench) -> dict:
        a = _rng_f32(b, GEMM_N * GEMM_N, dtype).reshape(GEMM_N, GEMM_N)
        c = _rng_f32(b, GEMM_N * GEMM_N, dtype).reshape(GEMM_N, GEMM_N)
        mx, torch = b.mx, b.torch
        return b.measure({
            "ferrograd": lambda: case("m.dot(x, y)", m=mx.nd, x=mx.nd.array(a, dtype=dtype),
                                      y=mx.nd.array(c, dtype=dtype)),
            "numpy": lambda: case("x @ y", x=a, y=c),
            "torch": lambda: case("m.mm(x, y)", m=torch, x=torch.from_numpy(a.copy()),
                                  y=torch.from_numpy(c.copy())),
        })

    return run


N_INTEROP = 100_000_000


def from_numpy(b: Bench) -> dict:
    a = b.np.zeros(N_INTEROP, dtype="float32")
    return b.measure({
        "ferrograd": lambda: case("m.from_numpy(a)", m=b.mx.nd, a=a),
        "numpy": lambda: case("m.asarray(a)", m=b.np, a=a),
        "torch": lambda: case("m.from_numpy(a)", m=b.torch, a=a),
    })


def to_numpy(b: Bench) -> dict:
    # Arrays owned by each framework (not views of a NumPy array), as a user would hold them.
    return b.measure({
        "ferrograd": lambda: case("x.to_numpy()", x=b.mx.nd.zeros((N_INTEROP,))),
        "numpy": lambda: case("m.asarray(a)", m=b.np, a=b.np.zeros(N_INTEROP, dtype="float32")),
        "torch": lambda: case("t.numpy()", t=b.torch.zeros(N_INTEROP)),
    })


CHAIN_FG = """with ag.record():
    y = x
    for _ in range(100):
        y = y * 1.0001
        y = y + 0.001
y.backward()"""
CHAIN_TORCH = """y = x
for _ in range(100):
    y = y * 1.0001
    y = y + 0.001
y.backward(g)"""


def _tracked(b: Bench):
    """A 16-element float32 leaf that needs a gradient, in ferrograd and (if present) PyTorch."""
    x = b.mx.nd.ones((16,))
    x.attach_grad()
    t = None
    if b.torch is not None:
        t = b.torch.ones(16, requires_grad=True)
    return x, t


def autograd_chain(b: Bench) -> dict:
    """200 tiny ops recorded, then one backward through all of them."""
    x, t = _tracked(b)
    return b.measure({
        "ferrograd": lambda: case(CHAIN_FG, x=x, ag=b.mx.autograd),
        "torch": lambda: case(CHAIN_TORCH, x=t, g=b.torch.ones(16)),
    })


def backward_fixed(b: Bench) -> dict:
    """``backward`` alone on a one-node graph (retained, so each call walks the same graph)."""
    x, t = _tracked(b)
    with b.mx.autograd.record():
        y = x * 2
    builders = {"ferrograd": lambda: case("y.backward(retain_graph=True)", y=y)}
    if t is not None:
        yt = t * 2
        builders["torch"] = lambda: case("y.backward(g, retain_graph=True)", y=yt,
                                         g=b.torch.ones(16))
    return b.measure(builders)


def record_overhead(b: Bench) -> dict:
    """``x * 1.0001`` on 16 elements inside ``record()`` with a tracked input; the unrecorded
    time of the same op is the reference ("base")."""
    x, t = _tracked(b)
    plain = b.mx.nd.ones((16,))
    stmt = "with ag.record():\n    for _ in range(100):\n        x * 1.0001"
    builders = {"ferrograd": lambda: case(stmt, x=x, ag=b.mx.autograd)}
    if t is not None:
        builders["torch"] = lambda: case("for _ in range(100):\n    x * 1.0001", x=t)
    out = b.measure(builders)
    base = b.measure({"ferrograd": lambda: case(stmt, x=plain, ag=b.mx.autograd)})
    out["base"] = base["ferrograd"]
    return out


PARAMS_ARRAYS = 25  # x 1M float32 = 100 MB, the size of a mid-sized checkpoint


def _params_file(b: Bench, tmp: str) -> tuple:
    """A 100 MB dict of float32 arrays saved by nd.save, and the same arrays for the peers."""
    arrays = {f"arg:w{i}": _rng_f32(b, 1 << 20).reshape(1024, 1024) for i in range(PARAMS_ARRAYS)}
    path = os.path.join(tmp, "model.params")
    b.mx.nd.save(path, {k: b.mx.nd.array(v) for k, v in arrays.items()})
    return arrays, path


def params_load(b: Bench) -> dict:
    """``nd.load`` of a 100 MB .params file against reading its bytes (warm cache: "base")."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        arrays, path = _params_file(b, tmp)
        npz = os.path.join(tmp, "model.npz")
        b.np.savez(npz, **{k.replace(":", "_"): v for k, v in arrays.items()})
        builders = {
            "ferrograd": lambda: case("nd.load(p)", nd=b.mx.nd, p=path),
            "numpy": lambda: case("dict(np.load(p))", np=b.np, p=npz),
        }
        if b.torch is not None:
            pt = os.path.join(tmp, "model.pt")
            b.torch.save({k: b.torch.from_numpy(v) for k, v in arrays.items()}, pt)
            builders["torch"] = lambda: case("torch.load(p)", torch=b.torch, p=pt)
        out = b.measure(builders)
        base = b.measure({"ferrograd": lambda: case("open(p, 'rb').read()", p=path)})
    out["base"] = base["ferrograd"]
    return out


def params_save(b: Bench) -> dict:
    """``nd.save`` of 100 MB of arrays against writing the same bytes ("base")."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        arrays, path = _params_file(b, tmp)
        data = open(path, "rb").read()
        nd_arrays = {k: b.mx.nd.array(v) for k, v in arrays.items()}
        out_path = os.path.join(tmp, "out")
        builders = {
            "ferrograd": lambda: case("nd.save(p, d)", nd=b.mx.nd, p=out_path, d=nd_arrays),
            "numpy": lambda: case("np.savez(p, **d)", np=b.np, p=out_path + ".npz",
                                  d={k.replace(":", "_"): v for k, v in arrays.items()}),
        }
        if b.torch is not None:
            td = {k: b.torch.from_numpy(v) for k, v in arrays.items()}
            builders["torch"] = lambda: case("torch.save(d, p)", torch=b.torch, d=td,
                                             p=out_path + ".pt")
        out = b.measure(builders)
        base = b.measure({"ferrograd": lambda: case("open(p, 'wb').write(d)", p=out_path,
                                                    d=data)})
    out["base"] = base["ferrograd"]
    return out


def _resnet18_symbol(sym):
    """ResNet-18 v1's graph at full size (11.7M parameters, 1000 classes)."""
    def unit(x, name, channels, kernel, stride, pad, act=True):
        x = sym.Convolution(x, kernel=(kernel, kernel), stride=(stride, stride), pad=(pad, pad),
                            num_filter=channels, no_bias=True, name=f"{name}_conv")
        x = sym.BatchNorm(x, fix_gamma=False, name=f"{name}_bn")
        return sym.Activation(x, act_type="relu") if act else x

    x = unit(sym.var("data"), "stem", 64, 7, 2, 3)
    x = sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max")
    for stage in range(4):
        for block in range(2):
            name, stride = f"s{stage}b{block}", 2 if stage and not block else 1
            c = 64 * 2 ** stage
            y = unit(unit(x, f"{name}a", c, 3, stride, 1), f"{name}b", c, 3, 1, 1, act=False)
            if stride != 1:
                x = unit(x, f"{name}d", c, 1, stride, 0, act=False)
            x = sym.Activation(y + x, act_type="relu")
    x = sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg")
    return sym.FullyConnected(sym.Flatten(x), num_hidden=1000, name="fc")


def onnx_export_resnet18(b: Bench) -> dict:
    """``mx.onnx.export_model`` of a full-size ResNet-18 symbol and its parameters to a file."""
    import tempfile
    mx, np = b.mx, b.np
    net = _resnet18_symbol(mx.sym)
    args, _, aux = net.infer_shape(data=(1, 3, 224, 224))
    names = net.list_arguments()[1:] + net.list_auxiliary_states()
    rng = np.random.default_rng(0)
    params = {n: mx.nd.array(rng.uniform(0.5, 1.5, s).astype("float32"))
              for n, s in zip(names, args[1:] + aux, strict=True)}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "resnet18.onnx")
        return b.measure({"ferrograd": lambda: case(
            "export(net, params, [(1, 3, 224, 224)], onnx_file_path=path)",
            export=mx.onnx.export_model, net=net, params=params, path=path)})


def _fwd_bwd(b: Bench, fg_expr: str, torch_expr: str, fg_arrays: dict, torch_arrays: dict,
             fg_ns: dict | None = None, torch_ns: dict | None = None) -> dict:
    """Forward + backward of one op: ``y = <expr>`` recorded, then ``y.backward(ones)``.

    ``*_arrays`` are NumPy arrays; those named in ``grads`` get gradients attached."""
    mx, torch = b.mx, b.torch

    def fg():
        ns = {"m": mx.nd, "ag": mx.autograd, **(fg_ns or {})}
        for k, (a, grad) in fg_arrays.items():
            ns[k] = mx.nd.array(a, dtype=a.dtype)
            if grad:
                ns[k].attach_grad()
        stmt = f"with ag.record():\n    y = {fg_expr}\ny.backward()"
        return case(stmt, **ns)

    def pt():
        ns = {"torch": torch, "F": torch.nn.functional, **(torch_ns or {})}
        for k, (a, grad) in torch_arrays.items():
            ns[k] = torch.from_numpy(a.copy()).requires_grad_(grad)
        return case(f"y = {torch_expr}\ny.backward(torch.ones_like(y))", **ns)

    return b.measure({"ferrograd": fg, "torch": pt})


def conv_fwd_bwd(b: Bench) -> dict:
    x, w, c = _rng_f32(b, 32 * 3 * 32 * 32).reshape(32, 3, 32, 32), \
        _rng_f32(b, 64 * 3 * 9).reshape(64, 3, 3, 3), _rng_f32(b, 64)
    arrays = {"x": (x, True), "w": (w, True), "c": (c, True)}
    return _fwd_bwd(b, "m.Convolution(x, w, c, kernel=(3, 3), pad=(1, 1), num_filter=64)",
                    "F.conv2d(x, w, c, padding=1)", arrays, arrays)


def softmax_fwd_bwd(fn: str) -> Callable:
    def run(b: Bench) -> dict:
        arrays = {"x": (_rng_f32(b, 128 * 10000).reshape(128, 10000), True)}
        return _fwd_bwd(b, f"m.{fn}(x)", f"torch.{fn}(x, -1)", arrays, arrays)

    return run


def fc_fwd_bwd(b: Bench) -> dict:
    arrays = {"x": (_rng_f32(b, 128 * 784).reshape(128, 784), True),
              "w": (_rng_f32(b, 512 * 784).reshape(512, 784), True), "c": (_rng_f32(b, 512), True)}
    return _fwd_bwd(b, "m.FullyConnected(x, w, c, num_hidden=512)", "F.linear(x, w, c)",
                    arrays, arrays)


def batchnorm_fwd_bwd(b: Bench) -> dict:
    x = _rng_f32(b, 32 * 64 * 32 * 32).reshape(32, 64, 32, 32)
    g, c = _rng_f32(b, 64), _rng_f32(b, 64)
    mean, var = b.np.zeros(64, "float32"), b.np.ones(64, "float32")
    fg = {"x": (x, True), "g": (g, True), "c": (c, True), "mm": (mean, False), "mv": (var, False)}
    return _fwd_bwd(b, "m.BatchNorm(x, g, c, mm, mv, fix_gamma=False)",
                    "F.batch_norm(x, mm, mv, g, c, training=True)", fg, fg)


MLP_FG = """with ag.record():
    h = m.relu(m.FullyConnected(x, w1, b1, num_hidden=512))
    h = m.relu(m.FullyConnected(h, w2, b2, num_hidden=512))
    o = m.FullyConnected(h, w3, b3, num_hidden=10)
    loss = m.softmax_cross_entropy(o, label)
loss.backward()"""
MLP_TORCH = """h = torch.relu(F.linear(x, w1, b1))
h = torch.relu(F.linear(h, w2, b2))
o = F.linear(h, w3, b3)
loss = F.cross_entropy(o, label, reduction="sum")
loss.backward()"""


def mlp_step(b: Bench) -> dict:
    """One MLP training step (784-512-512-10, relu, softmax cross-entropy), batch 128."""
    np_, mx, torch = b.np, b.mx, b.torch
    rng = np_.random.default_rng(0)
    shapes = {"w1": (512, 784), "b1": (512,), "w2": (512, 512), "b2": (512,), "w3": (10, 512),
              "b3": (10,)}
    params = {k: (rng.standard_normal(s) * 0.05).astype("float32") for k, s in shapes.items()}
    x = rng.standard_normal((128, 784)).astype("float32")
    label = rng.integers(0, 10, 128)

    def fg():
        ns = {k: mx.nd.array(v) for k, v in params.items()}
        for v in ns.values():
            v.attach_grad()
        return case(MLP_FG, m=mx.nd, ag=mx.autograd, x=mx.nd.array(x),
                    label=mx.nd.array(label), **ns)

    def pt():
        ns = {k: torch.from_numpy(v.copy()).requires_grad_() for k, v in params.items()}
        return case(MLP_TORCH, torch=torch, F=torch.nn.functional, x=torch.from_numpy(x),
                    label=torch.from_numpy(label), **ns)

    return b.measure({"ferrograd": fg, "torch": pt})


def _mlp_symbol(sym):
    h = sym.var("data")
    for i, n in enumerate((512, 512)):
        h = sym.Activation(sym.FullyConnected(h, num_hidden=n, name=f"fc{i}"), act_type="relu")
    return sym.SoftmaxOutput(sym.FullyConnected(h, num_hidden=10, name="out"), name="softmax")


def executor_mlp_step(b: Bench) -> dict:
    """The MLP step bound once as a Symbol: ``forward(is_train=True)`` + ``backward()``
    (SoftmaxOutput supplies its own head gradient); PyTorch runs its eager step."""
    np_, mx = b.np, b.mx
    net = _mlp_symbol(mx.sym)
    # Gradients for the weights only, as in the PyTorch step (its input needs none).
    req = {n: "null" if n in ("data", "softmax_label") else "write" for n in net.list_arguments()}
    exe = net.simple_bind(mx.cpu(), grad_req=req, data=(128, 784))
    rng = np_.random.default_rng(0)
    for k, v in exe.arg_dict.items():
        if k == "softmax_label":
            v[:] = rng.integers(0, 10, v.shape).astype("float32")
        else:
            v[:] = (rng.standard_normal(v.shape) * 0.05).astype("float32")
    out = mlp_step(b)
    out["ferrograd"] = b.measure({"ferrograd": lambda: case(
        "exe.forward(is_train=True)\nexe.backward()", exe=exe)})["ferrograd"]
    return out


def _resnet18_gluon(mx):
    """A ResNet-18-style Gluon model (basic blocks, 64-128-256-512 channels, 10 classes)."""
    nn = mx.gluon.nn

    class Basic(mx.gluon.HybridBlock):
        def __init__(self, channels, stride, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.body = nn.HybridSequential()
                self.body.add(nn.Conv2D(channels, 3, stride, 1, use_bias=False), nn.BatchNorm(),
                              nn.Activation("relu"), nn.Conv2D(channels, 3, 1, 1, use_bias=False),
                              nn.BatchNorm())
                self.down = None
                if stride != 1:
                    self.down = nn.HybridSequential()
                    self.down.add(nn.Conv2D(channels, 1, stride, use_bias=False), nn.BatchNorm())

        def hybrid_forward(self, F, x):
            skip = x if self.down is None else self.down(x)
            return F.Activation(self.body(x) + skip, act_type="relu")

    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(64, 7, 2, 3, use_bias=False), nn.BatchNorm(), nn.Activation("relu"),
                nn.MaxPool2D(3, 2, 1))
        for i, channels in enumerate((64, 128, 256, 512)):
            net.add(Basic(channels, 1 if i == 0 else 2), Basic(channels, 1))
        net.add(nn.GlobalAvgPool2D(), nn.Dense(10))
    return net


def gluon_resnet_hybrid(b: Bench) -> dict:
    """Hybridized ResNet-18-style Gluon model, forward + backward under ``record()`` (batch 8,
    3x112x112), against the same traced graph bound once on an Executor ("base")."""
    mx = b.mx
    net = _resnet18_gluon(mx)
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.array(_rng_f32(b, 8 * 3 * 112 * 112).reshape(8, 3, 112, 112))
    net(x)
    graph = net._cached_graph.symbol
    params = {p.name: p for p in net.collect_params().values()}
    req = {n: "null" if n == "data" else params[n].grad_req for n in graph.list_arguments()}
    exe = graph.simple_bind(mx.cpu(), grad_req=req, data=x.shape)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[:] = x if name == "data" else params[name].data()
    head = mx.nd.ones((8, 10))
    out = b.measure({"ferrograd": lambda: case(
        "with ag.record():\n    y = net(x)\ny.backward()", ag=mx.autograd, net=net, x=x)})
    base = b.measure({"ferrograd": lambda: case(
        "exe.forward(is_train=True)\nexe.backward(head)", exe=exe, head=head)})
    out["base"] = base["ferrograd"]
    return out


def gluon_mlp_imperative(b: Bench) -> dict:
    """Imperative Gluon MLP 784-512-512-10 (batch 128) step, forward + backward under
    ``record()``, against the same model written with raw ``nd`` ops ("base")."""
    mx, np_ = b.mx, b.np
    nn = mx.gluon.nn
    net = nn.Sequential()
    net.add(nn.Dense(512, activation="relu", in_units=784),
            nn.Dense(512, activation="relu", in_units=512), nn.Dense(10, in_units=512))
    net.initialize(mx.init.Xavier())
    rng = np_.random.default_rng(0)
    x = mx.nd.array(rng.standard_normal((128, 784)).astype("float32"))
    label = mx.nd.array(rng.integers(0, 10, 128))
    raw = {f"{k}{i}": p.data().copy() for i, layer in enumerate(net)
           for k, p in (("w", layer.weight), ("b", layer.bias))}
    for v in raw.values():
        v.attach_grad()
    gluon_stmt = ("with ag.record():\n    o = net(x)\n"
                  "    loss = m.pick(m.log_softmax(o), label).sum()\nloss.backward()")
    raw_stmt = ("with ag.record():\n"
                "    h = m.relu(m.FullyConnected(x, w0, b0, num_hidden=512))\n"
                "    h = m.relu(m.FullyConnected(h, w1, b1, num_hidden=512))\n"
                "    o = m.FullyConnected(h, w2, b2, num_hidden=10)\n"
                "    loss = m.pick(m.log_softmax(o), label).sum()\nloss.backward()")
    out = b.measure({"ferrograd": lambda: case(gluon_stmt, ag=mx.autograd, net=net, x=x,
                                                label=label, m=mx.nd)})
    base = b.measure({"ferrograd": lambda: case(raw_stmt, ag=mx.autograd, x=x, label=label,
                                                 m=mx.nd, **raw)})
    out["base"] = base["ferrograd"]
    return out


def executor_chain(b: Bench) -> dict:
    """200 elementwise ops on 16 elements, bound once; forward + backward per call."""
    mx = b.mx
    y = mx.sym.var("x")
    for _ in range(100):
        y = y * 1.0001 + 0.001
    exe = mx.sym.MakeLoss(y).simple_bind(mx.cpu(), x=(16,))
    return b.measure({"ferrograd": lambda: case(
        "exe.forward(is_train=True)\nexe.backward()", exe=exe)})


def numeric_gradient_check(b: Bench) -> dict:
    """``check_numeric_gradient`` of sum(tanh(dot(w, v))) w.r.t. a 256-element ``v`` (float64)
    against ``torch.autograd.gradcheck`` of the same function."""
    np_, mx, torch = b.np, b.mx, b.torch
    rng = np_.random.default_rng(0)
    w, v = rng.standard_normal((256, 256)) * 0.05, rng.standard_normal(256)
    builders = {}
    checker = getattr(mx.test_utils, "check_numeric_gradient", None)
    if checker is not None:
        s = mx.sym.sum(mx.sym.tanh(mx.sym.dot(mx.sym.var("w"), mx.sym.var("v"))))
        builders["ferrograd"] = lambda: case(
            "check(s, {'w': w, 'v': v}, grad_nodes=['v'], dtype=np.float64)", check=checker,
            s=s, w=w, v=v, np=np_)
    if torch is not None:
        tw = torch.from_numpy(w)
        builders["torch"] = lambda: case(
            "gradcheck(lambda v: torch.tanh(w @ v).sum(), (v,))", torch=torch, w=tw,
            gradcheck=torch.autograd.gradcheck,
            v=torch.from_numpy(v.copy()).requires_grad_())
    return b.measure(builders)


def resnet18_shapes() -> list:
    """The parameter shapes of torchvision's ResNet-18 (1000 classes): 11.69M floats."""
    shapes = [(64, 3, 7, 7), (64,), (64,)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for block in range(2):
            first_in = cin if block == 0 else cout
            shapes += [(cout, first_in, 3, 3), (cout,), (cout,)]
            shapes += [(cout, cout, 3, 3), (cout,), (cout,)]
            if block == 0 and (stride != 1 or cin != cout):
                shapes += [(cout, cin, 1, 1), (cout,), (cout,)]
        cin = cout
    return shapes + [(1000, 512), (1000,)]


def trainer_adam_resnet18(b: Bench) -> dict:
    """``gluon.Trainer.step`` with Adam over ResNet-18's parameter set (gradients given) vs
    ``torch.optim.Adam(foreach=True).step()``."""
    np_, mx, torch = b.np, b.mx, b.torch
    rng = np_.random.default_rng(0)
    values = [(rng.standard_normal(s) * 0.05).astype("float32") for s in resnet18_shapes()]
    grads = [(rng.standard_normal(s) * 0.01).astype("float32") for s in resnet18_shapes()]

    def fg():
        params = []
        for i, (v, g) in enumerate(zip(values, grads, strict=True)):
            p = mx.gluon.Parameter(f"p{i}", shape=v.shape)
            p.initialize(init=mx.init.Zero())
            p.set_data(mx.nd.array(v))
            p.grad()[:] = mx.nd.array(g)
            params.append(p)
        trainer = mx.gluon.Trainer(params, "adam", {"learning_rate": 1e-3})
        arrays = [p.data() for p in params]
        # Trainer.step skips a gradient no backward wrote; mark them fresh as backward would.
        return case("for a in arrays:\n    a._fresh_grad = True\ntrainer.step(1)",
                    arrays=arrays, trainer=trainer)

    def pt():
        params = []
        for v, g in zip(values, grads, strict=True):
            p = torch.nn.Parameter(torch.from_numpy(v.copy()))
            p.grad = torch.from_numpy(g.copy())
            params.append(p)
        opt = torch.optim.Adam(params, lr=1e-3, foreach=True)
        return case("opt.step()", opt=opt)

    return b.measure({"ferrograd": fg, "torch": pt})


F32 = 4
RESNET18_PARAMS = 11_689_512
WORKLOADS = [
    Workload("add 16 f32", "tiny", tiny_add, Target("max_time", 1.5e-6)),
    Workload("nd.Activation(x, act_type='relu') 16 f32", "tiny",
             keyword_op("nd.Activation(x, act_type='relu')", "np.maximum(x, 0)", "torch.relu(x)"),
             Target("max_time", 1.5e-6)),
    Workload("nd.FullyConnected(x, w, b, num_hidden=4) 16 f32", "tiny",
             keyword_op("nd.FullyConnected(x, w, b, num_hidden=4)", "x @ w.T + b",
                        "F.linear(x, w, b)"),
             Target("max_time", 1.5e-6)),
    Workload("nd.LeakyReLU(x, slope=0.1) 16 f32", "tiny",
             keyword_op("nd.LeakyReLU(x, slope=0.1)", "np.where(x > 0, x, 0.1 * x)",
                        "F.leaky_relu(x, 0.1)"),
             Target("max_time", 1.5e-6)),
    Workload("add 4M f32", "elementwise", elementwise("x + y", "x + y", "x + y"),
             Target("vs_torch", 1.0), 3 * F32 * N_ELEM, "GB/s"),
    Workload("exp 4M f32", "elementwise", elementwise("m.exp(x)", "m.exp(x)", "m.exp(x)"),
             Target("vs_torch", 1.0), 2 * F32 * N_ELEM, "GB/s"),
    Workload("sigmoid(a)*a+1 4M f32", "elementwise",
             elementwise("m.sigmoid(x) * x + 1", "1 / (1 + m.exp(-x)) * x + 1",
                         "m.sigmoid(x) * x + 1"),
             Target("vs_torch", 1.0), 2 * F32 * N_ELEM, "GB/s"),
    Workload("sum 4M f32", "reduce", elementwise("m.sum(x)", "x.sum()", "x.sum()"),
             Target("vs_torch", 1.0), F32 * N_ELEM, "GB/s"),
    Workload("gemm 1024^2 f32", "gemm", gemm("float32"), Target("vs_torch", 0.9),
             2 * GEMM_N**3, "GFLOP/s"),
    Workload("gemm 1024^2 f64", "gemm", gemm("float64"), None, 2 * GEMM_N**3, "GFLOP/s"),
    Workload("from_numpy 100M f32", "interop", from_numpy, Target("max_time", 5e-6)),
    Workload("to_numpy 100M f32", "interop", to_numpy, Target("max_time", 5e-6)),
    Workload("nd.load 100 MB .params (vs reading its bytes)", "io", params_load,
             Target("max_overhead", 1.5)),
    Workload("nd.save 100 MB .params (vs writing its bytes)", "io", params_save,
             Target("max_overhead", 1.5)),
    Workload("mx.onnx.export_model ResNet-18 (11.7M params)", "io", onnx_export_resnet18,
             Target("max_time", 2.0)),
    Workload("autograd chain 200 ops 16 f32", "autograd", autograd_chain,
             Target("vs_torch", 4.0)),
    Workload("backward() 1-node graph", "autograd", backward_fixed, Target("vs_torch", 2.0)),
    Workload("100x (x*1.0001) recorded", "autograd", record_overhead,
             Target("max_overhead", 1.3)),
    Workload("Convolution 32x3x32x32 -> 64, 3x3 fwd+bwd", "nn", conv_fwd_bwd,
             Target("vs_torch", 0.8)),
    Workload("softmax 128x10000 fwd+bwd", "nn", softmax_fwd_bwd("softmax"),
             Target("vs_torch", 1.0)),
    Workload("log_softmax 128x10000 fwd+bwd", "nn", softmax_fwd_bwd("log_softmax"),
             Target("vs_torch", 1.0)),
    Workload("FullyConnected 128x784 -> 512 fwd+bwd", "nn", fc_fwd_bwd, Target("vs_torch", 1.0)),
    Workload("BatchNorm 32x64x32x32 fwd+bwd", "nn", batchnorm_fwd_bwd, Target("vs_torch", 1.0)),
    Workload("MLP step 784-512-512-10, batch 128", "nn", mlp_step, Target("vs_torch", 1 / 0.9)),
    Workload("Executor MLP step 784-512-512-10, batch 128", "executor", executor_mlp_step,
             Target("vs_torch", 1 / 0.75)),
    Workload("Executor chain 200 ops 16 f32 fwd+bwd", "executor", executor_chain,
             Target("max_time", 200 * 1.5e-6)),
    Workload("check_numeric_gradient tanh(dot) 256 f64", "executor", numeric_gradient_check,
             Target("vs_torch", 10.0)),
    Workload("Gluon ResNet-18 hybridized fwd+bwd, batch 8x3x112x112 (vs bound Executor)",
             "gluon", gluon_resnet_hybrid, Target("max_overhead", 1.05)),
    Workload("Gluon MLP 784-512-512-10 imperative step, batch 128 (vs raw nd ops)", "gluon",
             gluon_mlp_imperative, Target("max_overhead", 1.1)),
    # Adam reads weight, grad, mean, var and writes weight, mean, var: 7 floats per parameter.
    Workload("Trainer.step Adam, ResNet-18 params (11.7M f32)", "optimizer",
             trainer_adam_resnet18, Target("vs_torch", 1.0), 7 * F32 * RESNET18_PARAMS, "GB/s"),
]


# ----------------------------------------------------------------------------------------------
# Formatting


def fmt_time(t: float | None) -> str:
    if t is None:
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def fmt_ratio(x: float | None, y: float | None) -> str:
    return "n/a" if x is None or y is None else f"{x / y:.2f}"


def fmt_rate(w: Workload, t: float | None) -> str:
    if not w.unit or t is None:
        return ""
    return f"{w.work / t / 1e9:.1f}"


def verdict(w: Workload, times: dict) -> tuple:
    """(text, met) for the target column; met is None when it cannot be judged."""
    if w.target is None:
        return "-", None
    f = w.target.factor(times)
    if f is None:
        return "n/a", None
    if f >= 1.0:
        return "✓", True
    return f"✗ ({f:.2f}× target)", False


def print_table(rows: list, has_torch: bool) -> None:
    head = ["workload", "ferrograd", "NumPy", "PyTorch", "fg/np", "fg/pt", "rate fg", "rate np",
            "rate pt", "unit", "target", "met"]
    body = []
    for w, times in rows:
        t = [times.get(fw) for fw in FRAMEWORKS]
        body.append([w.name, *(fmt_time(x) for x in t), fmt_ratio(t[0], t[1]),
                     fmt_ratio(t[0], t[2]), *(fmt_rate(w, x) for x in t), w.unit,
                     w.target.describe() if w.target else "-", verdict(w, times)[0]])
    if not has_torch:
        drop = {3, 5, 8}
        head = [h for i, h in enumerate(head) if i not in drop]
        body = [[c for i, c in enumerate(r) if i not in drop] for r in body]
    widths = [max(len(str(r[i])) for r in [head, *body]) for i in range(len(head))]
    line = lambda r: "  ".join(str(c).ljust(wd) for c, wd in zip(r, widths, strict=False)).rstrip()  # noqa: E731
    print(line(head))
    print(line(["-" * wd for wd in widths]))
    for r in body:
        print(line(r))
    print("fg/np, fg/pt: ferrograd time / other time (< 1: ferrograd faster). "
          "Rates: GB/s of minimal memory traffic, or GFLOP/s. "
          "✗ (f× target): fraction of the target reached.")


# ----------------------------------------------------------------------------------------------
# Environment


def openblas_threads(np) -> int | None:
    """Thread count of the OpenBLAS that NumPy loaded (queried through its C API), if any."""
    libdir = os.path.dirname(os.path.dirname(np.__file__))
    try:
        with open("/proc/self/maps") as f:
            paths = {ln.split()[-1] for ln in f if "openblas" in ln.lower() and ".so" in ln}
    except OSError:
        return None
    for path in sorted(paths):
        if not path.startswith(libdir):
            continue
        lib = ctypes.CDLL(path)
        for sym in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                    "scipy_openblas_get_num_threads", "openblas_get_num_threads"):
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn.restype = ctypes.c_int
                return int(fn())
    return None


def environment(b: Bench, threads: int) -> dict:
    np, mx, torch = b.np, b.mx, b.torch
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "ferrograd": mx.build_info(),
        "numpy": np.__version__,
        "numpy_blas_threads": openblas_threads(np),
        "torch": None if torch is None else torch.__version__,
        "torch_threads": None if torch is None else torch.get_num_threads(),
        "threads": threads,
        "RAYON_NUM_THREADS": os.environ.get("RAYON_NUM_THREADS"),
        "loadavg": load,
        "repeat": b.repeat,
        "min_time": b.min_time,
    }


def parse_args(argv: list | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=2,
                   help="threads for every framework (RAYON_NUM_THREADS, OPENBLAS/OMP_NUM_THREADS "
                        "unless set, torch.set_num_threads); default 2")
    p.add_argument("--only", metavar="PATTERN",
                   help="run workloads whose name or group matches this regex (case-insensitive)")
    p.add_argument("--json", metavar="FILE", help="write environment and results as JSON")
    p.add_argument("--repeat", type=int, default=7, help="timed repeats, median reported (>= 7)")
    p.add_argument("--min-time", type=float, default=0.1,
                   help="seconds each repeat lasts at least (loop count calibrated); default 0.1")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    args = p.parse_args(argv)
    if args.repeat < 7:
        p.error("--repeat must be >= 7")
    if args.threads < 1:
        p.error("--threads must be >= 1")
    return args


def import_frameworks(threads: int) -> tuple:
    """Imports after the thread variables are set: rayon and OpenBLAS read them at start-up."""
    os.environ["RAYON_NUM_THREADS"] = str(threads)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))
    import ferrograd as mx
    import numpy as np

    try:
        import torch
    except ImportError:
        torch = None
    else:
        torch.set_num_threads(threads)
    return mx, np, torch


def main(argv: list | None = None) -> int:
    args = parse_args(argv)
    selected = [w for w in WORKLOADS
                if not args.only or re.search(args.only, f"{w.group}/{w.name}", re.IGNORECASE)]
    if args.list:
        for w in WORKLOADS:
            print(f"{w.group}/{w.name}")
        return 0
    if not selected:
        print(f"no workload matches {args.only!r}; see --list", file=sys.stderr)
        return 2
    mx, np, torch = import_frameworks(args.threads)
    b = Bench(mx, np, torch, args.repeat, args.min_time)
    env = environment(b, args.threads)
    print(f"ferrograd {env['ferrograd']}")
    print(f"NumPy {env['numpy']} (BLAS threads: {env['numpy_blas_threads'] or 'unknown'})")
    if torch is None:
        print("PyTorch: not installed")
    else:
        print(f"PyTorch {env['torch']} (threads: {env['torch_threads']})")
    print(f"Python {env['python']}, threads {args.threads}, load average {env['loadavg']}, "
          f"median of {args.repeat} repeats >= {args.min_time} s each\n")

    rows, results = [], []
    for w in selected:
        start, before = time.perf_counter(), len(b.notes)
        times = w.run(b)
        text, met = verdict(w, times)
        rows.append((w, times))
        print(f"  {w.group}/{w.name}: ferrograd {fmt_time(times.get('ferrograd'))}, "
              f"target {w.target.describe() if w.target else '-'} {text}"
              f"  [{time.perf_counter() - start:.1f} s]", flush=True)
        for note in b.notes[before:]:
            print(f"    n/a because {note}")
        results.append({"name": w.name, "group": w.group, "seconds": times, "unit": w.unit,
                        "rates": {fw: (w.work / t / 1e9 if w.unit and t else None)
                                  for fw, t in times.items()},
                        "target": w.target.describe() if w.target else None, "met": met})
    print()
    print_table(rows, torch is not None)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "results": results}, f, indent=2)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
