#!/usr/bin/env python3
"""Fuzzing of the operators and of symbol JSON (issue 19): "a result or a clean exception, inputs
unchanged", never a crash, panic, hang, internal error or silent broadcast into ``out=``.

Usage::

    python benches/python/fuzz_ops.py --calls 100000 --jsons 20000 [--seed 0] [--report FILE]

Cases are generated in this process and run in a worker subprocess (``--worker``) under a memory
limit (``RLIMIT_AS``), so an abort or a segfault is observed, reported with a one-line
reproducer, and the worker restarted. ``tests/test_fuzz_ops.py`` drives the same generators from
hypothesis for a short CI run.

Generation is written against a small "draw" interface (``integer``, ``choice``, ``boolean``,
``floating``) so that a NumPy generator (long mode) and hypothesis (CI, with shrinking) share it.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pickle
import select
import struct
import subprocess
import sys
import time

import numpy as np

# -- what counts as clean ------------------------------------------------------------------------

CLEAN = ("MXNetError", "TypeError", "ValueError", "MemoryError")
BAD_OUTCOMES = ("bad-exception", "internal-error", "input-changed", "silent-broadcast", "crash",
                "hang", "harness-error", "mismatch")
WORKER_MEMORY = 4 << 30  # RLIMIT_AS of the worker: huge requests fail fast instead of swapping
CASE_TIMEOUT = 30.0  # seconds; a shared 2-core machine can be slow

# Ops that write into some of their inputs by design (MXNet's FMutateInputs): the optimizer
# updates keep their state (momentum, mean, variance, ...) in the arrays they are given.
_MUTATES_INPUTS = ("_update", "update_phase")


def mutates_inputs(op):
    return any(s in op for s in _MUTATES_INPUTS)


# -- draws -------------------------------------------------------------------------------------


class RandomDraw:
    """The draw interface over a NumPy generator."""

    def __init__(self, rng):
        self.rng = rng

    def integer(self, lo, hi):
        return int(self.rng.integers(lo, hi + 1))

    def choice(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def boolean(self, p=0.5):
        return bool(self.rng.random() < p)

    def floating(self):
        return float(self.rng.standard_normal())


class HypothesisDraw:
    """The draw interface over hypothesis' ``st.data()``."""

    def __init__(self, data, st):
        self.data, self.st = data, st

    def integer(self, lo, hi):
        return self.data.draw(self.st.integers(lo, hi))

    def choice(self, seq):
        return self.data.draw(self.st.sampled_from(list(seq)))

    def boolean(self, p=0.5):
        # Weighted: an integer in [0, 999] below p * 1000 (shrinks towards True for small p).
        return self.data.draw(self.st.integers(0, 999)) < p * 1000

    def floating(self):
        return self.data.draw(self.st.floats(-3, 3, allow_nan=False))


# -- operator cases ----------------------------------------------------------------------------

DTYPES = ("float32", "float32", "float32", "float64", "float16", "int32", "int64", "uint8", "int8")
HUGE_INTS = (2**31, 2**32, 2**40, 2**62, -(2**31), -(2**40))
INDEX_INPUTS = ("indices", "index", "label", "idx", "lhs_indices", "rhs_indices")


def op_specs():
    from ferrograd.ndarray import _registry
    return list(_registry.specs())


def _shape(draw, max_rank=4):
    rank = draw.integer(0, max_rank) if draw.boolean(0.1) else draw.integer(1, max_rank)
    return tuple(draw.integer(0, 5) if draw.boolean(0.05) else draw.integer(1, 4)
                 for _ in range(rank))


def _related_shape(draw, base):
    r = draw.integer(0, 9)
    if r < 7:
        return base
    if r < 9 and base:  # broadcastable: some axes become 1
        return tuple(1 if draw.boolean(0.5) else d for d in base)
    return _shape(draw)


def _int(draw):
    if draw.boolean(0.05):
        return draw.choice(HUGE_INTS)
    return draw.integer(-2, 6)


def _float(draw):
    if draw.boolean(0.05):
        return draw.choice((float("nan"), float("inf"), -float("inf"), 1e300, -1e-300, 0.0))
    return draw.choice((0.0, 0.5, 1.0, -1.0, 2.5, 1e-3, round(draw.floating(), 3)))


