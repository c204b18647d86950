"""``mx.nd.contrib``: MXNet 1.x's contributed NDArray functions (a first part: the
floating-point class tests, the Zipfian candidate sampler)."""

import math as _math

import numpy as _np

from . import CTCLoss, ctc_loss  # noqa: F401 - MXNet's contrib names of the CTC loss op
from .contrib_flow import cond, foreach, while_loop  # noqa: F401 - re-exported


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


def _zipfian(F, true_classes, num_sampled, range_max):
    """``rand_zipfian`` for ``F`` = ``nd`` or ``sym`` (the same expression builds both)."""
    log_range = _math.log(range_max + 1)
    u = F.random.uniform(0, log_range, shape=(num_sampled,), dtype="float64")
    # exp(u) - 1 is log-uniform on [0, range_max]; the modulo folds the top edge back in.
    sampled = F.Cast(u.exp() - 1, dtype="int64") % range_max

    def expected_count(classes):
        c = F.Cast(classes, dtype="float64")
        return ((c + 2.0) / (c + 1.0)).log() / log_range * num_sampled

    return sampled, expected_count(true_classes), expected_count(sampled)


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """``num_sampled`` classes in [0, range_max) drawn with replacement from the log-uniform law
    P(k) = log((k + 2) / (k + 1)) / log(range_max + 1); returns the samples (int64) and the
    expected counts (float64) of ``true_classes`` and of the samples in ``num_sampled`` draws."""
    from .. import ndarray
    return _zipfian(ndarray, true_classes, num_sampled, range_max)


def SparseEmbedding(data, weight, input_dim, output_dim, dtype="float32",  # noqa: N802
                    deterministic=False, out=None, name=None):
    """MXNet's deprecated ``contrib.SparseEmbedding``: ``Embedding`` whose weight gradient is
    row-sparse (``sparse_grad=True``). ``deterministic`` only chose MXNet's GPU kernel."""
    from .. import ndarray
    return ndarray.Embedding(data, weight, input_dim=input_dim, output_dim=output_dim,
                             dtype=dtype, sparse_grad=True, out=out)


def boolean_mask(data, index, axis=0, out=None):
    """The slices of ``data`` along ``axis`` where the 1-D ``index`` is nonzero (the output's
    length along ``axis`` depends on the values, so this is an imperative function; the gradient
    flows back to the kept slices)."""
    from .. import ndarray
    from ..base import ShapeError
    if index.ndim != 1 or data.ndim == 0 or not -data.ndim <= axis < data.ndim \
            or index.shape[0] != data.shape[axis]:
        raise ShapeError(f"boolean_mask: index must be 1-D with one entry per slice of data along "
                         f"axis {axis}; got data {data.shape} and index {index.shape}")
    keep = _np.flatnonzero(index.asnumpy())
    result = ndarray.take(data, ndarray.array(keep, dtype="int64"), axis=axis)
    if out is not None:
        out[:] = result
        return out
    return result


__all__ = ["isinf", "isfinite", "isnan", "rand_zipfian", "SparseEmbedding", "CTCLoss",
           "ctc_loss", "boolean_mask", "foreach", "while_loop", "cond"]


def _export_registered():
    """Every registered ``_contrib_<name>`` operator as ``nd.contrib.<name>``, as in MXNet."""
    from .. import ndarray as nd  # partly initialised: the op functions are already in it
    from .._ferrograd import OpFunc
    prefix = "_contrib_"
    # boolean_mask stays the imperative function above: the registered node only exists for
    # graphs, whose static shape planning cannot run it.
    found = {k[len(prefix):]: v for k, v in vars(nd).items()
             if k.startswith(prefix) and isinstance(v, OpFunc) and k != "_contrib_boolean_mask"}
    globals().update(found)
    __all__.extend(sorted(k for k in found if k not in __all__))


_export_registered()
