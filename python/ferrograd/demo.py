"""``python -m ferrograd.demo``: a short tour of ferrograd's NDArray and its speed.

Later releases grow this into training a model with ``autograd`` and with a bound ``Executor``.
"""

import time

import numpy as np

import ferrograd as mx


def _best(fn, repeat=5, number=None):
    """Best time per call in seconds (auto-scaling the loop to ~50 ms)."""
    if number is None:
        number = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            if time.perf_counter() - t0 > 0.05:
                break
            number *= 4
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def _row(name, t_fg, t_np, unit="us"):
    scale = 1e6 if unit == "us" else 1e3
    ratio = t_np / t_fg if t_fg > 0 else float("inf")
    print(f"  {name:<34} {t_fg * scale:10.2f} {unit}   NumPy {t_np * scale:10.2f} {unit}"
          f"   speed vs NumPy {ratio:5.2f}x")


def tour():
    print("ferrograd", mx.__version__, mx.build_info())
    print("\n1. Arrays with MXNet semantics (float32 by default)")
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    print("x =", x)
    print("x.dtype:", x.dtype, " x.shape:", x.shape, " x.context:", x.context)
    print("x * 2 + 1 =", x * 2 + 1)
    print("nd.sum(x, axis=1) =", mx.nd.sum(x, axis=1))
    print("nd.dot(x, x.T) =", mx.nd.dot(x, x.T))
    v = x[1]
    v[:] = 0
    print("after writing through the view x[1]: x =", x)

    print("\n2. Speed (best of 5; one process, same inputs)")
    a16, b16 = mx.nd.ones((16,)), mx.nd.ones((16,))
    na16, nb16 = a16.asnumpy(), b16.asnumpy()
    _row("tiny op a + b (16 elements)", _best(lambda: a16 + b16), _best(lambda: na16 + nb16))
    n = 4 * 1024 * 1024
    a = mx.nd.random.uniform(-1, 1, shape=(n,))
    na = a.asnumpy()
    _row("exp on 4M float32", _best(lambda: mx.nd.exp(a)), _best(lambda: np.exp(na)), "ms")
    _row("sum of 4M float32", _best(lambda: mx.nd.sum(a)), _best(lambda: na.sum()), "ms")
    m = mx.nd.random.uniform(-1, 1, shape=(1024, 1024))
    nm = m.asnumpy()
    t_fg, t_np = _best(lambda: mx.nd.dot(m, m)), _best(lambda: nm @ nm)
    _row("GEMM 1024x1024 float32", t_fg, t_np, "ms")
    print(f"  {'':<34} ferrograd {2 * 1024**3 / t_fg / 1e9:.0f} GFLOP/s,"
          f" NumPy {2 * 1024**3 / t_np / 1e9:.0f} GFLOP/s")
    print("\nDone. See docs/ for the guide and docs/benchmarks.md for measured figures.")


if __name__ == "__main__":
    tour()
