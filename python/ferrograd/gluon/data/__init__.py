"""``gluon.data``: datasets, samplers, the DataLoader and the ``vision`` datasets/transforms."""

from . import vision
from .dataloader import DataLoader, default_batchify_fn, default_mp_batchify_fn
from .dataset import ArrayDataset, Dataset, RecordFileDataset, SimpleDataset
from .sampler import (
    BatchSampler,
    FilterSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SplitSampler,
)

__all__ = ["vision", "DataLoader", "default_batchify_fn", "default_mp_batchify_fn",
           "ArrayDataset", "Dataset", "RecordFileDataset", "SimpleDataset", "BatchSampler",
           "FilterSampler", "RandomSampler", "Sampler", "SequentialSampler"]
__all__ += ["SplitSampler"]
