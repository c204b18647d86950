"""Worker 1 raises while worker 0 waits in an allreduce: the whole job must end, not hang."""

import sys

import ferrograd as mx
from ferrograd import distributed as dist

dist.init()
if dist.rank() == 1:
    raise RuntimeError("worker one failed on purpose")
x = mx.nd.ones((4,))
dist.allreduce(x)
print("worker 0 finished an allreduce that should never complete", flush=True)
sys.exit(0)
