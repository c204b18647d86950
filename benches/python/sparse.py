"""Sparse storage benchmarks (not a timed test): ``dot(csr, dense)`` against SciPy in the same
process (interleaved), and the Embedding(sparse_grad=True) backward. Prints medians; see
docs/benchmarks.md.

    python benches/python/sparse.py [--repeat 7]
"""

import argparse
import statistics
import time

import numpy as np


def median_time(fn, repeat):
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def interleaved(fns, repeat):
    """Median seconds of each of ``fns`` (name -> callable), run in turns after a warm-up, so
    machine load hits them alike."""
    times = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def bench_dot(repeat):
    import ferrograd as mx
    import scipy.sparse as sps

    rng = np.random.default_rng(0)
    n, k = 10_000, 64
    m = sps.random(n, n, density=0.01, format="csr", dtype=np.float32, random_state=0)
    dense = rng.standard_normal((n, k)).astype(np.float32)
    left = rng.standard_normal((k, n)).astype(np.float32)
    csr, rhs, lhs = mx.nd.sparse.csr_matrix(m), mx.nd.array(dense), mx.nd.array(left)
    np.testing.assert_allclose(mx.nd.sparse.dot(csr, rhs).asnumpy(), m @ dense, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(mx.nd.sparse.dot(csr, rhs, transpose_a=True).asnumpy(),
                               m.T @ dense, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mx.nd.sparse.dot(lhs, csr).asnumpy(), left @ m, rtol=1e-4,
                               atol=1e-4)
    t = interleaved({
        "ours": lambda: mx.nd.sparse.dot(csr, rhs).wait_to_read(),
        "scipy": lambda: m @ dense,
        "ours_t": lambda: mx.nd.sparse.dot(csr, rhs, transpose_a=True),
        "scipy_t": lambda: m.T @ dense,
        "ours_dc": lambda: mx.nd.sparse.dot(lhs, csr),
        "scipy_dc": lambda: left @ m,
    }, repeat)
    for label, ours, ref in (("dot(csr 1e4x1e4 1%, dense 1e4x64)", "ours", "scipy"),
                             ("dot(csr.T, dense) (result row_sparse)", "ours_t", "scipy_t"),
                             ("dot(dense 64x1e4, csr) (result csr)", "ours_dc", "scipy_dc")):
        print(f"{label}: ferrograd {t[ours] * 1e3:.2f} ms, scipy {t[ref] * 1e3:.2f} ms, "
              f"speed vs scipy {t[ref] / t[ours]:.2f}x")


def bench_embedding(repeat):
    import ferrograd as mx

    rows, dim, batch = 1_000_000, 64, 1024
    emb = mx.gluon.nn.Embedding(rows, dim, sparse_grad=True)
    emb.initialize(init="zeros")
    trainer = mx.gluon.Trainer(emb.collect_params(), "sgd", {"learning_rate": 0.1,
                                                             "momentum": 0.9})
    idx = mx.nd.array(np.random.default_rng(0).integers(0, rows, batch))
    head = mx.nd.ones((batch, dim))
    recorded = []

    def forward():
        with mx.autograd.record():
            out = emb(idx)
        out.wait_to_read()
        recorded.append(out)

    def backward():
        recorded.pop().backward(head)  # synchronous: the rows are stored when it returns

    def forward_backward():
        forward()
        backward()
        emb.weight.grad().wait_to_read()

    def step():
        trainer.step(batch)
        emb.weight.data().wait_to_read()

    t_both = median_time(forward_backward, repeat)
    t_fwd, t_bwd, t_step = [], [], []
    for _ in range(repeat):
        for fn, times in ((forward, t_fwd), (backward, t_bwd), (step, t_step)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    med = statistics.median
    print(f"Embedding({rows}x{dim}, sparse_grad=True), batch {batch}: forward+backward+.grad "
          f"{t_both * 1e3:.2f} ms; forward {med(t_fwd) * 1e3:.2f} ms, backward "
          f"{med(t_bwd) * 1e3:.2f} ms, Trainer.step (sgd momentum, lazy) "
          f"{med(t_step) * 1e3:.2f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    bench_dot(args.repeat)
    bench_embedding(args.repeat)


if __name__ == "__main__":
    main()
