"""Pieces shared by the model families."""

from ....context import cpu
from ... import nn

__all__ = ["HybridConcurrent"]

_CPU = cpu()  # the default ``ctx`` of the constructors


class HybridConcurrent(nn.HybridSequential):
    """Feeds the same input to every child and concatenates their outputs along ``axis``
    (MXNet's ``gluon.contrib.nn.HybridConcurrent``; the zoo always names it by prefix)."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[child(x) for child in self._children.values()], dim=self.axis)

