"""Module.fit(kvstore='dist_sync') on 2 processes equals 1-process fit on the concatenated
batches (Module divides by the global batch size, as MXNet's)."""

import ferrograd as mx
import numpy as np
from ferrograd import distributed as dist

rank, size = dist.rank(), dist.size()
PER_WORKER, STEPS = 4, 3


def symbol():
    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    net = mx.sym.Activation(net, act_type="tanh")
    net = mx.sym.FullyConnected(net, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


rs = np.random.RandomState(3)
X = rs.randn(STEPS, size, PER_WORKER, 5).astype("float32")  # [step, worker, sample]
Y = rs.randint(0, 3, (STEPS, size, PER_WORKER)).astype("float32")


def fit(kvstore, x, y, batch, init):
    mod = mx.mod.Module(symbol())
    it = mx.io.NDArrayIter(x, y, batch_size=batch)
    mx.random.seed(0)
    mod.fit(it, num_epoch=2, kvstore=kvstore, optimizer="sgd", initializer=init,
            optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    if kvstore is not None:
        # overlap is on by default: the executor handed each of the 4 parameter gradients to
        # the store from inside backward, every step of both epochs
        assert mod._kvstore.gradients_during_backward == 4 * STEPS * 2, \
            mod._kvstore.gradients_during_backward
        assert mod._kvstore.gradients_resent == 0
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


# workers start from different values: the store takes rank 0's (Xavier under seed 0)
init = mx.init.Xavier() if rank == 0 else mx.init.Uniform(2.0)
got = fit("dist_sync", X[:, rank].reshape(-1, 5), Y[:, rank].reshape(-1), PER_WORKER, init)
want = fit(None, X.reshape(-1, 5), Y.reshape(-1), PER_WORKER * size, mx.init.Xavier())
for name, w in want.items():
    rel = np.abs(got[name] - w).max() / np.abs(w).max()
    assert rel <= 1e-6, (name, rel)
print(f"OK {rank}", flush=True)
