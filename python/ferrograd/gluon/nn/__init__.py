"""``gluon.nn``: neural-network layers."""

from .._export import SymbolBlock
from ..block import Block, HybridBlock
from .activations import ELU, GELU, SELU, Activation, LeakyReLU, PReLU, Swish
from .basic_layers import (
    Dense,
    Dropout,
    Embedding,
    Flatten,
    HybridLambda,
    HybridSequential,
    Identity,
    Lambda,
    Sequential,
)
from .conv_layers import *  # noqa: F403
from .conv_layers import __all__ as _conv_all
from .normalization import BatchNorm, GroupNorm, InstanceNorm, LayerNorm

__all__ = ["Activation", "LeakyReLU", "Dense", "Dropout", "Flatten", "HybridLambda",
           "HybridSequential", "Identity", "Lambda", "Sequential", "Block", "HybridBlock",
           "SymbolBlock",
           "Embedding",
           "BatchNorm", "InstanceNorm", "LayerNorm", "GroupNorm", "PReLU", "ELU", "SELU", "GELU",
           "Swish"]
__all__ += _conv_all
