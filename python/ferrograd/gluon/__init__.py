"""``mx.gluon``: Parameters, Blocks and the ``nn`` layers (imperative execution for now)."""

from . import block, nn, parameter, trainer
from .block import Block, HybridBlock
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict
from .trainer import Trainer

__all__ = ["block", "nn", "parameter", "Block", "HybridBlock", "Constant",
           "DeferredInitializationError", "Parameter", "ParameterDict", "trainer", "Trainer"]
