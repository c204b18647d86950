"""Sparse storage benchmarks (not a timed test): ``dot(csr, dense)`` against SciPy in the same
process, and the Embedding(sparse_grad=True) backward. Prints medians; see docs/benchmarks.md.

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


def bench_dot(repeat):
    import ferrograd as mx
    import scipy.sparse as sps

    rng = np.random.default_rng(0)
    n, k = 10_000, 64
    m = sps.random(n, n, density=0.01, format="csr", dtype=np.float32, random_state=0)
    dense = rng.standard_normal((n, k)).astype(np.float32)
    csr, rhs = mx.nd.sparse.csr_matrix(m), mx.nd.array(dense)
    ours = mx.nd.sparse.dot(csr, rhs)
    np.testing.assert_allclose(ours.asnumpy(), m @ dense, rtol=1e-4, atol=1e-4)
    t_ours = median_time(lambda: mx.nd.sparse.dot(csr, rhs).wait_to_read(), repeat)
    t_scipy = median_time(lambda: m @ dense, repeat)
    t_ours_t = median_time(lambda: mx.nd.sparse.dot(csr, rhs, transpose_a=True), repeat)
    t_scipy_t = median_time(lambda: m.T @ dense, repeat)
    print(f"dot(csr 1e4x1e4 1%, dense 1e4x64): ferrograd {t_ours * 1e3:.2f} ms, "
          f"scipy {t_scipy * 1e3:.2f} ms, speed vs scipy {t_scipy / t_ours:.2f}x")
    print(f"dot(csr.T, dense) (result row_sparse): ferrograd {t_ours_t * 1e3:.2f} ms, "
          f"scipy {t_scipy_t * 1e3:.2f} ms")


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
