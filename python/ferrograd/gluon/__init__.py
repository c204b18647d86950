"""``mx.gluon``: Parameters, Blocks and the ``nn`` layers (imperative execution for now)."""

from . import block, data, loss, model_zoo, nn, parameter, utils
from .block import Block, HybridBlock
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict

__all__ = ["block", "nn", "parameter", "data", "loss", "model_zoo", "utils", "Block", "HybridBlock",
           "Constant",
           "DeferredInitializationError", "Parameter", "ParameterDict"]
