"""The dist_sync store's API: init takes rank 0's values and checks shapes; push sums over
devices and workers; set_optimizer updates identically; states save and load per worker."""

import os
import sys

import ferrograd as mx
import numpy as np
from ferrograd import nd
from ferrograd.base import MXNetError, ShapeError

tmp = sys.argv[1]
kv = mx.kv.create("dist_device_sync")
rank, size = kv.rank, kv.num_workers
assert kv.type == "dist_device_sync" and size >= 2
assert mx.kv.create("horovod").num_workers == size

kv.init(3, nd.ones((2, 3)) * (rank + 5))
out = nd.zeros((2, 3))
kv.pull(3, out=out)
np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 5.0))  # rank 0's value

# push without optimizer: the stored value becomes the sum over devices and workers
kv.push(3, [nd.ones((2, 3)) * (rank + 1), nd.ones((2, 3))])
kv.pull(3, out=[out, out])
np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), sum(r + 2 for r in range(size))))

# several keys in one call, pushpull into out
kv.init([10, 11], [nd.zeros((4,)), nd.zeros((1,), dtype="float64")])
a, b = nd.ones((4,)) * rank, nd.ones((1,), dtype="float64") * 2
kv.pushpull([10, 11], [a, b])
np.testing.assert_array_equal(a.asnumpy(), np.full(4, sum(range(size))))
np.testing.assert_array_equal(b.asnumpy(), [2.0 * size])

# mismatched shapes between workers are found at init, on every worker
try:
    kv.init(20, nd.zeros((2 + rank, 2)))
    raise AssertionError("shape mismatch at init did not raise")
except ShapeError as e:
    msg = str(e)
    assert "20" in msg and "(2, 2)" in msg and "(3, 2)" in msg, msg

# optimizer on the store: after the allreduce, every worker makes the same update
kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.5, rescale_grad=1.0))
for _ in range(2):
    kv.push(3, nd.ones((2, 3)) * (rank + 1))
kv.pull(3, out=out)
g = sum(r + 1 for r in range(size))
w0 = sum(r + 2 for r in range(size))
m1 = -0.1 * g
m2 = 0.5 * m1 - 0.1 * g
np.testing.assert_allclose(out.asnumpy(), np.full((2, 3), w0 + m1 + m2), rtol=1e-6)

fname = os.path.join(tmp, f"states-{rank}")
kv.save_optimizer_states(fname)
kv.push(3, nd.ones((2, 3)))
kv.load_optimizer_states(fname)
kv.barrier()
kv._barrier()

for bad in ("dist_async", "dist_device_async"):
    try:
        mx.kv.create(bad)
        raise AssertionError(f"{bad} did not raise")
    except MXNetError as e:
        assert "not offered" in str(e) and "dist_sync" in str(e)
try:
    kv.set_gradient_compression({"type": "2bit"})
    raise AssertionError("compression did not raise")
except MXNetError as e:
    assert "compression" in str(e)
print(f"OK {rank}", flush=True)
