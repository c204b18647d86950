"""``mx.gluon``: Parameters, Blocks (hybridized onto the Executor), SymbolBlock, ``nn`` layers."""

from . import block, nn, parameter
from .block import Block, HybridBlock
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict

__all__ = ["block", "nn", "parameter", "Block", "HybridBlock", "Constant",
           "DeferredInitializationError", "Parameter", "ParameterDict"]
from ._export import SymbolBlock  # noqa: E402

block.SymbolBlock = SymbolBlock  # MXNet's home of the class

__all__ += ["SymbolBlock"]
