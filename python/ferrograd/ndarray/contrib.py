"""``mx.nd.contrib``: MXNet 1.x's contributed NDArray functions (a first part: the
floating-point class tests)."""

import numpy as _np


def _is_float(data):
    return _np.dtype(data.dtype).kind == "f"


def isinf(data):
    """1 where ``data`` is +inf or -inf, else 0 (in ``data``'s dtype)."""
    if not _is_float(data):
        return data.zeros_like()  # integers are never infinite (inf would saturate when cast)
    return data.abs() == _np.inf


def isfinite(data):
    """1 where ``data`` is neither infinite nor NaN, else 0 (in ``data``'s dtype)."""
    # NaN != NaN, and inf - inf is NaN: x - x == 0 exactly for the finite values.
    return (data - data) == 0


def isnan(data):
    """1 where ``data`` is NaN, else 0 (in ``data``'s dtype)."""
    return data != data


__all__ = ["isinf", "isfinite", "isnan"]
