"""Random samplers: reproducibility, thread-count independence, distributions, bad arguments."""

import os
import subprocess
import sys

import ferrograd as mx
import numpy as np
from conftest import check, raises
from ferrograd import nd

N = 200_000  # large enough for the samplers to run in parallel chunks


def test_seed_reproducibility():
    mx.random.seed(42)
    a = nd.random.uniform(shape=(1000,)).asnumpy()
    b = nd.random.normal(shape=(3, 4)).asnumpy()
    mx.random.seed(42)
    assert np.array_equal(nd.random.uniform(shape=(1000,)).asnumpy(), a)
    assert np.array_equal(nd.random.normal(shape=(3, 4)).asnumpy(), b)
    mx.random.seed(43)
    assert not np.array_equal(nd.random.uniform(shape=(1000,)).asnumpy(), a)
    c = nd.random.uniform(shape=(1000,)).asnumpy()
    assert not np.array_equal(c, a)  # the stream moves on between draws


_SCRIPT = """
import hashlib, ferrograd as mx
mx.random.seed(7)
parts = [mx.nd.random.uniform(-1, 1, shape=({n},)), mx.nd.random.normal(0, 2, shape=({n},)),
         mx.nd.random.randint(0, 1000, shape=({n},)), mx.nd.random.uniform(shape=(3,))]
s = mx.nd.random.uniform(shape=({n},)).sum()
print(hashlib.sha256(b"".join(p.asnumpy().tobytes() for p in parts + [s])).hexdigest())
print(mx.build_info()["threads"])
"""


def test_results_do_not_depend_on_thread_count():
    out = {}
    for threads in ("1", "2"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        r = subprocess.run([sys.executable, "-c", _SCRIPT.format(n=N)], env=env,
                           capture_output=True, text=True, timeout=120, check=True)
        digest, used = r.stdout.split()
        assert used == threads
        out[threads] = digest
    assert out["1"] == out["2"]


def test_uniform_distribution():
    mx.random.seed(1)
    x = nd.random.uniform(2, 5, shape=(N,))
    a = x.asnumpy()
    assert x.dtype is np.float32 and x.shape == (N,)
    assert a.min() >= 2 and a.max() < 5
    assert abs(a.mean() - 3.5) < 0.02 and abs(a.std() - 3 / np.sqrt(12)) < 0.01
    hist, _ = np.histogram(a, bins=10, range=(2, 5))
    assert (np.abs(hist / N - 0.1) < 0.005).all()
    d = nd.random.uniform(shape=(2, 3), dtype="float64")
    assert d.dtype is np.float64 and d.shape == (2, 3)
    assert nd.random.uniform().shape == (1,)


def test_normal_and_randn():
    mx.random.seed(2)
    a = nd.random.normal(1, 2, shape=(N,)).asnumpy()
    assert abs(a.mean() - 1) < 0.03 and abs(a.std() - 2) < 0.03
    assert abs(((a - 1) / 2 > 1.96).mean() - 0.025) < 0.003
    r = nd.random.randn(3, 4, loc=5, dtype="float64")
    assert r.shape == (3, 4) and r.dtype is np.float64
    assert nd.random.randn().shape == (1,)


def test_randint():
    mx.random.seed(3)
    x = nd.random.randint(-3, 4, shape=(10_000,))
    a = x.asnumpy()
    assert x.dtype is np.int32 and a.min() == -3 and a.max() == 3
    counts = np.bincount(a + 3)
    assert (np.abs(counts / 10_000 - 1 / 7) < 0.02).all()
    big = nd.random.randint(2**40, 2**40 + 5, shape=(100,), dtype="int64").asnumpy()
    assert big.min() >= 2**40 and big.max() < 2**40 + 5


def test_parameter_arrays_and_out():
    mx.random.seed(4)
    low, high = nd.array([0, 10]), nd.array([1, 20])
    u = nd.random.uniform(low, high, shape=(500,))
    assert u.shape == (2, 500)
    a = u.asnumpy()
    assert 0 <= a[0].min() and a[0].max() < 1 and 10 <= a[1].min() and a[1].max() < 20
    z = nd.random.normal(nd.array([0.0, 100.0]), nd.array([1.0, 0.0]), shape=(3,)).asnumpy()
    assert z.shape == (2, 3) and (z[1] == 100).all()
    out = nd.zeros((4,), dtype="float64")
    r = nd.random.uniform(5, 6, out=out)
    assert r is out and out.dtype is np.float64 and (out.asnumpy() >= 5).all()


def test_exponential_and_shuffle():
    mx.random.seed(5)
    e = nd.random.exponential(2.0, shape=(N,)).asnumpy()
    assert e.min() >= 0 and abs(e.mean() - 2.0) < 0.03
    x = nd.arange(20).reshape((10, 2))
    s = nd.random.shuffle(x)
    rows = s.asnumpy()
    assert sorted(rows[:, 0].tolist()) == list(range(0, 20, 2))
    check(s[:, 1] - s[:, 0], np.ones(10))  # rows move whole
    mx.random.seed(5)
    nd.random.exponential(2.0, shape=(N,))
    assert np.array_equal(nd.random.shuffle(x).asnumpy(), rows)


def test_bad_arguments():
    raises(ValueError, nd.random.uniform, 5, 2, shape=(3,), match=["low", "high"])
    raises(ValueError, nd.random.normal, 0, -1, shape=(3,), match="scale")
    raises(ValueError, nd.random.randint, 3, 3, shape=(2,), match=["low", "high"])
    raises(TypeError, nd.random.randint, 0, 3, dtype="float32", match="int32")
    raises(TypeError, nd.random.randint, 0.5, 3, match="low")
    raises(ValueError, nd.random.normal, shape=(2, -1))
    raises(TypeError, nd.random.uniform, shape="x", match="shape")
    raises(ValueError, nd.random.exponential, -1.0, match="scale")
    raises(ValueError, mx.random.seed, "a", match="seed_state must be int")
    raises(TypeError, nd.random.uniform, nd.array([0.0]), 1.0, match="both")
    raises(ValueError, nd.random.uniform, nd.array([0.0]), nd.array([1.0, 2.0]), match="shape")
