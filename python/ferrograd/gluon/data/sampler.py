"""Samplers: iterables of dataset indices (and of index batches, ``BatchSampler``)."""

import itertools

import numpy as np

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "FilterSampler", "BatchSampler",
           "SplitSampler"]

_LAST_BATCH = ("keep", "discard", "rollover")


class Sampler:
    """Base class: ``__iter__`` yields indices, ``__len__`` counts them."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``start, start + 1, ..., start + length - 1``."""

    def __init__(self, length, start=0):
        self._length = length
        self._start = start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """A fresh permutation of ``range(length)`` (NumPy's global generator) per pass."""

    def __init__(self, length):
        self._length = length

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        # Python ints: they index datasets and cross to DataLoader workers faster than NumPy's.
        return iter(indices.tolist())

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of ``dataset`` for which ``fn(sample)`` is true."""

    def __init__(self, fn, dataset):
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i, sample in enumerate(dataset) if fn(sample)]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``. The short last batch is
    kept ('keep'), dropped ('discard'), or carried over to the start of the next pass
    ('rollover')."""

    def __init__(self, sampler, batch_size, last_batch="keep"):
        if last_batch not in _LAST_BATCH:
            raise ValueError(f"BatchSampler: last_batch must be one of 'keep', 'discard', or "
                             f"'rollover', but got {last_batch!r}")
        if int(batch_size) < 1:
            raise ValueError(f"BatchSampler: batch_size must be at least 1, got {batch_size}")
        self._sampler = sampler
        self._batch_size = int(batch_size)
        self._last_batch = last_batch
        self._prev = []

    def __iter__(self):
        indices = iter(self._sampler)
        batch, self._prev = self._prev, []
        while True:
            # Whole slices at C speed rather than one append per index.
            batch.extend(itertools.islice(indices, self._batch_size - len(batch)))
            if len(batch) < self._batch_size:
                break
            yield batch
            batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        if self._last_batch == "keep":
            return (len(self._sampler) + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return len(self._sampler) // self._batch_size
        return (len(self._prev) + len(self._sampler)) // self._batch_size


class SplitSampler(Sampler):
    """The share of worker ``part_index`` out of ``num_parts`` of ``range(length)``, for
    data-parallel training: each worker reads its own part of the dataset.

    The parts are the consecutive blocks ``[k*m, (k+1)*m)`` with ``m = length // num_parts``
    (``interleave=True``: the strided ``k, k+num_parts, ...`` instead). Every part has the same
    size ``m`` — the last ``length % num_parts`` samples are left out — so all workers run the
    same number of steps, which synchronous training needs. ``shuffle=True`` (the default)
    shuffles the part with NumPy's global generator on every pass. ``num_parts`` and
    ``part_index`` default to ``distributed.size()`` and ``distributed.rank()``."""

    def __init__(self, length, num_parts=None, part_index=None, shuffle=True, interleave=False):
        if num_parts is None or part_index is None:
            from ... import distributed

            num_parts = distributed.size() if num_parts is None else num_parts
            part_index = distributed.rank() if part_index is None else part_index
        num_parts, part_index, length = int(num_parts), int(part_index), int(length)
        if num_parts < 1:
            raise ValueError(f"SplitSampler: num_parts must be at least 1, got {num_parts}")
        if not 0 <= part_index < num_parts:
            raise ValueError(f"SplitSampler: part_index must be in [0, {num_parts}), got "
                             f"{part_index}")
        if length < 0:
            raise ValueError(f"SplitSampler: length must be >= 0, got {length}")
        per_part = length // num_parts
        if interleave:
            self._indices = np.arange(part_index, per_part * num_parts, num_parts)
        else:
            self._indices = np.arange(part_index * per_part, (part_index + 1) * per_part)
        self._shuffle = shuffle

    def __iter__(self):
        indices = self._indices.copy()
        if self._shuffle:
            np.random.shuffle(indices)
        return iter(indices.tolist())

    def __len__(self):
        return len(self._indices)
