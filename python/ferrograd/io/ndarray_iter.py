"""``NDArrayIter``: batches of in-memory arrays, with MXNet 1.9.1's last-batch rules."""

import numpy as np

from .. import ndarray as nd
from ..ndarray import NDArray
from .base import DataBatch, DataDesc, DataIter

_LAST_BATCH_HANDLES = ("pad", "discard", "roll_over")


def _is_lazy_source(value):
    """An h5py-style dataset: indexable by sorted row lists, read on demand, never copied."""
    return type(value).__module__.startswith("h5py")


def _named_sources(data, allow_empty, default_name, what):
    """``data`` (an array, a list of arrays or a dict) as ``[(name, array)]`` sorted by name.

    A single array is named ``default_name``; the i-th array of a longer list ``_i_<name>``.
    NumPy arrays and nested lists become NDArrays (float32 unless given as NDArrays).
    """
    if data is None:
        if not allow_empty:
            raise ValueError(f"NDArrayIter: {what} must not be None")
        data = []
    if isinstance(data, (np.ndarray, NDArray)) or _is_lazy_source(data):
        data = [data]
    if isinstance(data, (list, tuple)):
        if not data and not allow_empty:
            raise ValueError(f"NDArrayIter: {what} must hold at least one array")
        if len(data) == 1:
            data = {default_name: data[0]}
        else:
            data = {f"_{i}_{default_name}": d for i, d in enumerate(data)}
    if not isinstance(data, dict):
        raise TypeError(f"NDArrayIter: {what} must be an NDArray, a numpy.ndarray, an h5py "
                        f"Dataset, a list of them or a dict with them as values; got "
                        f"{type(data).__name__}")
    named = {}
    for name, value in data.items():
        if type(value).__module__.startswith("scipy.sparse"):
            value = nd.sparse.csr_matrix(value)
        if isinstance(value, NDArray) or _is_lazy_source(value):
            named[name] = value
            continue
        try:
            named[name] = nd.array(value)
        except Exception as e:
            raise TypeError(f"NDArrayIter: invalid type '{type(value).__name__}' for {what} "
                            f"'{name}', should be NDArray, numpy.ndarray or h5py.Dataset") from e
    return sorted(named.items())


