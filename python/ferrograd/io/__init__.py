"""``mx.io``: MXNet 1.x's data iterators for the symbolic API (``mx.mod.Module``).

Not to be confused with NDArray file I/O (``nd.save``/``nd.load``, in ``ndarray/_io.py`` and the
Rust ``ferrograd::io``): this package only feeds batches to training loops.
"""

from .base import DataBatch, DataDesc, DataIter, PrefetchingIter, ResizeIter
from .csv_iter import CSVIter
from .ndarray_iter import NDArrayIter

__all__ = ["DataDesc", "DataBatch", "DataIter", "ResizeIter", "PrefetchingIter", "NDArrayIter",
           "CSVIter"]
