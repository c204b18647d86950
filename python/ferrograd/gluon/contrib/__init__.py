"""``mx.gluon.contrib``: layers MXNet 1.9 kept outside ``gluon.nn``."""

from . import nn

__all__ = ["nn"]
