"""``CSVIter``: batches read from CSV files (one sample per row), as MXNet's C++ iterator."""

import os

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from .base import DataBatch, DataDesc, DataIter

_DTYPES = ("float32", "int32", "int64")


def _read_rows(path, shape, what, dtype):
    if not os.path.isfile(path):
        raise MXNetError(f"CSVIter: {what} '{path}': no such file")
    rows = np.loadtxt(path, delimiter=",", dtype=dtype, ndmin=2)
    size = int(np.prod(shape))
    if rows.shape[1] != size:
        raise MXNetError(f"CSVIter: the rows of {what} '{path}' have {rows.shape[1]} values but "
                         f"the specified shape {tuple(shape)} needs {size}")
    return rows.reshape((rows.shape[0],) + tuple(shape))


class CSVIter(DataIter):
    """Reads ``data_csv`` (each row reshaped to ``data_shape``) and optionally ``label_csv``
    (each row reshaped to ``label_shape``; labels are zeros without it) in batches.

    The last batch, when the data does not fill it, is completed (``DataBatch.pad`` counts the
    extra samples): with ``round_batch`` (the default) from the start of the data, and the next
    epoch begins after the samples so reused; without it, the extra positions keep the previous
    batch's samples, as MXNet's iterator does.
    """

    def __init__(self, data_csv, data_shape, batch_size, label_csv=None, label_shape=(1,),
                 round_batch=True, dtype="float32", data_name="data",
                 label_name="softmax_label", **kwargs):
        super().__init__(int(batch_size))
        if dtype not in _DTYPES:
            raise ValueError(f"CSVIter: dtype must be one of {list(_DTYPES)}, got {dtype!r}")
        if self.batch_size < 1:
            raise ValueError(f"CSVIter: batch_size must be positive, got {batch_size}")
        self.dtype = dtype
        self._data = _read_rows(data_csv, data_shape, "data_csv", dtype)
        n = self._data.shape[0]
        if label_csv is None or label_csv == "NULL":
            self._label = np.zeros((n,) + tuple(label_shape), dtype)
        else:
            self._label = _read_rows(label_csv, label_shape, "label_csv", dtype)
            if self._label.shape[0] != n:
                raise MXNetError(f"CSVIter: label_csv '{label_csv}' has {self._label.shape[0]} "
                                 f"rows but data_csv '{data_csv}' has {n}")
        if tuple(label_shape) == (1,):
            self._label = self._label.reshape((n,))
        self.round_batch = round_batch
        self.data_name, self.label_name = data_name, label_name
        self._epoch_start = 0  # where the next epoch begins (after rows reused by round_batch)
        self._batch_idx = None
        self._pad = 0
        self._cursor = None
        self.reset()

    @property
    def provide_data(self):
        shape = (self.batch_size,) + self._data.shape[1:]
        return [DataDesc(self.data_name, shape, np.dtype(self.dtype).type)]

    @property
    def provide_label(self):
        shape = (self.batch_size,) + self._label.shape[1:]
        return [DataDesc(self.label_name, shape, np.dtype(self.dtype).type)]

    def reset(self):
        self._cursor = self._epoch_start if self.round_batch else 0

    def iter_next(self):
        n = self._data.shape[0]
        if self._cursor >= n:
            return False
        rows = np.arange(self._cursor, min(self._cursor + self.batch_size, n))
        self._pad = self.batch_size - len(rows)
        if self._pad and self.round_batch:
            rows = np.concatenate([rows, np.arange(self._pad) % n])
            self._epoch_start = self._pad % n
        elif self._pad:
            previous = self._batch_idx if self._batch_idx is not None else np.zeros(
                self.batch_size, np.int64)
            rows = np.concatenate([rows, previous[len(rows):]])
        elif self._cursor + self.batch_size == n:
            self._epoch_start = 0
        self._batch_idx = rows
        self._cursor += self.batch_size
        return True

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=self._pad,
                         index=self.getindex())

    # MXNet's C++-backed iterators return single arrays here, not lists
    def getdata(self):
        return nd.array(self._data[self._batch_idx], dtype=self.dtype)

    def getlabel(self):
        return nd.array(self._label[self._batch_idx], dtype=self.dtype)

    def getindex(self):
        return self._batch_idx.astype(np.uint64)

    def getpad(self):
        return self._pad
