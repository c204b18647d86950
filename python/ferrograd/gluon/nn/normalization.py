"""Normalisation layers of ``gluon.nn``: BatchNorm, LayerNorm, InstanceNorm, GroupNorm.

``in_channels=0`` leaves the per-channel parameters' size to the first forward.
"""

from ...base import MXNetError
from ..block import HybridBlock

__all__ = ["BatchNorm", "LayerNorm", "InstanceNorm", "GroupNorm"]


def _scale_shift_params(block, in_channels, center, scale, gamma_init, beta_init):
    block.gamma = block.params.get("gamma", grad_req="write" if scale else "null",
                                   shape=(in_channels,), init=gamma_init,
                                   allow_deferred_init=True, differentiable=scale)
    block.beta = block.params.get("beta", grad_req="write" if center else "null",
                                  shape=(in_channels,), init=beta_init,
                                  allow_deferred_init=True, differentiable=center)


class BatchNorm(HybridBlock):
    """Normalises over every axis but ``axis`` with batch statistics while training
    (``autograd.record()``), updating ``running_mean``/``running_var`` with ``momentum``; uses the
    running statistics at inference or with ``use_global_stats``."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum,
                        "fix_gamma": not scale, "use_global_stats": use_global_stats}
        _scale_shift_params(self, in_channels, center, scale, gamma_initializer, beta_initializer)
        self.running_mean = self.params.get("running_mean", grad_req="null", shape=(in_channels,),
                                            init=running_mean_initializer,
                                            allow_deferred_init=True, differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null", shape=(in_channels,),
                                           init=running_variance_initializer,
                                           allow_deferred_init=True, differentiable=False)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)

    def __repr__(self):
        channels = self.gamma.shape[0] or None
        body = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{self.__class__.__name__}({body}, in_channels={channels})"


class LayerNorm(HybridBlock):
    """Normalises each sample over ``axis``, then ``gamma * x + beta``."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        _scale_shift_params(self, in_channels, center, scale, gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, x, gamma, beta):
        return F.LayerNorm(x, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{self.__class__.__name__}({body}, in_channels={self.gamma.shape[0]})"


class InstanceNorm(HybridBlock):
    """Normalises each sample and channel (``axis``) over the remaining axes."""

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        _scale_shift_params(self, in_channels, center, scale, gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        x = x.swapaxes(1, self._axis)
        return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon).swapaxes(1, self._axis)

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{self.__class__.__name__}({body}, in_channels={self.gamma.shape[0]})"


class GroupNorm(HybridBlock):
    """Splits the channels (axis 1) into ``num_groups`` groups and normalises each sample's
    group over its channels and spatial axes, then ``gamma[g] * x + beta[g]``: as MXNet 1.9,
    ``gamma`` and ``beta`` hold one value per group (shape ``(num_groups,)``)."""

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center,
                        "scale": scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        _scale_shift_params(self, num_groups, center, scale, gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, x, gamma, beta):
        # A composite of existing ops (there is no GroupNorm kernel) that keeps x's rank, so it
        # needs no reshape_like: per-channel means (equal sizes) average into group means, and
        # group statistics broadcast back to channels through the (N, G, C/G, 1...) view.
        ndim = _input_ndim(x, "GroupNorm")
        groups = self._num_groups
        ones = (1,) * (ndim - 1)

        def group_mean(t):
            per_channel = F.mean(t, axis=(0, 1), exclude=True, keepdims=True)
            grouped = per_channel.reshape((0, -4, groups, -1, -2))
            return F.mean(grouped, axis=2, keepdims=True), grouped

        def to_channels(stat, grouped):
            return F.broadcast_like(stat, grouped).reshape((0, -3, -2))

        mean, grouped = group_mean(x)
        centred = F.broadcast_sub(x, to_channels(mean, grouped))
        var, _ = group_mean(F.square(centred))
        scale = F.broadcast_mul(F.rsqrt(var + self._epsilon), gamma.reshape((1, -1) + ones))
        out = F.broadcast_mul(centred, to_channels(scale, grouped))
        return F.broadcast_add(out, to_channels(
            F.broadcast_like(beta.reshape((1, -1) + ones), scale), grouped))

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{self.__class__.__name__}({body})"


def _input_ndim(x, layer):
    """The rank of ``x`` (an NDArray, or a Symbol while a hybridized block is traced)."""
    if hasattr(x, "ndim"):
        return x.ndim
    from .._hybrid import traced_shape
    shape = traced_shape(x)
    if shape is None:
        raise MXNetError(f"{layer}: the input rank of a Symbol is unknown; call the layer on "
                         "NDArrays (hybridized or not)")
    return len(shape)
