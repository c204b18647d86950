"""The native entry-point guard: GIL release for graph-wide work, errors as ferrograd.base
exceptions (never PanicException), and the context class cached by the native module."""

import sys
import threading
import time
import types

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import _ferrograd as native
from ferrograd.base import MXNetError
from ferrograd.context import Context

nd = mx.nd

# ------------------------------------------------------------------------------ GIL release


def _chain(n_layers=30, size=512):
    """A recorded chain of ``dot``/``tanh`` on ``size x size`` float32 arrays; returns a scalar
    loss (a head whose own size says nothing about the work of its backward)."""
    rng = np.random.default_rng(0)
    x = nd.array(rng.standard_normal((size, size), dtype=np.float32) / np.sqrt(size))
    ws = [nd.array(rng.standard_normal((size, size), dtype=np.float32) / np.sqrt(size))
          for _ in range(n_layers)]
    for w in ws:
        w.attach_grad()
    with mx.autograd.record():
        h = x
        for w in ws:
            h = nd.tanh(nd.dot(h, w))
        loss = h.sum()
    return loss, ws


class _Ticker:
    """A Python thread that records a timestamp every few hundred loop iterations."""

    def __init__(self):
        self.stamps = []
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        n = 0
        while not self.stop:
            n += 1
            if n % 200 == 0:
                self.stamps.append(time.perf_counter())

    def __enter__(self):
        self.thread.start()
        while len(self.stamps) < 5:  # running before the measured call starts
            time.sleep(0.001)
        return self

    def __exit__(self, *exc):
        self.stop = True
        self.thread.join()

    def progress(self, t0, t1):
        """``(stamps inside [t0, t1], largest gap without a stamp in that window)``."""
        inside = [t for t in self.stamps if t0 <= t <= t1]
        edges = [t0, *inside, t1]
        return len(inside), max(b - a for a, b in zip(edges, edges[1:], strict=False))


@pytest.mark.parametrize("how", ["method", "function"])
def test_backward_of_scalar_loss_releases_the_gil(how):
    loss, ws = _chain()
    with _Ticker() as ticker:
        t0 = time.perf_counter()
        if how == "method":
            loss.backward()
        else:
            mx.autograd.backward([loss])
        t1 = time.perf_counter()
    duration = t1 - t0
    if duration < 0.03:
        pytest.skip(f"backward too fast here ({duration * 1e3:.1f} ms) to observe another thread")
    stamps, gap = progress = ticker.progress(t0, t1)
    # With the GIL held for the whole backward the other thread makes no progress at all (one
    # gap as long as the backward); released, it keeps stamping throughout.
    assert stamps >= 20, (progress, duration)
    assert gap < 0.5 * duration, (progress, duration)
    assert all(w.grad is not None and np.isfinite(w.grad.asnumpy()).all() for w in ws)


def test_grad_of_scalar_loss_releases_the_gil():
    loss, ws = _chain()
    with _Ticker() as ticker:
        t0 = time.perf_counter()
        grads = mx.autograd.grad(loss, ws[-3:], retain_graph=False)
        t1 = time.perf_counter()
    duration = t1 - t0
    if duration < 0.03:
        pytest.skip(f"grad too fast here ({duration * 1e3:.1f} ms) to observe another thread")
    stamps, gap = ticker.progress(t0, t1)
    assert stamps >= 20 and gap < 0.5 * duration, (stamps, gap, duration)
    assert [g.shape for g in grads] == [(512, 512)] * 3


def test_executor_backward_of_scalar_head_releases_the_gil():
    size, n_layers = 512, 30
    h = mx.sym.var("x")
    for i in range(n_layers):
        h = mx.sym.tanh(mx.sym.dot(h, mx.sym.var(f"w{i}")))
    net = mx.sym.sum(h)
    shapes = {"x": (size, size), **{f"w{i}": (size, size) for i in range(n_layers)}}
    exe = net.simple_bind(mx.cpu(), **shapes)
    rng = np.random.default_rng(1)
    for a in exe.arg_arrays:
        a[:] = rng.standard_normal(a.shape, dtype=np.float32) / np.sqrt(size)
    exe.forward(is_train=True)
    with _Ticker() as ticker:
        t0 = time.perf_counter()
        exe.backward(nd.ones((1,)))
        t1 = time.perf_counter()
    duration = t1 - t0
    if duration < 0.03:
        pytest.skip(f"backward too fast here ({duration * 1e3:.1f} ms) to observe another thread")
    stamps, gap = ticker.progress(t0, t1)
    assert stamps >= 20 and gap < 0.5 * duration, (stamps, gap, duration)
    assert np.isfinite(exe.grad_arrays[1].asnumpy()).all()


