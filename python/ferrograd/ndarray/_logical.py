"""``nd.logical_and`` / ``logical_or`` / ``logical_xor``: MXNet's Python-level helpers that take
arrays or scalars on either side. Two arrays go to ``broadcast_logical_*``, an array and a scalar
to ``_logical_*_scalar`` (1/0 in the array's dtype); two scalars give a Python int, as in MXNet."""

import operator as _operator

from .._ferrograd import NDArray


def _logical(lhs, rhs, name, truth):
    from .. import ndarray as nd
    from . import _internal
    lhs_nd, rhs_nd = isinstance(lhs, NDArray), isinstance(rhs, NDArray)
    if lhs_nd and rhs_nd:
        return getattr(nd, f"broadcast_logical_{name}")(lhs, rhs)
    scalar_op = getattr(_internal, f"_logical_{name}_scalar")
    if lhs_nd:
        return scalar_op(lhs, scalar=float(rhs))
    if rhs_nd:
        # The three operations are symmetric, so the scalar may sit on either side.
        return scalar_op(rhs, scalar=float(lhs))
    return 1 if truth(bool(lhs), bool(rhs)) else 0


def logical_and(lhs, rhs):
    """1 where both ``lhs`` and ``rhs`` are nonzero, else 0, with broadcasting; either side may
    be a scalar."""
    return _logical(lhs, rhs, "and", lambda a, b: a and b)


def logical_or(lhs, rhs):
    """1 where ``lhs`` or ``rhs`` is nonzero, else 0, with broadcasting; either side may be a
    scalar."""
    return _logical(lhs, rhs, "or", lambda a, b: a or b)


def logical_xor(lhs, rhs):
    """1 where exactly one of ``lhs`` and ``rhs`` is nonzero, else 0, with broadcasting; either
    side may be a scalar."""
    return _logical(lhs, rhs, "xor", _operator.xor)
