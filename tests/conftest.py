"""Shared pytest fixtures and helpers for the ferrograd test suite."""

import json

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import _ferrograd


@pytest.fixture(autouse=True)
def _legacy_shapes():
    """Every test starts (and ends) with MXNet 1.x shape semantics and a fixed NumPy seed."""
    prev = _ferrograd._set_np_shape(False)
    np.random.seed(0)
    yield
    _ferrograd._set_np_shape(prev)


def check(x, expected, dtype=None, rtol=1e-6, atol=1e-6):
    """Asserts an NDArray equals ``expected`` (values, shape and, when given, dtype)."""
    assert isinstance(x, mx.nd.NDArray), type(x)
    got = x.asnumpy()
    want = np.asarray(expected)
    assert got.shape == want.shape, (got.shape, want.shape)
    if dtype is not None:
        assert x.dtype is np.dtype(dtype).type, (x.dtype, dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def raises(builtin, fn, *args, match=None, **kwargs):
    """Calls ``fn`` and asserts it raises an ``MXNetError`` that is also ``builtin``.

    ``except Exception`` must catch it (a PyO3 ``PanicException`` derives from ``BaseException``
    only, so this also proves no panic escaped). Returns the exception.
    """
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the point is that Exception catches it
        assert isinstance(e, mx.base.MXNetError), f"{type(e).__name__}: {e}"
        assert isinstance(e, builtin), f"{type(e).__name__} is not a {builtin.__name__}: {e}"
        assert type(e).__name__ != "PanicException"
        if match is not None:
            for m in [match] if isinstance(match, str) else match:
                assert m in str(e), f"{m!r} not in {str(e)!r}"
        return e
    raise AssertionError(f"{getattr(fn, '__name__', fn)} did not raise")


def profiled_ops(fn):
    """Runs ``fn`` under ``mx.profiler`` and returns its operator call counts by op name."""
    mx.profiler.set_state("stop")
    mx.profiler.dumps(reset=True)
    mx.profiler.set_state("run")
    try:
        fn()
    finally:
        mx.profiler.set_state("stop")
    ops = json.loads(mx.profiler.dumps(reset=True, format="json"))["Time"]["operator"]
    return {op: r["Count"] for op, r in ops.items()}
