"""Errors raised by ferrograd, compatible with ``mxnet.base``.

Every failure inside the native core surfaces as :class:`MXNetError` (a ``RuntimeError``, as in
MXNet). Shape, dtype, index and value errors use subclasses that *also* derive from the matching
Python built-in, so both ``except mx.base.MXNetError`` and ``except ValueError`` work.
"""


class MXNetError(RuntimeError):
    """Default error raised by ferrograd operations (MXNet-compatible)."""


class ShapeError(MXNetError, ValueError):
    """Incompatible or invalid shapes."""


class DTypeError(MXNetError, TypeError):
    """Unsupported or mismatched dtypes."""


class IndexError_(MXNetError, IndexError):  # noqa: N801 - exported as ``IndexError`` below
    """Out-of-range or malformed index."""


class ValueError_(MXNetError, ValueError):  # noqa: N801
    """Invalid parameter value."""


class NotImplementedForSymbol(MXNetError):
    """Raised for NDArray-only methods called on a Symbol."""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function = function.__name__ if callable(function) else str(function)
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = f"Function {self.function}"
        if self.alias:
            msg += f' (namely operator "{self.alias}")'
        if self.args:
            msg += " with arguments ({})".format(", ".join(self.args))
        msg += " is not implemented for Symbol and only available in NDArray."
        return msg


__all__ = ["MXNetError", "ShapeError", "DTypeError", "NotImplementedForSymbol"]


def _hand_classes_to_native():
    from . import _ferrograd

    _ferrograd._init_errors(MXNetError, ShapeError, DTypeError, IndexError_, ValueError_)


_hand_classes_to_native()
