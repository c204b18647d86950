"""Normalisation layers of ``gluon.nn``: BatchNorm, LayerNorm, InstanceNorm, GroupNorm.

``in_channels=0`` leaves the per-channel parameters' size to the first forward.
"""

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
        # Composite of existing ops (no GroupNorm kernel): the population variance of each
        # (sample, group) row, as MXNet's operator computes it.
        grouped = x.reshape((0, self._num_groups, -1))
        centred = F.broadcast_sub(grouped, F.mean(grouped, axis=2, keepdims=True))
        var = F.mean(F.square(centred), axis=2, keepdims=True)
        normed = F.broadcast_div(centred, F.sqrt(var + self._epsilon))
        out = F.broadcast_add(F.broadcast_mul(normed, gamma.reshape((1, -1, 1))),
                              beta.reshape((1, -1, 1)))
        return F.reshape_like(out, x)

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{self.__class__.__name__}({body})"