class NDArrayIter(DataIter):
    """Iterates over arrays in mini-batches along their first axis.

    ``last_batch_handle`` says what happens to a last batch smaller than ``batch_size``:
    ``'pad'`` fills it from the start of the data (``DataBatch.pad`` counts the filler),
    ``'discard'`` drops it, ``'roll_over'`` drops it this epoch and puts its samples at the start
    of the first batch of the next epoch (after ``reset``). ``shuffle`` permutes the samples at
    construction and at every ``reset``; ``idx`` is the permutation applied last.
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle="pad",
                 data_name="data", label_name="softmax_label", layout="NCHW"):
        super().__init__(batch_size)
        self.layout = layout
        self._axis = DataDesc.get_batch_axis(layout)
        if self._axis < 0:
            raise ValueError(f"NDArrayIter: layout {layout!r} has no batch axis 'N'")
        if last_batch_handle not in _LAST_BATCH_HANDLES:
            raise ValueError(f"NDArrayIter: last_batch_handle must be one of "
                             f"{list(_LAST_BATCH_HANDLES)}, got {last_batch_handle!r}")
        if int(batch_size) < 1:
            raise ValueError(f"NDArrayIter: batch_size must be positive, got {batch_size}")
        self.batch_size = int(batch_size)
        self.data = _named_sources(data, False, data_name, "data")
        self.label = _named_sources(label, True, label_name, "label")
        if last_batch_handle != "discard" and any(
                v.stype == "csr" for _, v in self.data + self.label if isinstance(v, NDArray)):
            raise NotImplementedError("NDArrayIter: csr data needs last_batch_handle='discard' "
                                      f"(got {last_batch_handle!r}), as in MXNet")
        self.num_data = self.data[0][1].shape[self._axis]
        for name, value in self.data + self.label:
            # longer sources are fine (MXNet reads as many samples as the first data array
            # has); shorter ones would give short or wrong batches
            if value.shape[self._axis] < self.num_data:
                raise ValueError(f"NDArrayIter: '{name}' has {value.shape[self._axis]} samples "
                                 f"(shape {tuple(value.shape)}) but '{self.data[0][0]}' has "
                                 f"{self.num_data}")
        if last_batch_handle == "roll_over" and self.batch_size > self.num_data:
            # MXNet slices past the end here on the second epoch
            raise ValueError(f"NDArrayIter: last_batch_handle='roll_over' needs batch_size "
                             f"({self.batch_size}) <= the number of samples ({self.num_data})")
        self.idx = np.arange(self.num_data)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None
        self.reset()
        self.data_list = [v for _, v in self.data] + [v for _, v in self.label]
        self.num_source = len(self.data_list)

    def _describe(self, sources):
        a = self._axis
        return [DataDesc(k, tuple(v.shape[:a]) + (self.batch_size,) + tuple(v.shape[a + 1:]),
                         v.dtype, layout=self.layout) for k, v in sources]

    @property
    def provide_data(self):
        return self._describe(self.data)

    @property
    def provide_label(self):
        return self._describe(self.label)

    def hard_reset(self):
        """Rewinds to the very start, forgetting any rolled-over samples."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self):
        if self.shuffle:
            self._shuffle_data()
        last_start = self.num_data - self.batch_size
        if self.last_batch_handle == "roll_over" and last_start < self.cursor < self.num_data:
            # the next batch starts with the (cursor - num_data) cached samples
            self.cursor = self.cursor - self.num_data - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data, label = self.getdata(), self.getlabel()
        if data[0].shape[self._axis] != self.batch_size:
            # an incomplete last batch ('discard', 'roll_over') ends the epoch; roll_over reuses it
            self._cache_data, self._cache_label = data, label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _rows(self, sources, start=0, end=None):
        if end is None:
            end = self.num_data
        out = []
        for _, value in sources:
            if _is_lazy_source(value):
                rows = self.idx[start:end]
                order = np.argsort(rows)
                picked = np.asarray(value[sorted(rows.tolist())])
                out.append(nd.array(picked[np.argsort(order)]))
            else:
                out.append(value[start:end] if self._axis == 0 else
                           nd.slice_axis(value, axis=self._axis, begin=start, end=end))
        return out

    def _concat(self, first, second):
        if not first or not second:
            return first or second
        return [nd.concat(a, b, dim=self._axis) for a, b in zip(first, second, strict=True)]

    def _batchify(self, sources):
        if self.cursor >= self.num_data:
            raise RuntimeError("NDArrayIter: the epoch is over; call reset()")
        bs, n = self.batch_size, self.num_data
        if self.last_batch_handle == "roll_over" and -bs < self.cursor < 0:
            is_data = sources is self.data
            cached = self._cache_data if is_data else self._cache_label
            if cached is None:
                raise RuntimeError("NDArrayIter: roll_over found no samples cached from the "
                                   "previous epoch")
            if is_data:
                self._cache_data = None
            else:
                self._cache_label = None
            return self._concat(cached, self._rows(sources, end=self.cursor + bs))
        if self.last_batch_handle == "pad" and self.cursor + bs > n:
            pad = self.cursor + bs - n
            filler = []
            if pad > n:  # the batch is larger than the data: repeat all of it
                whole = self._rows(sources)
                reps = lambda a: tuple(pad // n if i == self._axis else 1  # noqa: E731
                                       for i in range(a.ndim))
                filler = [nd.tile(a, reps=reps(a)) for a in whole]
            if pad % n:
                filler = self._concat(filler, self._rows(sources, end=pad % n))
            return self._concat(self._rows(sources, start=self.cursor), filler)
        return self._rows(sources, self.cursor, min(self.cursor + bs, n))

    def getdata(self):
        return self._batchify(self.data)

    def getlabel(self):
        return self._batchify(self.label)

    def getpad(self):
        if self.last_batch_handle == "pad" and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self.last_batch_handle == "roll_over" and -self.batch_size < self.cursor < 0:
            return -self.cursor
        return 0

    def _shuffle_data(self):
        np.random.shuffle(self.idx)
        self.data = self._permuted(self.data)
        self.label = self._permuted(self.label)

    def _permuted(self, sources):
        out = []
        for k, v in sources:
            if not _is_lazy_source(v):
                rows = np.take(v.asnumpy(), self.idx, axis=self._axis)
                v = (nd.sparse.csr_matrix(rows, dtype=v.dtype) if v.stype == "csr"
                     else nd.array(rows, v.context, dtype=v.dtype))
            out.append((k, v))
        return out
