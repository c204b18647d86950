"""``mx.nd.linalg``: the registered ``_linalg_<name>`` operators as ``nd.linalg.<name>``:
MXNet's whole family (``gemm``, ``gemm2``, ``syrk``, ``trmm``, ``trsm``, ``potrf``, ``potri``,
``inverse``, ``det``, ``slogdet``, ``syevd``, ``gelqf``, ``sumlogdiag``, ``extractdiag``,
``makediag``, ``extracttrian``, ``maketrian``), batched over the leading axes, with gradients."""

from .. import ndarray as _nd  # partly initialised: the op functions are already in it
from .._ferrograd import OpFunc as _OpFunc

_PREFIX = "_linalg_"
__all__ = sorted(k[len(_PREFIX):] for k, v in vars(_nd).items()
                 if k.startswith(_PREFIX) and isinstance(v, _OpFunc))
globals().update({k: getattr(_nd, _PREFIX + k) for k in __all__})