def _param_value(draw, p, rank):
    t = p.py_type
    if t.endswith("| None") and draw.boolean(0.15):
        return None
    if p.choices:
        return "bogus" if draw.boolean(0.05) else draw.choice(p.choices)
    if draw.boolean(0.03):  # a value of the wrong kind
        return draw.choice(("x", [1.5], {"a": 1}, object.__name__))
    if t.startswith("bool"):
        return draw.boolean()
    if t.startswith("int"):
        return _int(draw)
    if t.startswith("float"):
        return _float(draw)
    if t.startswith("tuple[int | None"):
        n = rank if draw.boolean(0.6) else draw.integer(0, 4)
        return tuple(None if draw.boolean(0.2) else _int(draw) for _ in range(n))
    if t.startswith("tuple[int"):
        n = rank if draw.boolean(0.6) else draw.integer(0, 4)
        return tuple(_int(draw) for _ in range(n))
    if t.startswith("tuple[float"):
        return tuple(_float(draw) for _ in range(draw.integer(0, 4)))
    if t.startswith("str"):
        return draw.choice(("", "cpu(0)", "default", "bogus"))
    return None


def _array(draw, shape, dtype, index_like):
    seed = draw.integer(0, 2**31 - 1)
    rng = np.random.default_rng(seed)
    if index_like or np.dtype(dtype).kind in "iu":
        # Mostly valid indices; sometimes negative or past the end.
        lo = -1 if np.dtype(dtype).kind != "u" and draw.boolean(0.2) else 0
        values = rng.integers(lo, 3 if draw.boolean(0.7) else 7, size=shape)
    else:
        values = rng.standard_normal(shape) * 3
        if values.size and draw.boolean(0.05):
            values.flat[0] = draw.choice((np.nan, np.inf, -np.inf, 0.0))
    return np.asarray(values).astype(dtype)


_F = "float32"
# Valid calls of ops that blind generation rarely gets right: (input (name, shape, dtype) list,
# parameters). ``gen_op_case`` starts from one and perturbs a parameter or a shape.
TEMPLATES = {
    "FullyConnected": ([("data", (4, 6), _F), ("weight", (3, 6), _F), ("bias", (3,), _F)],
                       {"num_hidden": 3}),
    "Convolution": ([("data", (2, 3, 7, 7), _F), ("weight", (4, 3, 3, 3), _F),
                     ("bias", (4,), _F)], {"kernel": (3, 3), "num_filter": 4, "pad": (1, 1),
                                           "stride": (2, 2)}),
    "Deconvolution": ([("data", (2, 3, 5, 5), _F), ("weight", (3, 4, 3, 3), _F)],
                      {"kernel": (3, 3), "num_filter": 4, "stride": (2, 2)}),
    "Pooling": ([("data", (2, 3, 6, 6), _F)], {"kernel": (2, 2), "stride": (2, 2),
                                               "pool_type": "max"}),
    "BatchNorm": ([("data", (2, 3, 4, 4), _F), ("gamma", (3,), _F), ("beta", (3,), _F),
                   ("moving_mean", (3,), _F), ("moving_var", (3,), _F)], {}),
    "LayerNorm": ([("data", (2, 5), _F), ("gamma", (5,), _F), ("beta", (5,), _F)], {}),
    "InstanceNorm": ([("data", (2, 3, 4), _F), ("gamma", (3,), _F), ("beta", (3,), _F)], {}),
    "Embedding": ([("data", (2, 3), "index"), ("weight", (6, 4), _F)],
                  {"input_dim": 6, "output_dim": 4}),
    "UpSampling": ([("data", (1, 2, 3, 3), _F)], {"scale": 2, "sample_type": "nearest"}),
    "softmax_cross_entropy": ([("data", (4, 5), _F), ("label", (4,), "index")], {}),
    "broadcast_to": ([("data", (1, 3), _F)], {"shape": (4, 3)}),
    "slice": ([("data", (4, 5), _F)], {"begin": (1, 0), "end": (3, 4)}),
    "gather_nd": ([("data", (4, 5), _F), ("indices", (2, 3), "index")], {}),
    "scatter_nd": ([("data", (3,), _F), ("indices", (2, 3), "index")], {"shape": (6, 6)}),
    "batch_take": ([("a", (4, 5), _F), ("indices", (4,), "index")], {}),
    "one_hot": ([("indices", (4,), "index")], {"depth": 6}),
    "tile": ([("data", (2, 3), _F)], {"reps": (2, 2)}),
    "Reshape": ([("data", (4, 6), _F)], {"shape": (2, -1, 3)}),
    "transpose": ([("data", (2, 3, 4), _F)], {"axes": (2, 0, 1)}),
    "mp_sgd_update": ([("weight", (5,), "float16"), ("grad", (5,), "float16"),
                       ("weight32", (5,), _F)], {"lr": 0.1}),
    "signum_update": ([("weight", (5,), _F), ("grad", (5,), _F), ("mom", (5,), _F)],
                      {"lr": 0.1}),
    "ftrl_update": ([("weight", (5,), _F), ("grad", (5,), _F), ("z", (5,), _F),
                     ("n", (5,), _F)], {"lr": 0.1}),
    "lamb_update_phase2": ([("weight", (5,), _F), ("g", (5,), _F), ("r1", (1,), _F),
                            ("r2", (1,), _F)], {"lr": 0.1}),
    "multi_sgd_update": ([("data", (5,), _F), ("data", (5,), _F), ("data", (3,), _F),
                          ("data", (3,), _F)], {"lrs": (0.1, 0.2), "wds": (0.0, 0.0),
                                                "num_weights": 2}),
}


