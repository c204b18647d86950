"""Allreduce bandwidth: ferrograd.distributed.allreduce on a 100 MB float32 NDArray against the
same MPI allreduce called by mpi4py on a NumPy array. Run on 2 processes:

    mpiexec -n 2 python benches/python/dist_allreduce.py [--mb 100] [--repeat 10]

Prints (on rank 0) the median time and the algorithm bandwidth (bytes / time) of each, and the
ratio ferrograd / raw.
"""

import argparse
import time

import ferrograd as mx
import numpy as np
from ferrograd import distributed as dist


def timed(fns, repeat, comm):
    """Median seconds of each function, the functions interleaved within every repetition so
    that the noise of a shared machine hits them alike."""
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times, strict=True):
            comm.Barrier()
            start = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - start)
    return [float(np.median(ts)) for ts in times]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=float, default=100.0)
    p.add_argument("--repeat", type=int, default=10)
    args = p.parse_args()
    from mpi4py import MPI

    comm = dist.init()
    n = int(args.mb * 1e6) // 4
    raw = np.ones(n, dtype=np.float32)
    arr = mx.nd.ones((n,))
    raw_t, fg_t, fg_checked = timed([
        lambda: comm.Allreduce(MPI.IN_PLACE, raw, op=MPI.SUM),
        lambda: dist.allreduce(arr, check=False),
        lambda: dist.allreduce(arr),
    ], args.repeat, comm)
    if comm.Get_rank() == 0:
        nbytes = n * 4
        print(f"{comm.Get_size()} processes, {nbytes / 1e6:.0f} MB float32, "
              f"median of {args.repeat}")
        for name, t in (("mpi4py on NumPy", raw_t), ("ferrograd allreduce", fg_t),
                        ("ferrograd (shape check)", fg_checked)):
            print(f"  {name:26s} {t * 1e3:8.1f} ms  {nbytes / t / 1e9:6.2f} GB/s")
        print(f"  ratio ferrograd / raw bandwidth: {raw_t / fg_t:.2f}")


if __name__ == "__main__":
    main()
