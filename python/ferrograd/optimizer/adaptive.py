"""Adaptive-rate optimizers: Adam, AdaGrad, AdaDelta, Adamax, Nadam, RMSProp, FTRL, FTML, LAMB."""

import math

from .. import ndarray as nd
from .optimizer import Optimizer, fused, register, zeros_like

__all__ = ["Adam", "AdaGrad", "AdaDelta", "Adamax", "Nadam", "RMSProp", "Ftrl", "FTML", "LAMB"]


def _prepared(opt, grad, weight=None, wd=0.0):
    """``clip(rescale_grad*grad [+ wd*weight])`` for the optimizers without a fused op."""
    g = grad * opt.rescale_grad
    if weight is not None and wd:
        g = g + wd * weight
    if opt.clip_gradient is not None:
        g = nd.clip(g, -opt.clip_gradient, opt.clip_gradient)
    return g


@register
class Adam(Optimizer):
    """Adam (``adam_update``); bias correction is folded into the step's learning rate."""

    def __init__(
        self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_update=True, **kwargs
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (zeros_like(weight), zeros_like(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2**t) / (1.0 - self.beta1**t)
        mean, var = state
        fused(
            "adam_update",
            [weight, grad, mean, var],
            lr=lr,
            wd=wd,
            beta1=self.beta1,
            beta2=self.beta2,
            epsilon=self.epsilon,
            **self._grad_params(),
        )


@register
class AdaGrad(Optimizer):
    """AdaGrad: ``history += g²``, ``weight -= lr*(g/sqrt(history + eps) + wd*weight)``."""

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return zeros_like(weight)

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        g = _prepared(self, grad)
        state[:] = state + nd.square(g)
        weight[:] = weight - lr * (g / nd.sqrt(state + self.float_stable_eps) + wd * weight)


@register
class AdaDelta(Optimizer):
    """AdaDelta (no learning rate): running averages of squared gradients and updates."""

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho, self.epsilon = rho, epsilon

    def create_state(self, index, weight):
        return (zeros_like(weight), zeros_like(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        wd = self._get_wd(index)
        g = _prepared(self, grad)
        acc_g, acc_delta = state
        acc_g[:] = self.rho * acc_g + (1.0 - self.rho) * g * g
        delta = nd.sqrt(acc_delta + self.epsilon) / nd.sqrt(acc_g + self.epsilon) * g
        acc_delta[:] = self.rho * acc_delta + (1.0 - self.rho) * delta * delta
        weight[:] = weight - (delta + wd * weight)


@register
class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm, ``u = max(beta2*u, |g|)``."""

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2 = beta1, beta2

    def create_state(self, index, weight):
        return (zeros_like(weight), zeros_like(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr /= 1.0 - self.beta1**t
        g = _prepared(self, grad, weight, wd)
        m, u = state
        m[:] = self.beta1 * m + (1.0 - self.beta1) * g
        u[:] = nd.maximum(self.beta2 * u, nd.abs(g))
        weight[:] = weight - lr * m / u


@register
class Nadam(Optimizer):
    """Nesterov Adam with the momentum schedule ``beta1*(1 - 0.5*0.96**(t*schedule_decay))``."""

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        schedule_decay=0.004,
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.0

    def create_state(self, index, weight):
        return (zeros_like(weight), zeros_like(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        g = _prepared(self, grad, weight, wd)
        mom_t = self.beta1 * (1.0 - 0.5 * 0.96 ** (t * self.schedule_decay))
        mom_next = self.beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * self.schedule_decay))
        self.m_schedule = self.m_schedule * mom_t
        m_schedule_next = self.m_schedule * mom_next
        m, v = state
        m[:] = self.beta1 * m + (1.0 - self.beta1) * g
        v[:] = self.beta2 * v + (1.0 - self.beta2) * g * g
        g_prime = g / (1.0 - self.m_schedule)
        m_prime = m / (1.0 - m_schedule_next)
        v_prime = v / (1.0 - self.beta2**t)
        m_bar = (1.0 - mom_t) * g_prime + mom_next * m_prime
        weight[:] = weight - lr * m_bar / (nd.sqrt(v_prime) + self.epsilon)


@register
class RMSProp(Optimizer):
    """RMSProp (``rmsprop_update``), or the centered variant of Graves (``rmspropalex_update``)
    with ``centered=True``; ``clip_weights`` bounds the weights after each step."""

    def __init__(
        self,
        learning_rate=0.001,
        gamma1=0.9,
        gamma2=0.9,
        epsilon=1e-8,
        centered=False,
        clip_weights=None,
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1, self.gamma2, self.epsilon = gamma1, gamma2, epsilon
        self.centered = centered
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        if self.centered:
            return (zeros_like(weight), zeros_like(weight), zeros_like(weight))
        return (zeros_like(weight),)

    def update(self, index, weight, grad, state):
        self._update_count(index)
        p = dict(
            lr=self._get_lr(index),
            wd=self._get_wd(index),
            gamma1=self.gamma1,
            epsilon=self.epsilon,
            **self._grad_params(),
        )
        if self.clip_weights:
            p["clip_weights"] = self.clip_weights
        if self.centered:
            fused("rmspropalex_update", [weight, grad, *state], gamma2=self.gamma2, **p)
        else:
            fused("rmsprop_update", [weight, grad, state[0]], **p)


@register
class Ftrl(Optimizer):
    """FTRL-proximal (``ftrl_update``) with L1 strength ``lamda1``."""

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1, self.beta = lamda1, beta

    def create_state(self, index, weight):
        return (zeros_like(weight), zeros_like(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        z, n = state
        fused(
            "ftrl_update",
            [weight, grad, z, n],
            lr=self._get_lr(index),
            wd=self._get_wd(index),
            lamda1=self.lamda1,
            beta=self.beta,
            **self._grad_params(),
        )


@register
class FTML(Optimizer):
    """Follow the Moving Leader (``ftml_update``)."""

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon

    def create_state(self, index, weight):
        return (zeros_like(weight), zeros_like(weight), zeros_like(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        t = self._index_update_count[index]
        gp = self._grad_params()
        fused(
            "ftml_update",
            [weight, grad, *state],
            lr=self._get_lr(index),
            wd=self._get_wd(index),
            beta1=self.beta1,
            beta2=self.beta2,
            epsilon=self.epsilon,
            t=t,
            rescale_grad=gp["rescale_grad"],
            clip_grad=gp["clip_gradient"],
        )


@register
class LAMB(Optimizer):
    """LAMB: an Adam direction (``lamb_update_phase1``) scaled per layer by
    ``|weight|/|direction|`` (``lamb_update_phase2``)."""

    def __init__(
        self,
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-6,
        lower_bound=None,
        upper_bound=None,
        bias_correction=True,
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.bias_correction = bias_correction

    def create_state(self, index, weight):
        return (zeros_like(weight), zeros_like(weight))

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        mean, var = state
        direction = nd.lamb_update_phase1(
            weight,
            grad,
            mean,
            var,
            beta1=self.beta1,
            beta2=self.beta2,
            epsilon=self.epsilon,
            t=t,
            bias_correction=self.bias_correction,
            wd=wd,
            **self._grad_params(),
        )
        bounds = {
            k: v
            for k, v in (("lower_bound", self.lower_bound), ("upper_bound", self.upper_bound))
            if v is not None
        }
        r1, r2 = nd.norm(weight), nd.norm(direction)
        fused("lamb_update_phase2", [weight, direction, r1, r2], lr=lr, **bounds)
