"""``mx.kv`` / ``mx.kvstore``: the single-process key-value stores ``'local'`` and ``'device'``
(MXNet 1.9.1's API).

A store keeps one array per key. ``push`` sums the pushed values (one per device) and either
stores the sum or, with an optimizer or updater set, calls ``updater(key, sum, stored)``;
``pull`` copies the stored array out. All arrays live in host memory, so ``'local'``,
``'device'`` and their ``local_*`` variants behave alike. The distributed kinds ``dist_sync``,
``dist_device_sync`` and ``horovod`` (MPI allreduce) live in ``kvstore_dist``.
"""

from . import optimizer as opt
from .base import MXNetError

__all__ = ["KVStoreBase", "KVStore", "TestStore", "create"]

_LOCAL_TYPES = (
    "local",
    "device",
    "local_allreduce_cpu",
    "local_allreduce_device",
    "local_update_cpu",
    "nccl",
)


class KVStoreBase:
    """The store interface (``broadcast``, ``pushpull``, capabilities) and the registry of
    store kinds by name."""

    OPTIMIZER = "optimizer"
    kv_registry = {}

    def broadcast(self, key, value, out, priority=0):
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority=0):
        raise NotImplementedError()

    def is_capable(self, capability):
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        raise NotImplementedError()

    @property
    def type(self):
        raise NotImplementedError()

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
        return 1

    @staticmethod
    def register(klass):
        """Registers a store class under its lower-cased name (a decorator)."""
        KVStoreBase.kv_registry[klass.__name__.lower()] = klass
        return klass


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _group(op, key, value):
    """``(keys, values)`` with one value list per key; ``value`` may be an array, a list of
    arrays (one per device, or one per key), or a list of lists."""
    if isinstance(key, (list, tuple)):
        keys = list(key)
        vals = _as_list(value)
        if len(vals) != len(keys):
            raise MXNetError(f"kvstore.{op}: {len(keys)} keys but {len(vals)} values")
        return keys, [_as_list(v) for v in vals]
    return [key], [_as_list(value)]


def _reduce(values):
    total = values[0].copy()
    for v in values[1:]:
        total += v
    return total


@KVStoreBase.register
class TestStore(KVStoreBase):
    """A store without server-side optimizer (MXNet's ``'teststore'``): ``pushpull`` sums the
    values and writes the sum to every output."""

    def broadcast(self, key, value, out, priority=0):
        _, vals = _group("broadcast", key, value)
        for vs, outs in zip(vals, [_as_list(o) for o in _outs(key, out)], strict=False):
            for o in outs:
                o[:] = vs[0]

    def pushpull(self, key, value, out=None, priority=0):
        _, vals = _group("pushpull", key, value)
        outs = vals if out is None else [_as_list(o) for o in _outs(key, out)]
        for vs, os_ in zip(vals, outs, strict=False):
            total = _reduce(vs)
            for o in os_:
                o[:] = total

    def is_capable(self, capability):
        return capability.lower() != KVStoreBase.OPTIMIZER

    @property
    def type(self):
        return "teststore"


def _outs(key, out):
    return list(out) if isinstance(key, (list, tuple)) else [out]


