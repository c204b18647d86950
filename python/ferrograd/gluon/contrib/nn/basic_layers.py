"""The layers of ``gluon.contrib.nn``."""

import warnings

from ....base import MXNetError
from ... import nn
from ...block import Block, HybridBlock

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm",
           "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]


class Concurrent(nn.Sequential):
    """Feeds the same input to every child and concatenates their outputs along ``axis``."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        from .... import ndarray
        return ndarray.concat(*[child(x) for child in self._children.values()], dim=self.axis)


class HybridConcurrent(nn.HybridSequential):
    """:class:`Concurrent` whose children are HybridBlocks (it hybridizes)."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[child(x) for child in self._children.values()], dim=self.axis)


Identity = nn.Identity


class SparseEmbedding(Block):
    """An embedding for very large vocabularies: the weight itself is a row_sparse Parameter
    (``stype='row_sparse'``) and so is its gradient. Each forward pulls the rows it looks up
    through the Trainer (``weight.row_sparse_data``), so a Trainer must exist first; the output
    is ``Embedding`` of those rows with ``sparse_grad=True``. A plain Block, as in MXNet."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": True}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      stype="row_sparse", grad_stype="row_sparse")

    def forward(self, x):
        from .... import ndarray
        rows = self.weight.row_sparse_data(x)
        return ndarray.Embedding(x, rows, name="fwd", **self._kwargs)

    def __repr__(self):
        k = self._kwargs
        return f"{self.__class__.__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class SyncBatchNorm(nn.BatchNorm):
    """BatchNorm whose statistics MXNet synchronises across devices. ferrograd runs on one CPU
    device, so it is ``BatchNorm`` over the whole batch (``num_devices`` must be 1 or None)."""

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5, center=True,
                 scale=True, use_global_stats=False, beta_initializer="zeros",
                 gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", **kwargs):
        if num_devices is None:
            warnings.warn("Caution using SyncBatchNorm: if not using all the GPUs, please "
                          "mannually set num_devices", UserWarning, stacklevel=2)
            num_devices = 1
        if num_devices != 1:
            raise MXNetError(f"SyncBatchNorm: num_devices={num_devices}, but ferrograd runs on "
                             "one device; use num_devices=1")
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)


def _factors(factor, ndim, name):
    if isinstance(factor, int):
        factors = (factor,) * ndim
    else:
        factors = tuple(int(f) for f in factor)
    if len(factors) != ndim or any(f < 1 for f in factors):
        raise MXNetError(f"{name}: factor must be a positive int or a tuple of {ndim} positive "
                         f"ints, got {factor!r}")
    return factors


class _PixelShuffle(HybridBlock):
    """Moves channel blocks into space: ``(N, C·∏f, d1, ...) → (N, C, d1·f1, ...)`` with
    ``out[n, c, ..., dk·fk + ik, ...] = x[n, c·∏f + (i1·f2 + i2)·…, ..., dk, ...]``."""

    _NDIM = 0

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, self._NDIM, type(self).__name__)

    def hybrid_forward(self, F, x):
        k, f = self._NDIM, self._factors
        # (N, C·∏f, d...) → (N, C, ∏f, d...) → (N, C, f1, ..., fk, d...), one factor at a time.
        x = F.reshape(x, (0, -4, -1, _prod(f)) + (0,) * k)
        for i in range(k - 1):
            x = F.reshape(x, (0,) * (2 + i) + (-4, f[i], -1) + (0,) * k)
        # Interleave to (N, C, d1, f1, d2, f2, ...), then merge each (dk, fk) pair.
        axes = (0, 1) + tuple(a for i in range(k) for a in (2 + k + i, 2 + i))
        x = F.transpose(x, axes=axes)
        return F.reshape(x, (0, 0) + (-3,) * k)

    def __repr__(self):
        shown = self._factors[0] if self._NDIM == 1 else self._factors
        return f"{type(self).__name__}({shown})"


def _prod(values):
    out = 1
    for v in values:
        out *= v
    return out


class PixelShuffle1D(_PixelShuffle):
    """``(N, C·f, W) → (N, C, W·f)``."""

    _NDIM = 1


class PixelShuffle2D(_PixelShuffle):
    """``(N, C·f1·f2, H, W) → (N, C, H·f1, W·f2)``."""

    _NDIM = 2


class PixelShuffle3D(_PixelShuffle):
    """``(N, C·f1·f2·f3, D, H, W) → (N, C, D·f1, H·f2, W·f3)``."""

    _NDIM = 3
