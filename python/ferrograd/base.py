"""Errors raised by ferrograd, compatible with ``mxnet.base``.

Every failure inside the native core surfaces as :class:`MXNetError` (a ``RuntimeError``, as in
MXNet). Shape, dtype, index and value errors use subclasses that *also* derive from the matching
Python built-in, so both ``except mx.base.MXNetError`` and ``except ValueError`` work.

It also holds the small type tuples and helpers of ``mxnet.base`` that user code imports
(``numeric_types``, ``string_types``, ``py_str``, ``_as_list``, ...).
"""

import ctypes
import os
import platform

import numpy as _np

# the types MXNet accepts as Python integers / numbers / strings (``long`` is ``int`` on Python 3)
integer_types = (int, int, _np.int32, _np.int64)
numeric_types = (float, int, int, _np.generic)
string_types = (str,)
# MXNet's default real type
mx_real_t = _np.float32


def py_str(x):
    """Decodes bytes from the C API as UTF-8 (a ``str`` passes through)."""
    return x.decode("utf-8") if isinstance(x, bytes | bytearray) else x


def c_str(string):
    """A ``ctypes.c_char_p`` holding ``string`` encoded as UTF-8."""
    return ctypes.c_char_p(string.encode("utf-8"))


def _as_list(obj):
    """``obj`` if it is a list or tuple, else ``[obj]``."""
    return obj if isinstance(obj, list | tuple) else [obj]


def check_call(ret):
    """MXNet checks a C API return code here. ferrograd raises at the failing call, so a return
    code other than 0 is the only thing left to report."""
    if ret != 0:
        raise MXNetError(f"check_call: the call returned {ret}")


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


class MemoryError_(MXNetError, MemoryError):  # noqa: N801
    """Array storage could not be allocated (the message names the op and the bytes)."""


class UnknownGradReq(ValueError_, KeyError):
    """A gradient request other than 'write', 'add', 'null' (a ``KeyError`` too, as in MXNet)."""

    __str__ = ValueError_.__str__  # KeyError would print the message quoted


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


def data_dir_default():
    """Where downloads (model files, datasets) go by default: ``~/.mxnet`` (``%APPDATA%/mxnet``
    on Windows)."""
    if platform.system() == "Windows":
        return os.path.join(os.environ.get("APPDATA", ""), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir():
    """The data directory: ``$MXNET_HOME`` if set, else ``data_dir_default()``."""
    return os.getenv("MXNET_HOME", data_dir_default())


__all__ = ["MXNetError", "ShapeError", "DTypeError", "NotImplementedForSymbol", "integer_types",
           "numeric_types", "string_types", "mx_real_t", "py_str", "c_str", "check_call"]


def _hand_classes_to_native():
    from . import _ferrograd

    _ferrograd._init_errors(MXNetError, ShapeError, DTypeError, IndexError_, ValueError_,
                            MemoryError_)


_hand_classes_to_native()
