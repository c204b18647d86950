"""The MPI communicator behind ``ferrograd.distributed``: process identity and collectives on
NDArrays.

Collectives work on the NDArray's own memory. A contiguous NDArray is handed to MPI through its
writable DLPack export (``nd.to_dlpack_for_write``: the capsule shares the array's buffer), after
making the buffer unique so that no read-only snapshot (an exported NumPy view, a tensor saved
for backward) sees the write. Non-contiguous arrays go through a contiguous copy. mpi4py releases
the GIL inside every blocking MPI call.
"""

import os
import sys
import threading
import traceback

import numpy as np

from ..base import ShapeError

_state = {"comm": None, "local": None}
_lock = threading.Lock()

_INSTALL_HINT = (
    "ferrograd.distributed needs mpi4py and an MPI runtime: pip install 'ferrograd[distributed]' "
    "(mpi4py and the mpich wheel)"
)


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError(f"{_INSTALL_HINT} ({e})") from e
    return MPI


def available():
    """Whether mpi4py (and so an MPI runtime) can be imported."""
    try:
        _mpi()
    except ImportError:
        return False
    return True


def _abort_on_uncaught(exc_type, exc, tb):
    """An exception nobody caught in one worker ends every worker of the job (MPI_Abort), so
    the others never wait forever in a collective for a process that is gone."""
    comm = _state["comm"]
    rank = comm.Get_rank()
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    sys.stderr.write(
        f"ferrograd.distributed: worker {rank} of {comm.Get_size()} raised an uncaught "
        f"exception; aborting all workers.\n{text}"
    )
    sys.stderr.flush()
    comm.Abort(1)


def init():
    """Initialises MPI (once; later calls do nothing) and returns the world communicator.

    In a job of several processes, an uncaught exception in any of them then aborts the whole
    job with that exception printed (set ``FERROGRAD_DIST_NO_ABORT=1`` to keep Python's own
    hook). Called implicitly by every other function here."""
    if _state["comm"] is not None:
        return _state["comm"]
    with _lock:
        if _state["comm"] is None:
            MPI = _mpi()
            comm = MPI.COMM_WORLD
            _state["local"] = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
            _state["comm"] = comm
            if comm.Get_size() > 1 and os.environ.get("FERROGRAD_DIST_NO_ABORT") != "1":
                sys.excepthook = _abort_on_uncaught
                threading.excepthook = lambda a: _abort_on_uncaught(
                    a.exc_type, a.exc_value, a.exc_traceback)
    return _state["comm"]


def rank():
    """This process's index in the job, ``0 <= rank() < size()``."""
    return init().Get_rank()


def size():
    """The number of processes in the job."""
    return init().Get_size()


def local_rank():
    """This process's index among the processes of its machine."""
    init()
    return _state["local"].Get_rank()


def local_size():
    """The number of processes of the job on this machine."""
    init()
    return _state["local"].Get_size()


def barrier():
    """Waits until every process has reached this call."""
    init().Barrier()


# -- buffers ------------------------------------------------------------------------------------

