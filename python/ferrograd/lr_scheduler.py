"""``mx.lr_scheduler``: learning rate as a function of the update count (MXNet 1.9.1's API).

Every scheduler supports a warmup: for the first ``warmup_steps`` updates the rate goes from
``warmup_begin_lr`` to ``base_lr`` linearly (``warmup_mode='linear'``) or stays at
``warmup_begin_lr`` (``'constant'``).
"""

import logging
import math

__all__ = [
    "LRScheduler",
    "FactorScheduler",
    "MultiFactorScheduler",
    "PolyScheduler",
    "CosineScheduler",
]


class LRScheduler:
    """Base class: ``scheduler(num_update)`` returns the learning rate for that update."""

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        self.base_lr = base_lr
        if not isinstance(warmup_steps, int):
            raise AssertionError(f"warmup_steps must be an int, got {type(warmup_steps).__name__}")
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError(
                f"Base lr ({base_lr}) has to be higher than warmup_begin_lr ({warmup_begin_lr})"
            )
        if self.warmup_steps < 0:
            raise ValueError(f"Warmup steps has to be positive or 0, got {warmup_steps}")
        if warmup_mode not in ("linear", "constant"):
            raise ValueError(
                f"Supports only linear and constant modes of warmup, got {warmup_mode!r}"
            )
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """The rate during warmup (``num_update < warmup_steps``)."""
        if num_update >= self.warmup_steps:
            raise AssertionError(
                f"num_update {num_update} is past the warmup ({self.warmup_steps} steps)"
            )
        if self.warmup_mode == "linear":
            increase = (
                (self.warmup_final_lr - self.warmup_begin_lr)
                * float(num_update)
                / float(self.warmup_steps)
            )
            return self.warmup_begin_lr + increase
        return self.warmup_begin_lr

    def __call__(self, num_update):
        raise NotImplementedError("must override this")


class FactorScheduler(LRScheduler):
    """Multiplies the rate by ``factor`` every ``step`` updates, never below ``stop_factor_lr``."""

    def __init__(
        self,
        step,
        factor=1,
        stop_factor_lr=1e-8,
        base_lr=0.01,
        warmup_steps=0,
        warmup_begin_lr=0,
        warmup_mode="linear",
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # Catch up with every step boundary passed since the last call.
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info(
                    "Update[%d]: now learning rate arrived at %0.5e, will not change in the future",
                    num_update,
                    self.base_lr,
                )
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiplies the rate by ``factor`` after each update count listed in ``step``."""

    def __init__(
        self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or len(step) < 1:
            raise AssertionError(f"step must be a non-empty list of update counts, got {step!r}")
        for i, s in enumerate(step):
            if i != 0 and step[i] <= step[i - 1]:
                raise ValueError("Schedule step must be an increasing integer list")
            if s < 1:
                raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind <= len(self.step) - 1:
            if num_update > self.step[self.cur_step_ind]:
                self.count = self.step[self.cur_step_ind]
                self.cur_step_ind += 1
                self.base_lr *= self.factor
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
            else:
                return self.base_lr
        return self.base_lr


class PolyScheduler(LRScheduler):
    """Polynomial decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates:
    ``final_lr + (base_lr - final_lr) * (1 - t/T)**pwr`` (t, T counted after the warmup)."""

    def __init__(
        self,
        max_update,
        base_lr=0.01,
        pwr=2,
        final_lr=0,
        warmup_steps=0,
        warmup_begin_lr=0,
        warmup_mode="linear",
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise AssertionError(f"max_update must be an int, got {type(max_update).__name__}")
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.power = pwr
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            frac = 1 - float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * pow(
                frac, self.power
            )
        return self.base_lr


class CosineScheduler(LRScheduler):
    """Cosine decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates."""

    def __init__(
        self,
        max_update,
        base_lr=0.01,
        final_lr=0,
        warmup_steps=0,
        warmup_begin_lr=0,
        warmup_mode="linear",
    ):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise AssertionError(f"max_update must be an int, got {type(max_update).__name__}")
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            cos = 1 + math.cos(math.pi * (num_update - self.warmup_steps) / self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * cos / 2
        return self.base_lr
