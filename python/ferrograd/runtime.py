"""``mx.runtime``: which optional features this build has (``Features``, ``feature_list``).

The names are MXNet 1.9's, so code such as ``Features().is_enabled('CUDA')`` runs unchanged; the
values describe ferrograd honestly: a CPU-only Rust build with its own SIMD kernels (chosen at run
time), rayon threads instead of OpenMP, its own GEMM instead of a BLAS, and no CUDA, cuDNN,
oneDNN (MKLDNN), OpenCV or distributed kvstore.
"""

import collections
import platform

from . import _ferrograd

__all__ = ["Feature", "Features", "feature_list"]

# MXNet 1.9's feature names, in its order
_NAMES = (
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
    "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
    "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN", "OPENCV",
    "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE", "SIGNAL_HANDLER", "DEBUG",
    "TVM_OP",
)


def _enabled_names():
    info = _ferrograd.build_info()
    on = {"INT64_TENSOR_SIZE"}  # sizes and indices are 64-bit throughout
    if platform.machine().lower() in ("x86_64", "amd64"):
        on |= {"CPU_SSE", "CPU_SSE2", "SSE"}  # the x86-64 baseline every kernel may use
        if info.get("simd") in ("Avx2", "Avx512"):
            # the kernels dispatched at run time use AVX2 + FMA (and F16C conversions)
            on |= {"CPU_AVX", "CPU_AVX2", "F16C"}
    if info.get("debug_assertions"):
        on.add("DEBUG")
    return on


class Feature:
    """One feature: ``name`` and whether it is ``enabled``."""

    __slots__ = ("name", "enabled")

    def __init__(self, name, enabled):
        self.name = name
        self.enabled = bool(enabled)

    def __repr__(self):
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def feature_list():
    """Every known feature as a list of :class:`Feature`, in MXNet's order."""
    on = _enabled_names()
    return [Feature(name, name in on) for name in _NAMES]


class Features(collections.OrderedDict):
    """The features as an ordered mapping from name to :class:`Feature`."""

    def __init__(self):
        super().__init__((f.name, f) for f in feature_list())

    def __repr__(self):
        return repr(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether the feature is enabled; the name is case-insensitive. An unknown name raises
        ``RuntimeError`` listing the known ones."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature '{name}' is unknown, known features are: {list(self)}")
        return self[name].enabled
