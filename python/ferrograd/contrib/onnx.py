"""``mx.contrib.onnx``: MXNet's older home of the ONNX exporter (now ``mx.onnx``)."""

from ..onnx import export_model, get_operator_support

__all__ = ["export_model", "get_operator_support"]
