"""``mx.contrib``: MXNet's experimental and legacy APIs (``contrib.autograd``)."""

from . import autograd, onnx

__all__ = ["autograd", "onnx"]
