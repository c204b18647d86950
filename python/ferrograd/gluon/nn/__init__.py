"""``gluon.nn``: neural-network layers."""

from ..block import Block, HybridBlock
from .activations import Activation, LeakyReLU
from .basic_layers import (
    Dense,
    Dropout,
    Flatten,
    HybridLambda,
    HybridSequential,
    Identity,
    Lambda,
    Sequential,
)

__all__ = ["Activation", "LeakyReLU", "Dense", "Dropout", "Flatten", "HybridLambda",
           "HybridSequential", "Identity", "Lambda", "Sequential", "Block", "HybridBlock"]
