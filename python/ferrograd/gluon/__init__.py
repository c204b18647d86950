"""``mx.gluon``: Parameters, Blocks and the ``nn`` layers (imperative execution for now)."""

from . import block, data, loss, nn, parameter
from .block import Block, HybridBlock
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict

__all__ = ["block", "nn", "parameter", "data", "loss", "Block", "HybridBlock", "Constant",
           "DeferredInitializationError", "Parameter", "ParameterDict"]
