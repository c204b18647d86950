"""2-process dist_sync training of a small network equals 1-process training on the
concatenated batches (each worker starts from different initial values: init must broadcast)."""

import os
import sys

import ferrograd as mx
import numpy as np
from ferrograd import autograd, gluon, nd
from ferrograd import distributed as dist

kind, optimizer = sys.argv[1], sys.argv[2]
rank, size = dist.rank(), dist.size()
STEPS, PER_WORKER = 4, 6
OPT = {"sgd": {"learning_rate": 0.2, "momentum": 0.9}, "adam": {"learning_rate": 0.05}}


def make_net(seed):
    mx.random.seed(seed)
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(16, activation="tanh"), gluon.nn.Dense(4))
    net.initialize(mx.init.Xavier())
    net(nd.zeros((1, 5)))
    return net


rs = np.random.RandomState(7)
X = rs.randn(STEPS, size * PER_WORKER, 5).astype("float32")
Y = rs.randint(0, 4, (STEPS, size * PER_WORKER)).astype("float32")
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()


def train(net, kvstore, part):
    trainer = gluon.Trainer(net.collect_params(), optimizer, OPT[optimizer], kvstore=kvstore)
    for s in range(STEPS):
        x, y = nd.array(X[s][part]), nd.array(Y[s][part])
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(size * PER_WORKER)  # the global batch: gradients are summed over workers
    return trainer, [p.data().asnumpy() for p in net.collect_params().values()]


mine = slice(rank * PER_WORKER, (rank + 1) * PER_WORKER)
trainer, got = train(make_net(seed=100 + rank), kind, mine)
assert trainer._kvstore.type == kind and trainer._kvstore.num_workers == size
assert trainer._kvstore.rank == rank
if os.environ.get("FERROGRAD_DIST_OVERLAP", "1") != "0":
    # every step, each of the 4 parameters was submitted from inside backward
    assert trainer._kvstore.gradients_during_backward == 4 * STEPS
    assert trainer._kvstore.bucket_stats["buckets"] > 0
    assert trainer._kvstore.gradients_resent == 0
else:
    assert trainer._kvstore.gradients_during_backward == 0

# every worker ends with the same parameters ...
for p in got:
    q = nd.array(p, dtype=p.dtype)
    dist.broadcast(q, root=0)
    np.testing.assert_array_equal(q.asnumpy(), p)
# ... equal to one process training on the concatenated batch from rank 0's initial values
_, want = train(make_net(seed=100), None, slice(None))
for g, w in zip(got, want, strict=True):
    rel = np.abs(g - w).max() / max(np.abs(w).max(), 1e-30)
    assert rel <= 1e-6, (kind, optimizer, rel)
print(f"OK {rank}", flush=True)
