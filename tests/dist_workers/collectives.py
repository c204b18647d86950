"""allreduce / broadcast / allgather / barrier on every dtype, across the job's processes."""

import ferrograd as mx
import numpy as np
from ferrograd import distributed as dist
from ferrograd.base import ShapeError

DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int32", "int64", "bool"]
rank, size = dist.rank(), dist.size()
assert size >= 2 and 0 <= rank < size
assert 0 <= dist.local_rank() < dist.local_size()


def local_values(dt, r):
    base = np.arange(12).reshape(3, 4)
    if dt == "bool":
        return (base % (r + 2)) == 0
    return (base + 3 * r).astype(dt)


for dt in DTYPES:
    x = mx.nd.array(local_values(dt, rank), dtype=dt)
    snapshot = x.to_numpy()  # an export taken before: must keep its values
    before = snapshot.copy()
    assert dist.allreduce(x) is x
    if dt == "bool":
        want = np.logical_or.reduce([local_values(dt, r) for r in range(size)])
    else:
        want = sum(local_values(dt, r).astype(np.int64) for r in range(size)).astype(dt)
    got = x.asnumpy()
    assert got.dtype == np.dtype(dt), (dt, got.dtype)
    np.testing.assert_array_equal(got, want, err_msg=f"allreduce {dt}")
    np.testing.assert_array_equal(snapshot, before, err_msg=f"snapshot changed ({dt})")

    y = mx.nd.array(local_values(dt, rank), dtype=dt)
    dist.broadcast(y, root=size - 1)
    np.testing.assert_array_equal(y.asnumpy(), local_values(dt, size - 1),
                                  err_msg=f"broadcast {dt}")

    if dt in ("float32", "float64", "float16"):
        m = mx.nd.array(local_values(dt, rank), dtype=dt)
        dist.allreduce(m, op="mean")
        want = np.mean([local_values(dt, r).astype(np.float64) for r in range(size)], axis=0)
        np.testing.assert_allclose(m.asnumpy().astype(np.float64), want, rtol=1e-3)
    else:
        try:
            dist.allreduce(mx.nd.array(local_values(dt, rank), dtype=dt), op="mean")
            raise AssertionError(f"mean of {dt} did not raise")
        except TypeError as e:
            assert "mean" in str(e), e

# several arrays at once, a slice view (shares memory with its base) and a transposed view
a = mx.nd.ones((2, 3)) * (rank + 1)
b = mx.nd.arange(6).reshape((2, 3)) * (rank + 1)
row = b[1]
dist.allreduce([a, row])
tri = size * (size + 1) / 2
np.testing.assert_allclose(a.asnumpy(), np.full((2, 3), tri))
np.testing.assert_allclose(b.asnumpy()[1], np.arange(3, 6) * tri)  # written through the view
np.testing.assert_allclose(b.asnumpy()[0], np.arange(3) * (rank + 1))  # untouched
t = (mx.nd.arange(6).reshape((2, 3)) * (rank + 1)).T
dist.allreduce(t)
np.testing.assert_allclose(t.asnumpy(), np.arange(6).reshape(2, 3).T * tri)

# mismatched shapes raise on every process, and the job can go on afterwards
try:
    dist.allreduce(mx.nd.ones((2 + rank,)))
    raise AssertionError("shape mismatch did not raise")
except ShapeError as e:
    assert "(2,)" in str(e) and "(3,)" in str(e), e

# allgather with a different first dimension per process
g = dist.allgather(mx.nd.ones((rank + 1, 2)) * rank)
want = np.concatenate([np.full((r + 1, 2), r, dtype=np.float32) for r in range(size)])
np.testing.assert_array_equal(g.asnumpy(), want)

# the bucketed reducer gives the same sums for any bucket size
for bucket in (0, 16, 1 << 20):
    red = dist.GradientReducer(bucket_bytes=bucket)
    arrs = [mx.nd.ones((k + 1,)) * (rank + k) for k in range(5)]
    arrs.append(mx.nd.ones((2,), dtype="float64") * rank)
    for i, arr in enumerate(arrs):
        red.submit(i, arr)
    assert sorted(red.wait()) == list(range(6))
    for k in range(5):
        np.testing.assert_allclose(arrs[k].asnumpy(), sum(r + k for r in range(size)))
    np.testing.assert_allclose(arrs[5].asnumpy(), sum(range(size)))
    red.close()

try:
    dist.broadcast(mx.nd.ones((2,)), root=size)
    raise AssertionError("bad root did not raise")
except ValueError as e:
    assert "root" in str(e)

dist.barrier()
print(f"OK {rank}", flush=True)
