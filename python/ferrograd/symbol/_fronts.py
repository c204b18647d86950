"""``sym.split_v2`` and ``sym.histogram``: MXNet's Python fronts of the ``_split_v2`` and
``_histogram`` operators, written for graphs (no data, so nothing is computed by NumPy here)."""

import numpy as _np

from ..base import ValueError_
from .symbol import Symbol


def _ops():
    from . import _OPS
    return _OPS


def _is_int(v):
    return isinstance(v, (int, _np.integer)) and not isinstance(v, bool)


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Splits ``ary`` along ``axis``: an int ``k`` gives ``k`` parts (sizes differing by at most
    one, the longer first, as MXNet's ``_split_v2`` computes them), a tuple of indices the parts
    between them (as ``numpy.split``). One output per part (a grouped symbol when there are
    several). ``squeeze_axis`` drops the axis from parts of size 1."""
    if not isinstance(ary, Symbol):
        raise TypeError(f"split_v2: ary must be a Symbol, got {type(ary).__name__}")
    if _is_int(indices_or_sections):
        indices, sections = [], int(indices_or_sections)
    elif isinstance(indices_or_sections, (tuple, list)) \
            and all(_is_int(i) for i in indices_or_sections):
        indices, sections = [0, *(int(i) for i in indices_or_sections)], 0
    else:
        raise ValueError_("split_v2: indices_or_sections must be an int or a tuple of ints, got "
                          f"{indices_or_sections!r}")
    return _ops()["_split_v2"](ary, indices=indices, axis=axis, squeeze_axis=squeeze_axis,
                               sections=sections)


def histogram(a, bins=10, range=None, **kwargs):  # noqa: A002 - MXNet's parameter name
    """Histogram of the flattened ``a`` in a graph: two outputs, the int64 counts and the bin
    edges. ``bins`` is a Symbol of increasing edges, or a number of equal-width bins over
    ``range`` (required here: a graph cannot look at the data to find its range)."""
    ops = _ops()
    if isinstance(bins, Symbol):
        return ops["_histogram"](a, bins, **kwargs)
    if _is_int(bins):
        if range is None:
            raise ValueError("null range is not supported in symbol mode")
        return ops["_histogram"](a, bin_cnt=int(bins), range=tuple(range), **kwargs)
    raise ValueError("bins argument should be either an integer or an NDArray")


__all__ = ["split_v2", "histogram"]
