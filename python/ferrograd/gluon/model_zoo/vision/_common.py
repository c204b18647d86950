"""Pieces shared by the model families."""

from ....context import cpu
from ... import nn
from ...block import HybridBlock

__all__ = ["Concurrent", "ReLU6"]

_CPU = cpu()  # the default ``ctx`` of the constructors


class Concurrent(nn.HybridSequential):
    """Feeds the same input to every child and concatenates their outputs along ``axis``
    (MXNet's ``gluon.contrib.nn.HybridConcurrent``; the zoo always names it by prefix)."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def _alias(self):
        return "hybridconcurrent"

    def hybrid_forward(self, F, x):
        return F.concat(*[child(x) for child in self._children.values()], dim=self.axis)


class ReLU6(HybridBlock):
    """``min(max(x, 0), 6)``."""

    def hybrid_forward(self, F, x):
        return F.clip(x, 0, 6, name="relu6")

    def _alias(self):
        return "relu6"
