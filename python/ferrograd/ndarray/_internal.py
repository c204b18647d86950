"""``mx.nd._internal``: the internal operators MXNet 1.x code calls directly (a part)."""

from ..base import ShapeError


def _region(x, begin, end, step):
    """The basic-index key for ``x[begin:end:step]`` (MXNet's crop/slice parameters; ``None``
    entries are open ends, missing trailing entries take the whole axis)."""
    begin, end = tuple(begin), tuple(end)
    step = tuple(step) if step else ()
    if len(begin) != len(end) or len(begin) > x.ndim or len(step) > len(begin):
        raise ShapeError(f"crop: begin {begin}, end {end} and step {step} must have equal "
                         f"lengths of at most ndim={x.ndim} (data shape {x.shape})")
    return tuple(slice(b, e, step[i] if i < len(step) else None)
                 for i, (b, e) in enumerate(zip(begin, end, strict=True)))


def _crop_assign(lhs, rhs, begin, end, step=(), out=None, name=None):
    """A copy of ``lhs`` with the region ``begin:end:step`` replaced by ``rhs`` (MXNet's
    ``_slice_assign``); written into ``out`` (which may be ``lhs`` itself) when given."""
    key = _region(lhs, begin, end, step)
    res = lhs if out is lhs else lhs.copy()
    res[key] = rhs
    if out is not None and out is not res:
        out[:] = res
        return out
    return res


def _crop_assign_scalar(data, scalar=0.0, begin=(), end=(), step=(), out=None, name=None):
    """A copy of ``data`` with the region ``begin:end:step`` set to ``scalar`` (MXNet's
    ``_slice_assign_scalar``); written into ``out`` when given."""
    return _crop_assign(data, float(scalar), begin, end, step, out=out)


_slice_assign = _crop_assign


def _square_sum(data, axis=None, keepdims=False, exclude=False, out=None, name=None):
    """``sum(square(data), axis)``, MXNet's fused op for row-sparse weights (a factorization
    machine's ``v``): row-sparse in, row-sparse out for ``axis=1, keepdims=True`` (a row of
    zeros sums to zero), dense otherwise. MXNet accepts only row-sparse input; a dense one works
    here too."""
    from .. import ndarray
    res = ndarray.sum(ndarray.square(data), axis=axis, keepdims=keepdims, exclude=exclude)
    if getattr(data, "stype", "default") == "row_sparse" and keepdims and axis in (1, (1,), -1):
        res = res.tostype("row_sparse")
    if out is not None:
        out[:] = res
        return out
    return res
_slice_assign_scalar = _crop_assign_scalar


def _expose_registered_internal_ops():
    """Every registered op whose name starts with ``_`` (``_sample_unique_zipfian``,
    ``_identity_with_attr_like_rhs``, ...) is ``nd._internal.<name>``, as in MXNet; the
    functions above keep precedence."""
    from .. import ndarray  # partly initialised: the op functions are already in it
    from .._ferrograd import OpFunc
    mine = globals()
    for k, v in vars(ndarray).items():
        if isinstance(v, OpFunc) and k.startswith("_") and not k.startswith("__") and k not in mine:
            mine[k] = v


_expose_registered_internal_ops()
