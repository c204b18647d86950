"""``mx.contrib``: MXNet's experimental and legacy APIs (``contrib.autograd``)."""

from . import amp, autograd, onnx

__all__ = ["autograd", "onnx", "amp"]
