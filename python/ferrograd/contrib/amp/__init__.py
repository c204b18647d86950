"""``mx.contrib.amp``: MXNet's automatic mixed precision, not implemented in ferrograd.

The module exists so that scripts importing it (without calling it) run unchanged; every function
raises ``NotImplementedError`` naming itself. Train in float32 (or cast explicitly).
"""

from . import amp
from .amp import *  # noqa: F403 - MXNet re-exports the functions here

__all__ = ["amp"] + amp.__all__
