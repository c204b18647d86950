"""Communication exposed in a data-parallel ResNet-18 training step (batch 8 per worker):

    FERROGRAD_DIST_OVERLAP=1 mpiexec -n 2 python benches/python/dist_resnet_step.py
    FERROGRAD_DIST_OVERLAP=0 mpiexec -n 2 python benches/python/dist_resnet_step.py

Per step (medians over the measured steps, rank 0): forward+backward time, the time ``step``
takes, the time the communication thread spent in MPI allreduce (``comm``) and the part of it
the training loop waited for (``exposed``: the rest ran during backward). ``--json`` prints one
JSON line for dist_scaling.py.
"""

import argparse
import json
import time

import ferrograd as mx
import numpy as np
from ferrograd import autograd, gluon, nd
from ferrograd import distributed as dist
from ferrograd.gluon.model_zoo import vision


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    rank = dist.rank()
    mx.random.seed(rank)
    net = vision.resnet18_v1(classes=1000)
    net.initialize(mx.init.Xavier())
    x = nd.array(np.random.RandomState(rank).rand(args.batch, 3, args.size, args.size))
    y = nd.array(np.random.RandomState(rank).randint(0, 1000, args.batch))
    net(x[:1])
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01,
                                                          "momentum": 0.9}, kvstore="dist_sync")
    kv = trainer._kvstore
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rows = []
    for i in range(args.steps + 1):
        kv.bucket_stats.update(comm=0.0, exposed=0.0, buckets=0)
        kv.barrier()
        t0 = time.perf_counter()
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        t1 = time.perf_counter()
        trainer.step(args.batch * dist.size())
        t2 = time.perf_counter()
        stats = dict(kv.bucket_stats)
        if i:  # the first step warms up
            rows.append((t1 - t0, t2 - t1, t2 - t0, stats["comm"], stats["exposed"],
                         stats["buckets"]))
    med = np.median(np.array(rows), axis=0)
    nbytes = sum(p.data().size * 4 for p in net.collect_params().values()
                 if p.grad_req != "null")
    result = {"workers": dist.size(), "overlap": kv.overlap_backward,
              "bucket_mb": kv._reducer.bucket_bytes / 2**20, "grad_mb": nbytes / 1e6,
              "fwd_bwd_s": med[0], "step_s": med[1], "total_s": med[2], "comm_s": med[3],
              "exposed_s": med[4], "buckets": int(med[5])}
    if rank == 0:
        if args.json:
            print(json.dumps(result))
        else:
            print(f"ResNet-18, batch {args.batch}/worker at {args.size}px, {dist.size()} workers,"
                  f" overlap={'on' if kv.overlap_backward else 'off'}, "
                  f"bucket {result['bucket_mb']:.0f} MB, gradients {result['grad_mb']:.1f} MB")
            for k in ("fwd_bwd_s", "step_s", "total_s", "comm_s", "exposed_s"):
                print(f"  {k:10s} {result[k] * 1e3:9.1f} ms")
            print(f"  exposed / allreduce time: {result['exposed_s'] / result['comm_s']:.0%}")


if __name__ == "__main__":
    main()
