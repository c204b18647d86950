"""Gradients reduced during backward (overlap, on by default) stay right when a worker writes a
gradient between backward and ``trainer.step``: every worker reduces the written gradients again,
even workers that did not write them, and the gradient arrays keep the local values."""

import os

import ferrograd as mx
import numpy as np
from ferrograd import autograd, gluon, nd
from ferrograd import distributed as dist

rank, size = dist.rank(), dist.size()


def make():
    net = gluon.nn.Dense(3, in_units=4, use_bias=False)
    net.initialize(mx.init.Constant(0.1))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1.0},
                            kvstore="dist_sync")
    return net, trainer


def local_grad(net, x, passes=1):
    for _ in range(passes):
        with autograd.record():
            loss = net(x).sum()
        loss.backward()
    return net.weight.grad().asnumpy().copy()


def all_of(a):
    """Every worker's ``a``, in rank order."""
    return list(dist.allgather(nd.array(a[None])).asnumpy())


x = nd.array(np.arange(8, dtype=np.float32).reshape(2, 4) * (rank + 1))

# 1. Nobody writes: no gradient is reduced twice, the arrays keep the local gradient.
net, trainer = make()
w0 = net.weight.data().asnumpy().copy()
g = local_grad(net, x)
trainer.step(1)
kv = trainer._kvstore
assert kv.overlap_backward and kv.gradients_during_backward == 1, kv.gradients_during_backward
assert kv.gradients_resent == 0
np.testing.assert_allclose(net.weight.grad().asnumpy(), g)  # not the sum
np.testing.assert_allclose(net.weight.data().asnumpy(), w0 - sum(all_of(g)), rtol=1e-6)

# 2. Worker 0 halves its gradient in place after backward (a clip); worker 1 does not touch its
#    own. Both must reduce again and agree on 0.5 * g0 + g1.
w1 = net.weight.data().asnumpy().copy()
g = local_grad(net, x)
if rank == 0:
    grad = net.weight.grad()
    grad *= 0.5
    g = g * 0.5
trainer.step(1)
# With buckets of 0 bytes each gradient was copied and sent inside backward, before the write:
# it goes again. A gradient still waiting in a partly filled bucket is copied when the bucket
# is sent at the step, after the write: nothing to redo.
sent_inside_backward = os.environ.get("FERROGRAD_DIST_BUCKET_MB") == "0"
assert kv.gradients_resent == (1 if sent_inside_backward else 0), kv.gradients_resent
np.testing.assert_allclose(net.weight.data().asnumpy(), w1 - sum(all_of(g)), rtol=1e-6)

# 3. Two backward passes before one step (grad_req='write': the second replaces the first).
w2 = net.weight.data().asnumpy().copy()
resent = kv.gradients_resent
g = local_grad(net, x * 2, passes=2)
trainer.step(1)
assert kv.gradients_resent == resent + (1 if sent_inside_backward else 0)
np.testing.assert_allclose(net.weight.data().asnumpy(), w2 - sum(all_of(g)), rtol=1e-6)

# every worker ends with the same parameters
mine = net.weight.data().asnumpy()
for other in all_of(mine):
    np.testing.assert_array_equal(other, mine)
print(f"OK {rank}", flush=True)
