"""Devices. ferrograd runs on the CPU only.

``gpu(i)`` makes a context object, as in MXNet (code may build one, compare it, or set it as the
default), but placing an array on it raises ``MXNetError`` ("CPU only"). The default context is
per thread: ``with ctx:``, ``Context.default_ctx = ctx`` and ``test_utils.set_default_context``
change it for the calling thread only.
"""

import threading
import warnings

from .base import MXNetError

_CPU_ONLY = "ferrograd is CPU only: gpu() contexts cannot hold arrays; use mx.cpu()"


class _ContextMeta(type):
    """Gives ``Context`` the class-level property ``default_ctx`` (MXNet 1.x API)."""

    @property
    def default_ctx(cls):
        warnings.warn("Context.default_ctx is deprecated: use mx.current_context() to read the "
                      "default context and test_utils.set_default_context to set it",
                      DeprecationWarning, stacklevel=2)
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx):
        warnings.warn("Context.default_ctx is deprecated: use test_utils.set_default_context",
                      DeprecationWarning, stacklevel=2)
        cls._default_ctx.value = _check_context_type(ctx)


class Context(metaclass=_ContextMeta):
    """A device context (``cpu(0)``), compatible with ``mxnet.Context``."""

    devtype2str = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type = {v: k for k, v in devtype2str.items()}
    _default_ctx = threading.local()

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if device_type not in self.devstr2type:
            raise KeyError(device_type)
        self.device_type = device_type
        self.device_id = int(device_id)
        self.device_typeid = self.devstr2type[device_type]
        self._old_ctx = None

    def __eq__(self, other):
        return (
            isinstance(other, Context)
            and self.device_type == other.device_type
            and self.device_id == other.device_id
        )

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    __str__ = __repr__

    def __enter__(self):
        self._old_ctx = current_context()
        Context._default_ctx.value = self
        return self

    def __exit__(self, *exc):
        Context._default_ctx.value = self._old_ctx

    def empty_cache(self):
        """Releases cached device memory: nothing to do, ferrograd keeps no memory pool."""


def cpu(device_id=0):
    """The CPU context."""
    return Context("cpu", device_id)


def cpu_pinned(device_id=0):
    """Pinned CPU memory (same as ``cpu`` here)."""
    return Context("cpu_pinned", device_id)


def gpu(device_id=0):
    """A GPU context object. ferrograd has no GPU backend: arrays cannot be placed on it."""
    return Context("gpu", device_id)


def num_gpus():
    """Number of GPUs ferrograd can use: always 0."""
    return 0


def gpu_memory_info(device_id=0):
    """MXNet returns a GPU's (free, total) memory; ferrograd has no GPU."""
    raise MXNetError(f"ferrograd is CPU only: there is no gpu({device_id}) to query")


def current_context():
    """The default context of this thread (``cpu(0)`` unless changed)."""
    ctx = getattr(Context._default_ctx, "value", None)
    return ctx if ctx is not None else Context("cpu", 0)


def _check_context_type(ctx):
    if not isinstance(ctx, Context):
        raise TypeError(f"expected a Context, got {type(ctx).__name__}")
    return ctx


def _check_context(ctx):
    """Validates a context that will hold an array (``ctx=``, ``as_in_context``, ``copyto``)."""
    _check_context_type(ctx)
    if ctx.device_type == "gpu":
        raise MXNetError(f"{_CPU_ONLY} (got {ctx})")
    return ctx


def _hand_hooks_to_native():
    from . import _ferrograd

    _ferrograd._init_context(cpu, _check_context)


_hand_hooks_to_native()
