"""Gradient-descent family: SGD (momentum), NAG, Signum, LARS, DCASGD, SGLD, and ``Test``."""

import math

import numpy as np

from .. import ndarray as nd
from ..ndarray import sparse_update
from .optimizer import Optimizer, fused, register, zeros_like

__all__ = ["SGD", "ccSGD", "NAG", "Signum", "LARS", "DCASGD", "SGLD", "Test"]


def _clip(grad, clip_gradient):
    return grad if clip_gradient is None else nd.clip(grad, -clip_gradient, clip_gradient)


@register
class SGD(Optimizer):
    """SGD with optional momentum: ``mom = momentum*mom - lr*(grad + wd*weight)``,
    ``weight += mom`` (``sgd_update``/``sgd_mom_update``; the ``mp_`` ops for float16 weights
    with ``multi_precision``). With ``lazy_update`` a row_sparse gradient updates only its rows."""

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return zeros_like(weight) if self.momentum != 0.0 else None

    def create_state_multi_precision(self, index, weight):
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return (self.create_state(index, master), master)
        return super().create_state_multi_precision(index, weight)

    def _step(self, index, weight, grad, state, master=None):
        self._update_count(index)
        p = dict(lr=self._get_lr(index), wd=self._get_wd(index), **self._grad_params())
        if state is not None:
            p["momentum"] = self.momentum
        arrays = [weight, grad] + ([state] if state is not None else [])
        if master is None:
            fused("sgd_mom_update" if state is not None else "sgd_update", arrays, **p)
        else:
            fused(
                "mp_sgd_mom_update" if state is not None else "mp_sgd_update",
                arrays + [master],
                **p,
            )

    def update(self, index, weight, grad, state):
        self._step(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state, strict=False):
                self.update_multi_precision(i, w, g, s)
        elif sparse_update.is_lazy(self, grad):  # a row_sparse gradient: update its rows only
            sparse_update.lazy_update(self, index, weight, grad, state,
                                      self.update_multi_precision)
        elif self.multi_precision and weight.dtype == np.float16:
            self._step(index, weight, grad, state[0], master=state[1])
        else:
            self._step(index, weight, grad, state)
            sparse_update.refresh(weight)


@register
class ccSGD(SGD):  # noqa: N801 - MXNet's name
    """Deprecated alias of :class:`SGD`."""


@register
class NAG(SGD):
    """Nesterov accelerated gradient (``nag_mom_update``; plain SGD when ``momentum`` is 0)."""

    def _step(self, index, weight, grad, state, master=None):
        if state is None:
            return super()._step(index, weight, grad, state, master)
        self._update_count(index)
        p = dict(
            lr=self._get_lr(index),
            wd=self._get_wd(index),
            momentum=self.momentum,
            **self._grad_params(),
        )
        if master is None:
            fused("nag_mom_update", [weight, grad, state], **p)
        else:
            fused("mp_nag_mom_update", [weight, grad, state, master], **p)


@register
class Signum(Optimizer):
    """Signum (sign of the momentum; ``signum_update``), or signSGD when ``momentum`` is 0.
    ``wd_lh`` decays the weight directly, outside the momentum."""

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        return zeros_like(weight) if self.momentum != 0.0 else None

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        if state is not None:
            fused(
                "signum_update",
                [weight, grad, state],
                lr=lr,
                wd=wd,
                momentum=self.momentum,
                wd_lh=self.wd_lh,
                **self._grad_params(),
            )
        else:
            fused(
                "signsgd_update", [weight, grad], lr=lr, wd=wd + self.wd_lh, **self._grad_params()
            )


@register
class LARS(Optimizer):
    """Layer-wise adaptive rate scaling over SGD with momentum: each layer's rate is scaled by
    ``eta*|w|/(|g| + wd*|w| + epsilon)`` (1 for biases, BatchNorm's gamma/beta, and zero norms)."""

    def __init__(self, momentum=0.0, eta=0.001, epsilon=0, lazy_update=False, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.eta = eta
        self.eps = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return zeros_like(weight) if self.momentum != 0.0 else None

    def _lars(self, index, weight, grad, wd):
        name = self.idx2name.get(index, str(index))
        if name.endswith(("gamma", "beta", "bias")):
            return 1.0
        w_norm = float(nd.norm(weight).asscalar())
        g_norm = float(nd.norm(grad * self.rescale_grad).asscalar())
        if w_norm > 0.0 and g_norm > 0.0:
            return self.eta * w_norm / (g_norm + wd * w_norm + self.eps)
        return 1.0

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        lr *= self._lars(index, weight, grad, wd)
        if state is not None:
            fused(
                "sgd_mom_update",
                [weight, grad, state],
                lr=lr,
                wd=wd,
                momentum=self.momentum,
                **self._grad_params(),
            )
        else:
            fused("sgd_update", [weight, grad], lr=lr, wd=wd, **self._grad_params())


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD: the gradient gains
    ``lamda*grad*grad*(weight - previous_weight)``."""

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        mom = zeros_like(weight) if self.momentum != 0.0 else None
        return (mom, weight.copy())

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        grad = _clip(grad * self.rescale_grad, self.clip_gradient)
        mom, previous = state
        step = grad + wd * weight + self.lamda * grad * grad * (weight - previous)
        if mom is not None:
            mom[:] = self.momentum * mom - lr * step
            delta = mom
        else:
            delta = -lr * step
        previous[:] = weight
        weight[:] = weight + delta


@register
class SGLD(Optimizer):
    """Stochastic gradient Langevin dynamics: a half gradient step plus Gaussian noise of
    variance ``lr``."""

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        grad = _clip(grad * self.rescale_grad, self.clip_gradient)
        noise = nd.random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype)
        weight[:] = weight - lr / 2 * (grad + wd * weight) + noise


@register
class Test(Optimizer):
    """The test optimizer: ``weight += rescale_grad*grad``; its state keeps the new weight."""

    def create_state(self, index, weight):
        return zeros_like(weight)

    def update(self, index, weight, grad, state):
        weight[:] = weight + grad * self.rescale_grad
        state[:] = weight
