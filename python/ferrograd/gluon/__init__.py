"""``mx.gluon``: Parameters, Blocks (hybridized onto the Executor), SymbolBlock, ``nn`` layers."""

from . import block, contrib, data, loss, model_zoo, nn, parameter, rnn, trainer, utils
from ._export import SymbolBlock
from .block import Block, HybridBlock
from .parameter import Constant, DeferredInitializationError, Parameter, ParameterDict
from .trainer import Trainer

block.SymbolBlock = SymbolBlock  # MXNet's home of the class

__all__ = ["block", "contrib", "nn", "parameter", "data", "loss", "model_zoo", "utils", "Block",
           "HybridBlock", "SymbolBlock", "Constant", "DeferredInitializationError", "Parameter",
           "ParameterDict", "rnn", "trainer", "Trainer"]