def _from_template(draw, spec):
    inputs, kwargs = TEMPLATES[spec.name]
    kwargs = dict(kwargs)
    shapes = [list(shape) for _, shape, _ in inputs]
    params = {p.name: p for p in spec.params}
    r = draw.integer(0, 3)
    if r == 1 and params:  # one parameter gets a generated (often invalid) value
        p = params[draw.choice(sorted(params))]
        kwargs[p.name] = _param_value(draw, p, len(shapes[0]))
    elif r == 2:  # one input gets another shape
        shapes[draw.integer(0, len(shapes) - 1)] = list(_shape(draw))
    elif r == 3:  # one dimension becomes 0, 1 or large
        k = draw.integer(0, len(shapes) - 1)
        if shapes[k]:
            shapes[k][draw.integer(0, len(shapes[k]) - 1)] = draw.choice((0, 1, 9, 64))
    arrays = []
    for (_, _, dtype), shape in zip(inputs, shapes, strict=True):
        index_like = dtype == "index"
        arrays.append(_array(draw, tuple(shape), _F if index_like else dtype, index_like))
    return arrays, kwargs


def gen_op_case(draw, spec):
    """A call of ``spec``'s op: inputs (NumPy arrays), keyword parameters, and whether to also
    try a wrongly shaped ``out=``."""
    if spec.name in TEMPLATES and draw.boolean(0.6):
        arrays, kwargs = _from_template(draw, spec)
        return {"kind": "op", "op": spec.name, "arrays": arrays, "kwargs": kwargs,
                "try_out": draw.boolean(0.15)}
    base = _shape(draw)
    dtype = draw.choice(DTYPES)
    if spec.variadic:
        names = [spec.inputs[0]] * draw.integer(0 if draw.boolean(0.05) else 1, 4)
    else:
        names = [n for n in spec.inputs if n not in spec.optional or draw.boolean(0.6)]
        if draw.boolean(0.03) and names:  # a missing input
            names = names[:-1]
    arrays = []
    for name in names:
        shape = _related_shape(draw, base)
        dt = dtype if draw.boolean(0.85) else draw.choice(DTYPES)
        arrays.append(_array(draw, shape, dt, name in INDEX_INPUTS))
    kwargs = {}
    for p in spec.params:
        if p.required and not draw.boolean(0.03) or not p.required and draw.boolean(0.4):
            kwargs[p.name] = _param_value(draw, p, len(base))
    if draw.boolean(0.03):
        kwargs["bogus_param"] = 1
    return {"kind": "op", "op": spec.name, "arrays": arrays, "kwargs": kwargs,
            "try_out": draw.boolean(0.15)}


def _array_literal(a):
    if a.size <= 12:
        return f"nd.array(np.array({a.tolist()!r}, dtype='{a.dtype}'), dtype='{a.dtype}')"
    return f"nd.ones({a.shape}, dtype='{a.dtype}')"


