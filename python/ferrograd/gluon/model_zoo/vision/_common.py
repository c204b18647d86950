"""Pieces shared by the model families."""

from ....context import cpu
from ...contrib.nn import HybridConcurrent

__all__ = ["HybridConcurrent"]

_CPU = cpu()  # the default ``ctx`` of the constructors
