"""Projected data-parallel scaling from measured compute and allreduce figures.

Model (weak scaling: a fixed batch per worker, so compute per step does not change with N):

    ring allreduce of S bytes over N workers, per bucket of b bytes:
        T_ar(N) = sum over buckets of [ 2 (N-1)/N * b / B  +  2 (N-1) * alpha ]
    step(N) = compute + exposed(N)
    exposed(N) = T_ar(N)                                  without overlap
               = max(T_last(N), T_ar(N) - backward)       with overlap, where the last bucket
                                                          T_last cannot hide behind backward
    efficiency(N) = compute / step(N)

B is the per-link bandwidth (10/25/100 Gbit/s networks), alpha the per-message latency,
backward is taken as 2/3 of forward+backward. The model is first checked against the
2-process measurement on this machine (link bandwidth measured by dist_allreduce.py over
shared memory), then projected for N = 2..64.

    python benches/python/dist_scaling.py                      # the recorded figures
    python benches/python/dist_scaling.py --measured run.json  # from dist_resnet_step.py --json
"""

import argparse
import json


def ring_allreduce_s(nbytes, n, bandwidth, alpha, bucket):
    if n < 2:
        return 0.0
    buckets = max(1, -(-nbytes // bucket)) if bucket else 1
    per_bucket = nbytes / buckets
    return buckets * (2 * (n - 1) / n * per_bucket / bandwidth + 2 * (n - 1) * alpha)


def step_s(compute, nbytes, n, bandwidth, alpha, bucket, overlap):
    total = ring_allreduce_s(nbytes, n, bandwidth, alpha, bucket)
    if not overlap:
        return compute + total, total
    last = ring_allreduce_s(min(bucket or nbytes, nbytes), n, bandwidth, alpha, bucket or nbytes)
    exposed = max(last, total - compute * 2 / 3)
    return compute + exposed, exposed


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--measured", help="JSON line from dist_resnet_step.py --json (overlap on)")
    p.add_argument("--compute-s", type=float, default=4.0,
                   help="forward+backward seconds per worker step (ResNet-18, batch 8, 224px)")
    p.add_argument("--grad-mb", type=float, default=46.8, help="gradient megabytes per step")
    p.add_argument("--local-gbs", type=float, default=1.03,
                   help="measured 2-process allreduce bandwidth here, GB/s (dist_allreduce.py)")
    p.add_argument("--measured-comm-s", type=float, default=0.090,
                   help="measured 2-process allreduce seconds per step, overlap off")
    p.add_argument("--measured-exposed-s", type=float, default=0.036,
                   help="measured 2-process exposed seconds per step, overlap on")
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--latency-us", type=float, default=20.0, help="per-message latency alpha")
    args = p.parse_args()
    if args.measured:
        with open(args.measured) as f:
            m = json.loads(f.readline())
        args.compute_s, args.grad_mb = m["fwd_bwd_s"], m["grad_mb"]
        args.measured_exposed_s, args.bucket_mb = m["exposed_s"], m["bucket_mb"]
    nbytes = args.grad_mb * 1e6
    bucket = int(args.bucket_mb * 2**20)
    alpha = args.latency_us * 1e-6

    local = args.local_gbs * 1e9
    predicted_comm = ring_allreduce_s(nbytes, 2, local, alpha, bucket)
    _, predicted_exposed = step_s(args.compute_s, nbytes, 2, local, alpha, bucket, True)
    print("Check against the 2-process measurement on this machine (shared memory, "
          f"{args.local_gbs:.2f} GB/s):")
    print(f"  allreduce per step: model {predicted_comm * 1e3:.0f} ms, "
          f"measured {args.measured_comm_s * 1e3:.0f} ms")
    print(f"  exposed with overlap: model {predicted_exposed * 1e3:.0f} ms, "
          f"measured {args.measured_exposed_s * 1e3:.0f} ms")
    print()
    print(f"Projected scaling efficiency, {args.grad_mb:.1f} MB of gradients, compute "
          f"{args.compute_s:.2f} s/step, buckets of {args.bucket_mb:g} MB, "
          f"alpha {args.latency_us:g} us")
    nets = (10, 25, 100)
    print("     N | " + " | ".join(f"{g:>3d} Gbit/s overlap  (off)" for g in nets))
    for n in (2, 4, 8, 16, 32, 64):
        cells = []
        for gbit in nets:
            bw = gbit * 1e9 / 8
            on, _ = step_s(args.compute_s, nbytes, n, bw, alpha, bucket, True)
            off, _ = step_s(args.compute_s, nbytes, n, bw, alpha, bucket, False)
            cells.append(f"{args.compute_s / on:>18.1%} ({args.compute_s / off:5.1%})")
        print(f"  {n:4d} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