class KVStore(KVStoreBase):
    """A single-process store (``mx.kv.create('local')`` or ``'device'``)."""

    def __init__(self, kind="local"):
        self._type = kind
        self._store = {}
        self._key_kind = None
        self._updater = None
        self._updater_func = None
        self._optimizer = None

    # -- keys -----------------------------------------------------------------------------------
    def _check_key(self, op, key):
        kind = str if isinstance(key, str) else int if isinstance(key, int) else None
        if kind is None:
            raise MXNetError(f"kvstore.{op}: keys must be int or str, got {type(key).__name__}")
        if self._key_kind is None:
            self._key_kind = kind
        elif kind is not self._key_kind:
            raise MXNetError(
                f"kvstore.{op}: key {key!r} is a {kind.__name__} but this store uses "
                f"{self._key_kind.__name__} keys; a store cannot mix int and str keys"
            )

    def _stored(self, op, key):
        self._check_key(op, key)
        if key not in self._store:
            raise MXNetError(
                f"kvstore.{op}: key {key!r} has not been initialized (call init first)"
            )
        return self._store[key]

    # -- data -----------------------------------------------------------------------------------
    def init(self, key, value):
        """Stores a copy of ``value`` under ``key`` (lists of keys take lists of values)."""
        keys, vals = _group("init", key, value)
        for k, vs in zip(keys, vals, strict=False):
            self._check_key("init", k)
            if k in self._store:
                raise MXNetError(f"kvstore.init: duplicate init of key {k!r}")
            self._store[k] = vs[0].copy()

    def push(self, key, value, priority=0):
        """Sums the values pushed for each key (one per device) into the stored array, through
        the updater or optimizer if one is set, else replacing it."""
        keys, vals = _group("push", key, value)
        for k, vs in zip(keys, vals, strict=False):
            stored = self._stored("push", k)
            total = _reduce(vs)
            if self._updater_func is not None:
                self._updater_func(k, total, stored)
            else:
                stored[:] = total

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copies each key's stored array into ``out`` (an array or a list, one per device);
        sparse outputs are skipped unless ``ignore_sparse`` is False."""
        if out is None:
            raise MXNetError("kvstore.pull: out must be given")
        keys = list(key) if isinstance(key, (list, tuple)) else [key]
        for k, o in zip(keys, _outs(key, out), strict=False):
            stored = self._stored("pull", k)
            for target in _as_list(o):
                if ignore_sparse and target.stype != "default":
                    continue  # as MXNet: sparse outputs take row_sparse_pull
                target[:] = stored

    def pushpull(self, key, value, out=None, priority=0):
        """``push`` then ``pull`` into ``out`` (into ``value`` when ``out`` is None)."""
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority, ignore_sparse=False)

    def broadcast(self, key, value, out, priority=0):
        """``init(key, value)`` then ``pull(key, out)``."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Writes into each row_sparse ``out`` the rows ``row_ids`` (one NDArray of row numbers
        per output; repeats allowed) of the stored array; other rows of ``out`` become zero."""
        from .ndarray.sparse import retain
        if out is None or row_ids is None:
            raise MXNetError("kvstore.row_sparse_pull: out and row_ids must be given")
        keys = list(key) if isinstance(key, (list, tuple)) else [key]
        outs = _outs(key, out)
        ids = [_as_list(r) for r in (row_ids if isinstance(key, (list, tuple)) else [row_ids])]
        if len(ids) != len(keys):
            raise MXNetError(f"kvstore.row_sparse_pull: {len(keys)} keys but row_ids for "
                             f"{len(ids)}")
        for k, o, rids in zip(keys, outs, ids, strict=False):
            stored = self._stored("row_sparse_pull", k)
            targets = _as_list(o)
            if len(rids) == 1:
                rids = rids * len(targets)
            if len(rids) != len(targets):
                raise MXNetError(f"kvstore.row_sparse_pull: {len(targets)} outputs for key "
                                 f"{k!r} but {len(rids)} row_ids")
            rsp = stored if stored.stype == "row_sparse" else stored.tostype("row_sparse")
            for target, r in zip(targets, rids, strict=True):
                if target.stype != "row_sparse":
                    raise MXNetError(f"kvstore.row_sparse_pull: out must be row_sparse arrays, "
                                     f"got stype {target.stype!r} for key {k!r}")
                target[:] = retain(rsp, r)

    # -- optimizer -------------------------------------------------------------------------------
    def set_optimizer(self, optimizer):
        """Updates stored values with ``optimizer`` on every push."""
        self._optimizer = optimizer
        self._updater = opt.get_updater(optimizer)
        self._updater_func = self._updater

    def _set_updater(self, updater):
        """Calls ``updater(key, pushed_sum, stored)`` on every push."""
        self._updater = updater
        self._updater_func = updater

    def set_gradient_compression(self, compression_params):
        """Gradient compression only matters across machines: refused in a local store."""
        raise MXNetError(
            "kvstore.set_gradient_compression: gradient compression needs a "
            "distributed kvstore, and ferrograd's (dist_sync) does not compress"
        )

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Writes the updater's states (and the optimizer with ``dump_optimizer``) to ``fname``."""
        if not isinstance(self._updater, opt.Updater):
            raise AssertionError(
                "Cannot save states for distributed training"
                if self._updater is None
                else "save_optimizer_states needs an optimizer set by set_optimizer"
            )
        with open(fname, "wb") as f:
            f.write(self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        """Reads states written by :meth:`save_optimizer_states`."""
        if not isinstance(self._updater, opt.Updater):
            raise AssertionError("load_optimizer_states needs an optimizer set by set_optimizer")
        with open(fname, "rb") as f:
            self._updater.set_states(f.read())

    def is_capable(self, capability):
        return capability.lower() == KVStoreBase.OPTIMIZER

    def _barrier(self):
        """Nothing to wait for in one process."""

    def _send_command_to_servers(self, head, body):
        """No servers in one process."""

    @property
    def type(self):
        return self._type


def create(name="local"):
    """A key-value store: ``'local'``, ``'device'`` (and MXNet's ``local_*`` spellings),
    ``'dist_sync'`` (also ``'dist_device_sync'``, ``'horovod'``: MPI allreduce across the
    processes of the job), or a registered :class:`KVStoreBase` kind such as ``'teststore'``."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    if name in _LOCAL_TYPES:
        return KVStore(name)
    if name.lower() in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[name.lower()]()
    if name.startswith("dist") or name == "horovod":
        from . import kvstore_dist

        if name in kvstore_dist.DIST_TYPES:
            return kvstore_dist.DistKVStore(name)
        if name in kvstore_dist.ASYNC_TYPES:
            raise kvstore_dist.async_error(name)
    if name == "byteps":
        raise MXNetError("kvstore.create: 'byteps' is not offered by ferrograd; use 'dist_sync' "
                         "(MPI allreduce)")
    known = ", ".join(list(_LOCAL_TYPES) + sorted(KVStoreBase.kv_registry))
    raise MXNetError(f"kvstore.create: unknown kvstore type {name!r}; known: {known}")
