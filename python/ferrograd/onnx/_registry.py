"""The op converter registry and the parsing of MXNet's string attributes.

A converter is ``fn(ctx, node)``: it reads ``node`` (a :class:`Node`: the MXNet op, its
attributes, its inputs' ONNX names, shapes and dtypes) and emits ONNX nodes through ``ctx``
(the graph being built, see ``_graph.py``), ending with ones that write ``node.outputs``.
"""

import ast

from ..base import MXNetError

CONVERTERS = {}


def register(*op_names):
    """Registers a converter for MXNet ops named ``op_names`` (canonical names and aliases)."""
    def wrap(fn):
        for name in op_names:
            CONVERTERS[name] = fn
        return fn
    return wrap


class UnsupportedError(MXNetError, AttributeError):
    """An op, or an attribute value of an op, that has no ONNX translation."""


class Node:
    """One MXNet op node as a converter sees it."""

    __slots__ = ("name", "op", "attrs", "inputs", "input_shapes", "input_dtypes", "outputs",
                 "output_shapes", "output_dtypes")

    def __init__(self, name, op, attrs, inputs, input_shapes, input_dtypes, outputs,
                 output_shapes, output_dtypes):
        self.name, self.op, self.attrs = name, op, attrs
        self.inputs, self.input_shapes, self.input_dtypes = inputs, input_shapes, input_dtypes
        self.outputs, self.output_shapes = outputs, output_shapes
        self.output_dtypes = output_dtypes

    def unsupported(self, what):
        return UnsupportedError(f"ONNX export: operator {self.op} (node '{self.name}'): {what} "
                                "has no ONNX translation")

    # -- attributes, with MXNet's defaults --------------------------------------------------------

    def _raw(self, key):
        value = self.attrs.get(key)
        return None if value is None or value == "None" else value

    def str(self, key, default=None):
        value = self._raw(key)
        return default if value is None else value

    def int(self, key, default=None):
        value = self._raw(key)
        return default if value is None else int(float(value))

    def float(self, key, default=None):
        value = self._raw(key)
        return default if value is None else float(value)

    def bool(self, key, default=False):
        value = self._raw(key)
        if value is None:
            return default
        return value.strip().lower() in ("true", "1")

    def tuple(self, key, default=()):
        """A shape-like attribute: ``"(3, 3)"``, ``"[1,2]"`` or a single number."""
        value = self._raw(key)
        if value is None:
            return tuple(default)
        parsed = ast.literal_eval(value.strip())
        if isinstance(parsed, (int, float)):
            return (int(parsed),)
        return tuple(int(v) for v in parsed)

    def axes(self, key):
        """A reduction ``axis`` attribute: ``None`` (all axes) or a tuple of ints."""
        value = self._raw(key)
        if value is None or value.strip() in ("()", "[]"):
            return None
        return self.tuple(key)

    @property
    def ndim(self):
        return len(self.input_shapes[0])