def op_reproducer(case):
    args = ", ".join(_array_literal(a) for a in case["arrays"])
    kw = ", ".join(f"{k}={v!r}" for k, v in case["kwargs"].items())
    call = f"nd.{case['op']}({', '.join(x for x in (args, kw) if x)})"
    return "import numpy as np, ferrograd as mx; nd = mx.nd; " + call


# -- symbol JSON cases ---------------------------------------------------------------------------


def base_symbols():
    """(name, JSON, input shapes) of a few small valid graphs to mutate."""
    import ferrograd as mx
    sym = mx.sym
    x = sym.var("data")
    out = []
    mlp = sym.FullyConnected(x, num_hidden=8, name="fc1")
    mlp = sym.Activation(mlp, act_type="relu", name="relu1")
    mlp = sym.SoftmaxOutput(sym.FullyConnected(mlp, num_hidden=3, name="fc2"), name="softmax")
    out.append(("mlp", mlp.tojson(), {"data": (4, 5), "softmax_label": (4,)}))
    conv = sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv")
    conv = sym.BatchNorm(conv, name="bn")
    conv = sym.Pooling(sym.relu(conv), kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool")
    conv = sym.FullyConnected(sym.Flatten(conv), num_hidden=2, name="fc")
    out.append(("cnn", sym.MakeLoss(sym.sum(conv)).tojson(), {"data": (2, 3, 6, 6)}))
    y = sym.var("y")
    ew = sym.broadcast_add(sym.exp(x) * 2, sym.reshape(y, shape=(1, -1)))
    ew = sym.Group([sym.sum(ew, axis=1), sym.transpose(ew), sym.Concat(ew, ew, dim=0)])
    out.append(("elementwise", ew.tojson(), {"data": (3, 4), "y": (4,)}))
    return out


_SHAPES_STRS = ("(0,)", "(-1,)", "(2147483648,)", "(4611686018427387904, 4)", "()", "(1, 2, 3)")
_ATTR_STRS = ("0", "-1", "1e400", "nan", "abc", "True", "[1, 2]", "", "{", "9" * 30) + _SHAPES_STRS


def mutate_json(draw, text, op_names):
    """One to three random mutations of a symbol JSON: structural (ops, attributes, input
    entries, nodes, heads, keys) or textual (characters)."""
    if draw.boolean(0.15):
        chars = list(text)
        for _ in range(draw.integer(1, 4)):
            i = draw.integer(0, max(len(chars) - 1, 0))
            r = draw.integer(0, 2)
            if r == 0 and chars:
                del chars[i]
            elif r == 1:
                chars.insert(i, draw.choice('{}[]",:0-9a'))
            elif chars:
                chars[i] = draw.choice('{}[]",:019ax')
        return "".join(chars)
    graph = json.loads(text)
    nodes = graph["nodes"]
    for _ in range(draw.integer(1, 3)):
        if not nodes:
            break
        i = draw.integer(0, len(nodes) - 1)
        node = nodes[i]
        r = draw.integer(0, 9)
        if r == 0:
            node["op"] = draw.choice(op_names) if draw.boolean(0.8) else "no_such_op"
        elif r in (1, 2):
            attrs = node.setdefault("attrs", {})
            key = draw.choice(list(attrs) or ["num_hidden"]) if draw.boolean(0.7) else \
                draw.choice(("kernel", "shape", "axis", "num_filter", "__shape__", "bogus"))
            attrs[key] = draw.choice(_ATTR_STRS)
        elif r == 3 and node.get("attrs"):
            del node["attrs"][draw.choice(list(node["attrs"]))]
        elif r in (4, 5) and node.get("inputs"):
            j = draw.integer(0, len(node["inputs"]) - 1)
            entry = list(node["inputs"][j])
            entry[draw.integer(0, len(entry) - 1)] = draw.choice(
                (-1, 0, i, i + 1, len(nodes), 1, 2, 2**40))
            node["inputs"][j] = entry
        elif r == 6 and node.get("inputs"):
            del node["inputs"][draw.integer(0, len(node["inputs"]) - 1)]
        elif r == 7:
            if draw.boolean(0.5):
                del nodes[i]
            else:
                nodes.insert(i, json.loads(json.dumps(node)))
        elif r == 8:
            key = draw.choice(("heads", "arg_nodes", "node_row_ptr", "attrs"))
            graph[key] = draw.choice(([], [[0, 0, 0]], [[len(nodes) + 5, 0, 0]], [0, 1], {}, None))
        else:
            node.pop(draw.choice(("name", "op", "inputs", "attrs")), None)
    return json.dumps(graph)


def gen_json_case(draw, bases, op_names):
    name, text, shapes = draw.choice(bases)
    return {"kind": "json", "base": name, "json": mutate_json(draw, text, op_names),
            "shapes": shapes, "is_train": draw.boolean(), "backward": draw.boolean(0.5)}


def json_reproducer(case):
    return (f"import ferrograd as mx; s = mx.sym.load_json({case['json']!r}); "
            f"e = s.simple_bind(mx.cpu(), **{case['shapes']!r}); "
            f"e.forward(is_train={case['is_train']})"
            + ("; e.backward([mx.nd.ones(o.shape) for o in e.outputs])"
               if case["backward"] else ""))


def sym_reproducer(case):
    names = [f"in{k}" for k in range(len(case["arrays"]))]
    kw = "".join(f", {k}={v!r}" for k, v in case["kwargs"].items())
    sym_args = ", ".join(f"mx.sym.var('{n}')" for n in names)
    shapes = ", ".join(f"{n}={a.shape}" for n, a in zip(names, case["arrays"], strict=True))
    types = {n: str(a.dtype) for n, a in zip(names, case["arrays"], strict=True)}
    return (f"import ferrograd as mx; e = mx.sym.{case['op']}({sym_args}{kw}).simple_bind("
            f"mx.cpu(), grad_req='null', type_dict={types!r}{', ' if shapes else ''}{shapes}); "
            "e.forward()")


def reproducer(case):
    if case["kind"] == "op":
        return op_reproducer(case)
    if case["kind"] == "sym":
        return sym_reproducer(case)
    return json_reproducer(case)


# -- running a case (in the worker) ---------------------------------------------------------------


def _classify_exception(e):
    from ferrograd.base import MXNetError
    name = type(e).__name__
    text = f"{name}: {str(e)[:300]}"
    if "internal error" in str(e).lower() or "capacity overflow" in str(e).lower():
        return "internal-error", text
    if isinstance(e, (MXNetError, TypeError, ValueError, MemoryError)):
        return "clean", name
    if isinstance(e, RuntimeError) and str(e).startswith("simple_bind error"):
        return "clean", name  # MXNet's simple_bind wraps every bind error so, as ferrograd does
    return "bad-exception", text


def _same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(
        a, b, equal_nan=a.dtype.kind in "fc")


def _outputs(res):
    from ferrograd import nd
    if isinstance(res, nd.NDArray):
        return [res]
    if isinstance(res, (list, tuple)):
        return [r for r in res if isinstance(r, nd.NDArray)]
    return []


def run_op_case(case):
    import ferrograd as mx
    nd = mx.nd
    try:
        inputs = [nd.array(a, dtype=a.dtype) for a in case["arrays"]]
    except BaseException as e:  # noqa: BLE001 - the harness classifies everything
        return _classify_exception(e)
    fn = getattr(nd, case["op"])
    try:
        res = fn(*inputs, **case["kwargs"])
        outs = [o.asnumpy() for o in _outputs(res)]
        outcome, detail = "ok", ""
    except BaseException as e:  # noqa: BLE001 - PanicException is a BaseException
        (outcome, detail), outs = _classify_exception(e), None
    if not mutates_inputs(case["op"]):
        for k, (arr, before) in enumerate(zip(inputs, case["arrays"], strict=True)):
            if not _same(arr.asnumpy(), before):
                return "input-changed", f"input {k} changed (call outcome {outcome})"
    if outcome == "ok" and case["try_out"] and isinstance(res, nd.NDArray) and outs:
        want = outs[0].shape
        wrong = tuple(d + 1 for d in want) or (2,)
        if np.prod(wrong, dtype=float) > 1e6:
            return outcome, detail  # too big to try a wrong out=
        out = nd.zeros(wrong, dtype=outs[0].dtype)
        try:
            fn(*inputs, out=out, **case["kwargs"])
            return "silent-broadcast", f"out= of shape {wrong} accepted for a {want} result"
        except BaseException as e:  # noqa: BLE001
            got, text = _classify_exception(e)
            if got != "clean":
                return got, "with out=: " + text
    return outcome, detail


def run_json_case(case):
    import ferrograd as mx
    try:
        s = mx.sym.load_json(case["json"])
        exe = s.simple_bind(mx.cpu(), **case["shapes"])
        outs = exe.forward(is_train=case["is_train"])
        [o.asnumpy() for o in outs]
        if case["backward"]:
            exe.backward([mx.nd.ones(o.shape, dtype=o.dtype) for o in outs])
            [g.asnumpy() for g in exe.grad_arrays if g is not None]
        return "ok", ""
    except BaseException as e:  # noqa: BLE001
        return _classify_exception(e)


_RANDOM = ("random", "sample", "Dropout", "shuffle")


def run_sym_case(case):
    """The op composed as a Symbol over variables, bound and run on the executor; when the
    imperative call also succeeds, both must give the same values (deterministic ops)."""
    import ferrograd as mx
    names = [f"in{k}" for k in range(len(case["arrays"]))]
    try:
        s = getattr(mx.sym, case["op"])(*[mx.sym.var(n) for n in names], **case["kwargs"])
        exe = s.simple_bind(mx.cpu(), grad_req="null",
                            type_dict={n: a.dtype for n, a in zip(names, case["arrays"],
                                                                  strict=True)},
                            **{n: a.shape for n, a in zip(names, case["arrays"], strict=True)})
        for n, a in zip(names, case["arrays"], strict=True):
            bound = exe.arg_dict.get(n, exe.aux_dict.get(n))  # BatchNorm's inputs 3, 4 are aux
            bound[:] = mx.nd.array(a, dtype=a.dtype)
        sym_outs = [o.asnumpy() for o in exe.forward(is_train=False)]
    except BaseException as e:  # noqa: BLE001
        return _classify_exception(e)
    if any(r in case["op"] for r in _RANDOM):
        return "ok", ""
    try:
        res = getattr(mx.nd, case["op"])(*[mx.nd.array(a, dtype=a.dtype)
                                           for a in case["arrays"]], **case["kwargs"])
        nd_outs = [o.asnumpy() for o in _outputs(res)]
    except BaseException:  # noqa: BLE001 - the op case checks the imperative call itself
        return "ok", ""
    for k, (a, b) in enumerate(zip(sym_outs, nd_outs, strict=False)):
        close = a.shape == b.shape and (a.dtype.kind not in "fc" and np.array_equal(a, b) or
                                        a.dtype.kind in "fc" and np.allclose(
                                            a, b, rtol=1e-3, atol=1e-5, equal_nan=True))
        if not close:
            return "mismatch", (f"output {k}: executor {a.shape} {a.dtype} differs from the "
                                f"imperative call {b.shape} {b.dtype}")
    return "ok", ""


def run_case(case):
    if case["kind"] == "op":
        return run_op_case(case)
    if case["kind"] == "sym":
        return run_sym_case(case)
    if case["kind"] == "json":
        return run_json_case(case)
    # Harness self-tests (tests/test_fuzz_ops.py): the worker dies or stalls on purpose.
    if case["kind"] == "selftest-abort":
        os.abort()
    if case["kind"] == "selftest-sleep":
        time.sleep(case["seconds"])
        return "ok", ""
    raise ValueError(f"unknown case kind {case['kind']!r}")


def _worker_main():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the library prints goes to stderr, not into the protocol
    import ferrograd  # noqa: F401 - import before the first case is timed
    while True:
        header = proto_in.read(4)
        if len(header) < 4:
            return
        case = pickle.loads(proto_in.read(struct.unpack("<I", header)[0]))
        try:
            result = pickle.dumps(run_case(case))
        except Exception as e:  # noqa: BLE001 - a harness error, not the library's
            result = pickle.dumps(("harness-error", f"{type(e).__name__}: {e}"))
        proto_out.write(struct.pack("<I", len(result)) + result)
        proto_out.flush()


# -- the worker, seen from the parent ------------------------------------------------------------


class Worker:
    """A subprocess running cases; restarted after a crash or a hang."""

    def __init__(self):
        self.proc = None
        self.restarts = 0

    def _start(self):
        env = dict(os.environ, RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)

    def run(self, case, timeout=CASE_TIMEOUT):
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        data = pickle.dumps(case)
        try:
            self.proc.stdin.write(struct.pack("<I", len(data)) + data)
            self.proc.stdin.flush()
            header = self._read(4, timeout)
            if header is None:
                self._kill()
                return "hang", f"no answer within {timeout:.0f} s"
            if len(header) < 4:
                return self._crashed()
            body = self._read(struct.unpack("<I", header)[0], timeout)
            return pickle.loads(body)
        except (BrokenPipeError, EOFError, pickle.UnpicklingError):
            return self._crashed()

    def _read(self, n, timeout):
        out = b""
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while len(out) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, n - len(out))
            if not chunk:
                return out
            out += chunk
        return out

    def _crashed(self):
        code = self.proc.wait(timeout=30)
        self._forget()
        self.restarts += 1
        return "crash", f"worker exit code {code}" + (f" (signal {-code})" if code < 0 else "")

    def _kill(self):
        self.proc.kill()
        self.proc.wait()
        self._forget()
        self.restarts += 1

    def _forget(self):
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:  # the write end of a dead worker's stdin may fail to flush
                pass
        self.proc = None

    def close(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._forget()


# -- long mode -------------------------------------------------------------------------------------


def _signature(case, outcome, detail):
    """Groups findings: the op (or JSON base), the outcome and the first words of the message."""
    where = "json:" + case["base"] if case["kind"] == "json" else f"{case['kind']}:{case['op']}"
    words = str(detail).replace("(please report)", "").split()
    return (where, outcome, " ".join(w for w in words[:12] if not any(c.isdigit() for c in w)))


def fuzz(calls, jsons, seed, report=None, log=print, sym_calls=0):
    rng = np.random.default_rng(seed)
    draw = RandomDraw(rng)
    specs = op_specs()
    bases = base_symbols()
    op_names = [s.name for s in specs]
    worker = Worker()
    counts = collections.Counter()
    findings = {}
    start = time.monotonic()
    jobs = ([("op", i) for i in range(calls)] + [("sym", i) for i in range(sym_calls)]
            + [("json", i) for i in range(jsons)])
    try:
        for n, (kind, i) in enumerate(jobs):
            if kind == "json":
                case = gen_json_case(draw, bases, op_names)
            else:
                case = dict(gen_op_case(draw, specs[i % len(specs)]), kind=kind)
            outcome, detail = worker.run(case)
            counts[(kind, outcome)] += 1
            if outcome in BAD_OUTCOMES:
                key = _signature(case, outcome, detail)
                if key not in findings:
                    findings[key] = (detail, reproducer(case))
                    log(f"[{outcome}] {detail}\n    {reproducer(case)}")
            if (n + 1) % 5000 == 0:
                log(f"{n + 1} cases in {time.monotonic() - start:.0f} s: {dict(counts)}")
    finally:
        worker.close()
    summary = {"calls": calls, "sym_calls": sym_calls, "jsons": jsons, "seed": seed,
               "seconds": round(time.monotonic() - start, 1),
               "counts": {f"{k}:{o}": v for (k, o), v in sorted(counts.items())},
               "worker_restarts": worker.restarts,
               "findings": [{"where": k[0], "outcome": k[1], "detail": d, "reproducer": r}
                            for k, (d, r) in findings.items()]}
    if report:
        with open(report, "w") as f:
            json.dump(summary, f, indent=1)
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--calls", type=int, default=100_000, help="random operator calls")
    ap.add_argument("--sym-calls", type=int, default=20_000,
                    help="random operator calls composed as Symbols and run on the executor")
    ap.add_argument("--jsons", type=int, default=20_000, help="mutated symbol JSONs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report", help="write the counts and findings as JSON here")
    args = ap.parse_args(argv)
    if args.worker:
        _worker_main()
        return 0
    summary = fuzz(args.calls, args.jsons, args.seed, args.report, sym_calls=args.sym_calls)
    print(json.dumps({k: v for k, v in summary.items() if k != "findings"}, indent=1))
    print(f"{len(summary['findings'])} distinct findings")
    return 1 if summary["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