class _WritableExport:
    """Presents an NDArray to mpi4py through the legacy DLPack protocol (no read-only flag), which
    ferrograd exports as a capsule sharing the array's buffer."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


def writable_view(x):
    """A writable NumPy array sharing ``x``'s memory, or None when ``x`` is not C-contiguous.

    Writes through it are seen by ``x``. The buffer is made unique first (an empty slice write
    copies it only if a snapshot shares it), so snapshots keep their values."""
    dt = np.dtype(x.dtype)
    if x.size == 0:
        return np.empty(x.shape, dtype=dt)
    if not x.to_numpy().flags["C_CONTIGUOUS"]:  # (the temporary view is dropped at once)
        return None
    if x.ndim > 0:
        x[0:0] = 0
    buf = _mpi().buffer(_WritableExport(x))
    return np.frombuffer(buf, dtype=dt).reshape(x.shape)


def _as_list(arrays, fn):
    from ..ndarray import NDArray

    single = isinstance(arrays, NDArray)
    items = [arrays] if single else list(arrays)
    for i, a in enumerate(items):
        if not isinstance(a, NDArray):
            raise TypeError(f"distributed.{fn}: arrays[{i}] is a {type(a).__name__}, "
                            "expected an NDArray")
    return items


class _InPlace:
    """A NumPy array on ``x``'s memory for MPI to write, with ``done()`` writing it back when
    ``x`` could not be shared (non-contiguous)."""

    def __init__(self, x):
        self.x = x
        view = writable_view(x)
        self.shared = view is not None
        self.np = view if self.shared else np.ascontiguousarray(x.asnumpy())

    def done(self):
        if not self.shared:
            from ..ndarray import array

            self.x[:] = array(self.np, dtype=self.np.dtype)


_FLOAT16_UNSUPPORTED = {"checked": None}


def _reduce_op(MPI, dt, op, fn):
    if op not in ("sum", "mean"):
        raise ValueError(f"distributed.{fn}: op must be 'sum' or 'mean', got {op!r}")
    if dt == np.bool_:
        if op == "mean":
            raise TypeError(f"distributed.{fn}: op='mean' is not defined for bool arrays")
        return MPI.LOR  # NumPy's bool addition is a logical or
    if op == "mean" and dt.kind != "f":
        raise TypeError(f"distributed.{fn}: op='mean' needs a floating-point array, got {dt}; "
                        "use op='sum' and divide")
    return MPI.SUM


def allreduce_numpy(buf, op="sum", comm=None):
    """In-place allreduce of a contiguous NumPy array (sum, or mean for floating types)."""
    comm = comm or init()
    MPI = _mpi()
    mpi_op = _reduce_op(MPI, buf.dtype, op, "allreduce")
    n = comm.Get_size()
    if buf.size == 0:
        return buf
    if buf.dtype == np.float16:
        # MPI has no portable half type: reduce in float32 (exact for sums of two halves).
        wide = buf.astype(np.float32)
        comm.Allreduce(MPI.IN_PLACE, wide, op=mpi_op)
        if op == "mean":
            wide /= n
        buf[...] = wide
        return buf
    if buf.dtype == np.bool_:
        comm.Allreduce(MPI.IN_PLACE, [buf, MPI.C_BOOL], op=mpi_op)
        return buf
    comm.Allreduce(MPI.IN_PLACE, buf, op=mpi_op)
    if op == "mean" and n > 1:
        buf /= buf.dtype.type(n)
    return buf


def _check_same_layout(comm, arrays, fn):
    """Every process must pass the same shapes and dtypes (else MPI would read past buffers or
    mix types): one small allgather of the signatures, raising on every process alike."""
    mine = [(tuple(a.shape), str(np.dtype(a.dtype))) for a in arrays]
    everyone = comm.allgather(mine)
    for r, theirs in enumerate(everyone):
        if theirs != mine:
            raise ShapeError(
                f"distributed.{fn}: the arrays differ between processes: process {comm.Get_rank()}"
                f" has {_describe(mine)} but process {r} has {_describe(theirs)}"
            )


def _describe(sig):
    return "[" + ", ".join(f"{s} {d}" for s, d in sig) + "]"


def allreduce(arrays, op="sum", check=True):
    """Reduces ``arrays`` (an NDArray or a list) across all processes, in place: afterwards
    every process holds the elementwise ``'sum'`` (or ``'mean'``) of everyone's values.

    Bool arrays reduce with a logical or (NumPy's bool sum); ``'mean'`` needs floating arrays.
    With ``check`` (the default) the shapes and dtypes are first compared across processes and
    a mismatch raises :class:`~ferrograd.base.ShapeError` on every process. Returns ``arrays``."""
    items = _as_list(arrays, "allreduce")
    comm = init()
    _reduce_op(_mpi(), np.dtype("float32"), op, "allreduce")
    if check:
        _check_same_layout(comm, items, "allreduce")
    for x in items:
        slot = _InPlace(x)
        allreduce_numpy(slot.np, op, comm)
        slot.done()
    return arrays


def broadcast(arrays, root=0, check=True):
    """Overwrites ``arrays`` on every process with the values of process ``root``, in place.
    Returns ``arrays``."""
    items = _as_list(arrays, "broadcast")
    comm = init()
    if not isinstance(root, int) or not 0 <= root < comm.Get_size():
        raise ValueError(f"distributed.broadcast: root must be a rank in [0, {comm.Get_size()}),"
                         f" got {root!r}")
    if check:
        _check_same_layout(comm, items, "broadcast")
    MPI = _mpi()
    for x in items:
        slot = _InPlace(x)
        if slot.np.size:
            target = [slot.np, MPI.C_BOOL] if slot.np.dtype == np.bool_ else slot.np
            if slot.np.dtype == np.float16:
                target = [slot.np.view(np.uint16), MPI.UINT16_T]
            comm.Bcast(target, root=root)
        slot.done()
    return arrays


def allgather(array):
    """A new NDArray joining every process's ``array`` along the first axis, in rank order.
    The arrays may differ in their first dimension only."""
    from ..ndarray import NDArray, from_numpy

    if not isinstance(array, NDArray):
        raise TypeError(f"distributed.allgather: array must be an NDArray, got "
                        f"{type(array).__name__}")
    comm = init()
    MPI = _mpi()
    src = np.ascontiguousarray(array.to_numpy())
    if src.ndim == 0:
        src = src.reshape(1)
    sigs = comm.allgather((src.shape[1:], str(src.dtype), src.shape[0]))
    for r, (rest, dt, _) in enumerate(sigs):
        if rest != src.shape[1:] or dt != str(src.dtype):
            raise ShapeError(
                f"distributed.allgather: arrays must agree in dtype and in every axis but the "
                f"first: process {comm.Get_rank()} has shape {tuple(src.shape)} {src.dtype}, "
                f"process {r} has (n,)+{tuple(rest)} {dt}")
    rows = [s[2] for s in sigs]
    out = np.empty((sum(rows),) + src.shape[1:], dtype=src.dtype)
    per_row = int(np.prod(src.shape[1:], dtype=np.int64))
    counts = [r * per_row * src.dtype.itemsize for r in rows]
    displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
    comm.Allgatherv(
        [src.view(np.uint8).reshape(-1), MPI.BYTE],
        [out.view(np.uint8).reshape(-1), (counts, displs), MPI.BYTE],
    )
    return from_numpy(out)


def abort(code=1):
    """Ends every process of the job at once (MPI_Abort)."""
    init().Abort(code)

