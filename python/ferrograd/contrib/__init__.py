"""``mx.contrib``: MXNet's experimental and legacy APIs (``contrib.autograd``)."""

from . import autograd

__all__ = ["autograd"]
