"""``mx.gluon``: Parameters, Blocks (hybridized onto the Executor), SymbolBlock, ``nn`` layers."""

from . import block, data, loss, model_zoo, nn, parameter, utils
from .block import Block, HybridBlock
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict

__all__ = ["block", "nn", "parameter", "data", "loss", "model_zoo", "utils", "Block", "HybridBlock",
           "Constant",
           "DeferredInitializationError", "Parameter", "ParameterDict"]
from ._export import SymbolBlock  # noqa: E402

block.SymbolBlock = SymbolBlock  # MXNet's home of the class

__all__ += ["SymbolBlock"]