def test_backward_results_unchanged_by_gil_release():
    x = nd.array([[1.0, 2.0], [3.0, 4.0]])
    x.attach_grad()
    with mx.autograd.record():
        y = (x * x).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * x.asnumpy())


def test_backward_without_history_still_raises():
    x = nd.ones((3,))
    with pytest.raises(MXNetError):
        x.backward()


# ------------------------------------------------------------------------------ guarded errors


@pytest.mark.parametrize("text", [
    "",
    "{",
    '{"nodes": [{"op": "null", "name": "x", "inputs": []}',  # truncated
    '{"nodes": [{"op": "NoSuchOp", "name": "y", "inputs": [[0, 0, 0]]}], "heads": [[0, 0, 0]]}',
    '{"nodes": [{"op": "null", "name": "x", "inputs": []}], "heads": [[7, 0, 0]]}',
    '{"nodes": [{"op": "tanh", "name": "t", "inputs": [[3, 0, 0]]}], "heads": [[0, 0, 0]]}',
    "[1, 2, 3]",
])
def test_load_json_of_bad_text_raises_mxnet_error(text):
    with pytest.raises(MXNetError):
        mx.sym.load_json(text)
    with pytest.raises(MXNetError):
        native._sym_load_json(text)


def test_load_json_roundtrip_still_works():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
    back = mx.sym.load_json(net.tojson())
    assert back.list_arguments() == net.list_arguments()
    assert back.tojson() == net.tojson()


def test_infer_shape_with_wrong_shapes_raises_mxnet_error():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    net = mx.sym.dot(a, b)
    with pytest.raises(MXNetError):
        net.infer_shape(a=(2, 3), b=(4, 5))
    with pytest.raises(MXNetError):
        net.handle.infer_shape([("a", [2, 3]), ("b", [4, 5])])
    fc = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
    with pytest.raises(MXNetError):
        fc.infer_shape(data=(2, 4), fc_weight=(5, 7))


def test_compose_with_bad_argument_raises_mxnet_error():
    x = mx.sym.var("x")
    net = mx.sym.tanh(x, name="t")
    y = mx.sym.var("y")
    with pytest.raises(MXNetError):
        net.handle.compose([], [("no_such_input", y.handle)])
    with pytest.raises(MXNetError):
        net.handle.compose([y.handle, y.handle, y.handle], [])


def test_sym_create_bad_input_raises_mxnet_error():
    with pytest.raises(MXNetError):
        native._sym_create("NoSuchOp", {}, [], [], "n", [])
    x = mx.sym.var("x")
    with pytest.raises(MXNetError):
        native._sym_create("tanh", {}, [x.handle], [("bogus", x.handle)], "n", [])


def test_history_json_and_mark_variables_errors_are_mxnet_errors():
    x = nd.ones((2, 2))
    with pytest.raises(MXNetError):
        mx.autograd.mark_variables([x], [nd.zeros((3,))])
    with pytest.raises(MXNetError):
        native._ag_mark_variable(x, nd.zeros((2, 2)), "sometimes")
    x.attach_grad()
    with mx.autograd.record():
        y = nd.tanh(x) * 2
    text = native._ag_get_symbol_json(y)
    assert "tanh" in text


def test_indexing_errors_are_mxnet_errors():
    x = nd.arange(6).reshape((2, 3))
    with pytest.raises(MXNetError):
        x[5]
    with pytest.raises(MXNetError):
        x[nd.array([0, 7], dtype="int64")]
    with pytest.raises(MXNetError):
        x[(0, 0, 0)] = 1


# ------------------------------------------------------------------------------ context


def test_context_is_cpu_context():
    x = nd.ones((2,))
    assert isinstance(x.context, Context)
    assert x.context == mx.cpu()
    assert x.ctx == mx.cpu(0)
    assert repr(x.context) == "cpu(0)"
    # A fresh object per access (contexts are mutable context managers), usable with `with`.
    assert x.context is not x.context
    with x.context as c:
        assert mx.current_context() == c
    assert x.as_in_context(mx.cpu()) is x
    assert x.copyto(mx.cpu()).asnumpy().tolist() == [1.0, 1.0]
    with pytest.raises(TypeError):
        x.as_in_context("cpu")


def test_context_class_is_cached_not_imported_per_access(monkeypatch):
    x = nd.ones((2,))
    assert x.context == mx.cpu()  # first access done: the native module holds the factory
    fake = types.ModuleType("ferrograd.context")
    fake.cpu = lambda: "not a context"
    fake._check_context = lambda ctx: (_ for _ in ()).throw(AssertionError("imported again"))
    monkeypatch.setitem(sys.modules, "ferrograd.context", fake)
    assert isinstance(x.context, Context)
    assert x.context == mx.cpu()
    assert x.as_in_context(mx.cpu()) is x
