"""``mx.optimizer``: the optimizers, their registry, and ``Updater`` (MXNet 1.9.1's API).

The base class and updater live in ``optimizer.py``; the SGD family in ``sgd.py``; the adaptive
methods in ``adaptive.py``. Every update with a fused op runs it in Rust, in place.
"""

from . import optimizer
from .adaptive import FTML, LAMB, AdaDelta, AdaGrad, Adam, Adamax, Ftrl, Nadam, RMSProp
from .optimizer import Optimizer, Updater, create, get_updater, register
from .sgd import DCASGD, LARS, NAG, SGD, SGLD, Signum, Test, ccSGD

__all__ = [
    "Optimizer",
    "Updater",
    "create",
    "get_updater",
    "register",
    "optimizer",
    "SGD",
    "ccSGD",
    "NAG",
    "Signum",
    "LARS",
    "DCASGD",
    "SGLD",
    "Test",
    "Adam",
    "AdaGrad",
    "AdaDelta",
    "Adamax",
    "Nadam",
    "RMSProp",
    "Ftrl",
    "FTML",
    "LAMB",
]
