"""Batch descriptions, the iterator protocol and the iterators that wrap other iterators."""

import threading
from collections import namedtuple

from ..base import mx_real_t


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """A named input's shape, with its dtype and layout (``'NCHW'`` by default; the position of
    ``'N'`` is the batch axis)."""

    def __new__(cls, name, shape, dtype=mx_real_t, layout="NCHW"):
        desc = super().__new__(cls, name, shape)
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __repr__(self):
        return f"DataDesc[{self.name},{self.shape},{self.dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout):
        """The batch axis of ``layout`` (0 when the layout is unknown, -1 when it has no N)."""
        if layout is None:
            return 0
        return layout.find("N")

    @staticmethod
    def get_list(shapes, types):
        """``DataDesc``s from ``[(name, shape)]`` and, optionally, ``[(name, dtype)]``."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        dtypes = dict(types)
        return [DataDesc(name, shape, dtypes[name]) for name, shape in shapes]


class DataBatch:
    """One batch: lists of data and label arrays, the number of padding samples at its end, the
    sample indices, the bucket key and the batch's own descriptions (for bucketing)."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError(f"DataBatch: data must be a list of NDArrays, got "
                            f"{type(data).__name__}")
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError(f"DataBatch: label must be a list of NDArrays, got "
                            f"{type(label).__name__}")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lab.shape for lab in self.label] if self.label else None
        return f"{type(self).__name__}: data shapes: {data_shapes} label shapes: {label_shapes}"


class DataIter:
    """The iterator protocol: ``iter_next`` advances, ``getdata``/``getlabel``/``getpad``/
    ``getindex`` read the current batch; ``next`` packs them into a :class:`DataBatch`."""

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Rewinds to the first batch."""

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                         index=self.getindex())

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Moves to the next batch; False at the end of the epoch."""

    def getdata(self):
        """The current batch's data arrays."""

    def getlabel(self):
        """The current batch's label arrays."""

    def getindex(self):
        return None

    def getpad(self):
        """How many samples at the end of the current batch are padding."""


class ResizeIter(DataIter):
    """Makes ``data_iter`` yield exactly ``size`` batches per epoch, restarting it when it runs
    out early; ``reset_internal=False`` continues where the last epoch stopped."""

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__()
        self.data_iter = data_iter
        self.size = size
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, "default_bucket_key"):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


def _renamed(descs, renames):
    """``descs`` with names mapped through ``renames`` (a dict), keeping shape, dtype, layout."""
    if renames is None:
        return list(descs)
    out = []
    for d in descs:
        if isinstance(d, DataDesc):
            out.append(DataDesc(renames.get(d.name, d.name), d.shape, d.dtype, d.layout))
        else:
            out.append(DataDesc(renames.get(d[0], d[0]), d[1]))
    return out


class PrefetchingIter(DataIter):
    """Reads the next batch of each iterator in ``iters`` on a background thread while the
    current one is used. Several iterators are merged: their data (and labels) are concatenated
    into one batch. ``rename_data``/``rename_label`` (one dict per iterator) rename inputs."""

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise ValueError("PrefetchingIter: iters must hold at least one iterator")
        for name, renames in (("rename_data", rename_data), ("rename_label", rename_label)):
            if renames is not None and len(renames) != len(iters):
                raise ValueError(f"PrefetchingIter: {name} has {len(renames)} entries for "
                                 f"{len(iters)} iterators")
        self.iters = iters
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = getattr(iters[0], "batch_size", 0)
        self.current_batch = None
        self._next = [None] * len(iters)
        self._errors = [None] * len(iters)
        self._wanted = [threading.Event() for _ in iters]
        self._ready = [threading.Event() for _ in iters]
        self._alive = True
        self._threads = [threading.Thread(target=self._prefetch, args=(i,), daemon=True)
                         for i in range(len(iters))]
        for e in self._wanted:
            e.set()
        for t in self._threads:
            t.start()

    def _prefetch(self, i):
        while True:
            self._wanted[i].wait()
            if not self._alive:
                break
            try:
                self._next[i] = self.iters[i].next()
            except StopIteration:
                self._next[i] = None
            except Exception as e:  # handed to the consumer, which raises it
                self._next[i], self._errors[i] = None, e
            self._wanted[i].clear()
            self._ready[i].set()

    def __del__(self):
        self.close()

    def close(self):
        """Stops the background threads."""
        if not getattr(self, "_alive", False):
            return
        self._alive = False
        for e in self._wanted:
            e.set()
        for t in self._threads:
            t.join(timeout=5)

    @property
    def provide_data(self):
        per_iter = self.rename_data or [None] * len(self.iters)
        return sum((_renamed(it.provide_data, r) for it, r in zip(self.iters, per_iter,
                                                                   strict=True)), [])

    @property
    def provide_label(self):
        per_iter = self.rename_label or [None] * len(self.iters)
        return sum((_renamed(it.provide_label, r) for it, r in zip(self.iters, per_iter,
                                                                    strict=True)), [])

    def _wait_all(self):
        for e in self._ready:
            e.wait()

    def reset(self):
        self._wait_all()
        for it in self.iters:
            it.reset()
        for ready, wanted in zip(self._ready, self._wanted, strict=True):
            ready.clear()
            wanted.set()

    def iter_next(self):
        self._wait_all()
        for err in self._errors:
            if err is not None:
                self._errors = [None] * len(self.iters)
                raise err
        if any(b is None for b in self._next):
            if not all(b is None for b in self._next):
                raise RuntimeError("PrefetchingIter: the iterators have different numbers of "
                                   "batches")
            return False
        first = self._next[0]
        for b in self._next[1:]:
            if b.pad != first.pad:
                raise RuntimeError(f"PrefetchingIter: the iterators' batches have different "
                                   f"padding ({first.pad} and {b.pad})")
        self.current_batch = DataBatch(
            sum((list(b.data) for b in self._next), []),
            sum((list(b.label or []) for b in self._next), []),
            first.pad, first.index, provide_data=self.provide_data,
            provide_label=self.provide_label)
        for ready, wanted in zip(self._ready, self._wanted, strict=True):
            ready.clear()
            wanted.set()
        return True

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return self.current_batch

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad
