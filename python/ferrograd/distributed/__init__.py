"""``ferrograd.distributed``: data-parallel training over MPI (through mpi4py).

Start the processes with MPI's launcher (``mpirun -n 4 python train.py``) or with
``python -m ferrograd.distributed.launch -n 4 train.py``; each process then calls the functions
here, or simply uses ``mx.kv.create('dist_sync')`` / ``gluon.Trainer(..., kvstore='dist_sync')``.
See ``docs/distributed.md``.
"""

from ._bucket import GradientReducer
from ._comm import (
    abort,
    allgather,
    allreduce,
    available,
    barrier,
    broadcast,
    init,
    local_rank,
    local_size,
    rank,
    size,
)

__all__ = ["init", "rank", "size", "local_rank", "local_size", "barrier", "allreduce",
           "broadcast", "allgather", "abort", "available", "GradientReducer"]
