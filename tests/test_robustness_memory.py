"""Issue 19, items 1, 4, 5: allocation failures and overflowing shapes raise, never abort.

Requests far beyond the machine (2**40 elements, 40 GB) must raise ``MemoryError`` (also an
``MXNetError``) naming the op and the bytes; shapes whose element count does not fit 64 bits must
raise a clear error naming the op and the shape. Afterwards the process keeps working. The
"ordinary op when memory runs out" case runs in a child process under ``RLIMIT_AS``.
"""

import os
import subprocess
import sys
import textwrap

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.base import MXNetError

nd = mx.nd
HUGE = (2**40,)  # 4 TiB of float32: no machine grants it


def _still_usable():
    a = nd.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal((a * 2 + 1).asnumpy(), [3.0, 5.0, 7.0])


def test_memory_error_is_both_memory_error_and_mxnet_error():
    assert issubclass(mx.base.MemoryError_, MemoryError)
    assert issubclass(mx.base.MemoryError_, MXNetError)


@pytest.mark.parametrize("make", [
    lambda: nd.zeros(HUGE),
    lambda: nd.ones(HUGE),
    lambda: nd.full(HUGE, 3.0),
    lambda: nd.empty(HUGE),
    lambda: nd.ones((100000, 100000)),  # 40 GB
    lambda: nd.random.uniform(shape=HUGE),
    lambda: nd.random.normal(shape=HUGE),
    lambda: nd.random.randint(0, 5, shape=HUGE),
], ids=["zeros", "ones", "full", "empty", "ones-40GB", "uniform", "normal", "randint"])
def test_creation_beyond_memory_raises_memory_error(make):
    with pytest.raises(MemoryError, match=r"cannot allocate \d+ bytes"):
        make()
    _still_usable()


def test_memory_error_names_the_op_and_the_bytes():
    with pytest.raises(MXNetError) as info:
        nd.zeros(HUGE, dtype="float64")
    msg = str(info.value)
    assert str(2**40 * 8) in msg and "(1099511627776,)" in msg, msg


@pytest.mark.parametrize("call,op", [
    (lambda: nd.one_hot(nd.zeros((64,)), depth=2**31), "one_hot"),  # 512 GiB
    (lambda: nd.tile(nd.ones((2, 2)), reps=(2**19, 2**19)), "tile"),
    (lambda: nd.broadcast_axis(nd.ones((1, 4)), axis=0, size=2**38).exp(), "exp"),
    (lambda: nd.UpSampling(nd.ones((1, 1, 4, 4)), scale=10**6, sample_type="nearest"),
     "UpSampling"),
], ids=["one_hot", "tile", "broadcast_axis-exp", "UpSampling"])
def test_op_outputs_beyond_memory_raise_memory_error(call, op):
    with pytest.raises(MemoryError) as info:
        call()
    assert op in str(info.value), str(info.value)
    _still_usable()


def test_simple_bind_beyond_memory_raises_memory_error():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
    with pytest.raises(MemoryError, match=r"cannot allocate 43980465111040 bytes"):
        net.simple_bind(mx.cpu(), data=(2**40, 10))
    _still_usable()


@pytest.mark.parametrize("shape", [(2**62 + 1, 4), (2**32, 2**32)])
def test_broadcast_to_an_overflowing_shape_is_a_clear_error(shape):
    with pytest.raises(MXNetError) as info:
        nd.broadcast_to(nd.ones((1, 1)), shape=shape).sum()
    msg = str(info.value)
    assert "broadcast_to" in msg and "too large" in msg, msg
    assert "internal error" not in msg and "capacity overflow" not in msg


@pytest.mark.parametrize("call", [
    lambda: nd.broadcast_axis(nd.ones((1, 4)), axis=0, size=2**62),
    lambda: nd.broadcast_like(nd.ones((1, 1)), nd.ones((1, 1)).broadcast_to((1, 1)),
                              lhs_axes=(0,), rhs_axes=(0,)).broadcast_to((2**32, 2**32)),
    lambda: nd.ones((4,)).reshape((2**32, 2**32, 0)),
    lambda: nd.UpSampling(nd.ones((1, 1, 2**20, 2**20)), scale=2**22, sample_type="nearest"),
    lambda: mx.np.broadcast_to(mx.np.ones((1, 1)), (2**32, 2**32)),
    lambda: nd.scatter_nd(nd.ones((1,)), nd.array([[0], [0]]), shape=(2**40, 2**40)),
    lambda: nd._backward_gather_nd(nd.ones((1,)), nd.array([[0], [0]]),
                                   shape=(2**40, 2**40)),
], ids=["broadcast_axis", "broadcast_like-to", "Reshape", "UpSampling", "np.broadcast_to",
        "scatter_nd", "_backward_gather_nd"])
def test_huge_or_overflowing_shapes_raise_cleanly(call):
    with pytest.raises((MXNetError, MemoryError, ValueError)) as info:
        call()
    msg = str(info.value)
    assert "internal error" not in msg and "capacity overflow" not in msg, msg
    _still_usable()


_RLIMITED_CHILD = textwrap.dedent("""
    import resource, sys
    import ferrograd as mx
    a = mx.nd.ones((64 * 1024 * 1024,))          # 256 MiB, under the limit
    limit = 1536 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    hoard, failures = [], set()
    for step in range(40):                       # fill the rest of the address space
        for name, f in (("add", lambda: a + 1), ("asnumpy", lambda: a.asnumpy())):
            try:
                hoard.append(f())
            except MemoryError as e:
                assert isinstance(e, mx.base.MXNetError), type(e)
                assert "bytes" in str(e), str(e)
                failures.add(name)
    hoard.clear()
    b = a + 1                                     # memory is back: ordinary work goes on
    assert float(b[3].asscalar()) == 2.0
    print("FAILURES", sorted(failures))
""")


def test_ordinary_ops_when_memory_runs_out_raise_and_recover():
    env = dict(os.environ, RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", _RLIMITED_CHILD], capture_output=True,
                         text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "FAILURES ['add', 'asnumpy']" in res.stdout or "FAILURES ['add']" in res.stdout, (
        res.stdout, res.stderr[-2000:])
