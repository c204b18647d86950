"""``nd.histogram``: MXNet's Python front of the ``_histogram`` operator."""

import warnings

import numpy as np

from .._ferrograd import NDArray


def histogram(a, bins=10, range=None):  # noqa: A002 - MXNet's parameter name
    """Histogram of the flattened ``a``: ``(counts, bin_edges)``.

    ``bins`` is an NDArray of increasing edges (the last bin includes its right edge) or a number
    of equal-width bins over ``range``. As in MXNet, an integer ``bins`` without ``range`` is
    computed by NumPy over ``(a.min(), a.max())`` and both results come back as float32 arrays.
    """
    from . import _internal, array
    if isinstance(bins, NDArray):
        return _internal._histogram(a, bins)
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if range is None:
            warnings.warn("range is not specified, using numpy's result to ensure consistency "
                          "with numpy", stacklevel=2)
            counts, edges = np.histogram(a.asnumpy(), bins=int(bins))
            return array(counts), array(edges)
        return _internal._histogram(a, bin_cnt=int(bins), range=tuple(range))
    raise ValueError("histogram: bins should be an integer or an NDArray, got "
                     f"{type(bins).__name__}")
