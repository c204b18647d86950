"""Datasets: indexable collections of samples, and the lazy views over them (transform, filter,
shard, take).

Whole batches: ``take_batch(dataset, indices)`` gives the batch that stacking ``dataset[i]`` for
each index would give (what ``default_batchify_fn`` makes), computed with one operation per
array and per transform instead of one per sample, when the dataset can (arrays, views of them,
and transforms with ``_apply_batch``); otherwise it returns None and the loader goes sample by
sample."""

import os

import numpy as np

from ... import ndarray as nd
from ...base import MXNetError

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """Base class: ``__getitem__(idx)`` returns a sample, ``__len__`` the number of samples."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def filter(self, fn):
        """The samples for which ``fn(sample)`` is true (evaluated now, once)."""
        from .sampler import FilterSampler
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards, index):
        """Part ``index`` of ``num_shards`` contiguous parts whose lengths differ by at most 1
        (the first ``len % num_shards`` parts get the extra sample)."""
        if num_shards <= 0:
            raise ValueError(f"Dataset.shard: num_shards must be greater than 0, got {num_shards}")
        if not 0 <= index < num_shards:
            raise ValueError(f"Dataset.shard: index {index} out of bound for {num_shards} shards")
        from .sampler import SequentialSampler
        length = len(self)
        shard_len, rest = divmod(length, num_shards)
        start = shard_len * index + min(index, rest)
        end = start + shard_len + (index < rest)
        return _SampledDataset(self, SequentialSampler(end - start, start))

    def take(self, count):
        """The first ``count`` samples (all of them if ``count`` is None or too large)."""
        from .sampler import SequentialSampler
        if count is None or count > len(self):
            count = len(self)
        return _SampledDataset(self, SequentialSampler(count))

    def sample(self, sampler):
        """The samples at the indices ``sampler`` yields."""
        from .sampler import Sampler
        if not isinstance(sampler, Sampler):
            raise TypeError(f"Dataset.sample: invalid sampler type {type(sampler).__name__}; "
                            "expected gluon.data.Sampler")
        return _SampledDataset(self, sampler)

    def transform(self, fn, lazy=True):
        """Each sample passed through ``fn`` (tuple samples are unpacked into arguments); with
        ``lazy=False`` computed now into a ``SimpleDataset``."""
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset(list(trans))

    def transform_first(self, fn, lazy=True):
        """Like ``transform`` but ``fn`` sees only the first element (the data, not the label)."""
        return self.transform(_TransformFirstClosure(fn), lazy)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def _take_batch(self, indices):
        """The stacked batch of ``indices`` (valid indices, an int64 array), or None when this
        dataset can only give samples one by one."""
        return None


def take_batch(dataset, indices):
    """The default batch of ``dataset[i] for i in indices`` made in one pass per array and per
    transform, or None: the caller then loads sample by sample. A batch whose operations fail
    (a transform given images of the wrong shape, say) is also left to the per-sample path,
    which raises the error about the sample as MXNet does."""
    take = getattr(dataset, "_take_batch", None)
    if take is None:
        return None
    indices = np.asarray(indices)
    if indices.ndim != 1 or indices.size == 0 or indices.dtype.kind not in "iu":
        return None
    if indices.min() < 0 or indices.max() >= len(dataset):
        return None  # the per-sample path raises the IndexError
    try:
        return take(indices.astype(np.int64, copy=False))
    except (MXNetError, ValueError, TypeError):
        return None


def _take_rows(array, indices):
    """Rows ``indices`` of one stored array, as the default batchify would stack its samples
    (None for anything but NDArrays of rank >= 2 and NumPy arrays of numbers)."""
    if isinstance(array, nd.NDArray):
        if array.ndim < 2:
            return None
        rows = nd.from_numpy(indices, zero_copy=False).as_in_context(array.context)
        return nd.take(array, rows, axis=0)
    if isinstance(array, np.ndarray) and array.dtype.kind in "biuf":
        return nd.from_numpy(array[indices], zero_copy=False)
    return None


def _columns(arrays, indices):
    columns = [_take_rows(a, indices) for a in arrays]
    if any(c is None for c in columns):
        return None
    return columns[0] if len(columns) == 1 else columns


class SimpleDataset(Dataset):
    """Wraps any object with ``len`` and ``[]`` (a list, a NumPy array, ...)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)

    def _take_batch(self, indices):
        apply = getattr(self._fn, "_apply_batch", None)
        if apply is None:
            return None
        batch = take_batch(self._data, indices)
        if batch is None:
            return None
        return apply(*batch) if isinstance(batch, list) else apply(batch)


class _TransformFirstClosure:
    """Applies ``fn`` to the first of several arguments (a class, so that it pickles)."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)

    def _apply_batch(self, x, *args):
        apply = getattr(self._fn, "_apply_batch", None)
        out = None if apply is None else apply(x)
        if out is None:
            return None
        return [out, *args] if args else out


class _SampledDataset(Dataset):
    def __init__(self, dataset, sampler):
        self._dataset = dataset
        self._sampler = sampler
        self._indices = list(iter(sampler))

    def __len__(self):
        return len(self._sampler)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]

    def _take_batch(self, indices):
        if getattr(self, "_index_array", None) is None:
            self._index_array = np.asarray(self._indices, dtype=np.int64)
        return take_batch(self._dataset, self._index_array[indices])


class ArrayDataset(Dataset):
    """Zips arrays of equal length: sample ``i`` is ``(a[i], b[i], ...)`` (or ``a[i]`` for one
    array). 1-D NDArrays are held as NumPy arrays so that samples are scalars, as MXNet."""

    def __init__(self, *args):
        if not args:
            raise ValueError("ArrayDataset needs at least 1 array")
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            if len(data) != self._length:
                raise ValueError(f"ArrayDataset: all arrays must have the same length; array[0] "
                                 f"has length {self._length} while array[{i}] has {len(data)}")
            if isinstance(data, nd.NDArray) and data.ndim == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        if len(self._data) == 1:
            return self._data[0][idx]
        return tuple(data[idx] for data in self._data)

    def __len__(self):
        return self._length

    def _take_batch(self, indices):
        return _columns(self._data, indices)


class RecordFileDataset(Dataset):
    """The records of a RecordIO ``.rec`` file (with its ``.idx`` index beside it), as bytes."""

    def __init__(self, filename):
        from ... import recordio
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)

    def __getstate__(self):
        # Worker processes reopen the file rather than share a file position.
        state = self.__dict__.copy()
        state["_record"] = None
        return state

    def __setstate__(self, state):
        from ... import recordio
        self.__dict__.update(state)
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")


class _DownloadedDataset(Dataset):
    """A dataset held in memory as ``_data``/``_label`` arrays read from files under ``root``."""

    def __init__(self, root, transform):
        super().__init__()
        self._transform = transform
        self._data = None
        self._label = None
        self._root = os.path.expanduser(root)
        os.makedirs(self._root, exist_ok=True)
        self._get_data()

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _take_batch(self, indices):
        if self._transform is not None:
            return None
        return _columns([self._data, self._label], indices)

    def _get_data(self):
        raise NotImplementedError
