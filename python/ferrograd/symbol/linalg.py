"""``mx.sym.linalg``: the registered ``_linalg_<name>`` operators as ``sym.linalg.<name>``
(MXNet's whole ``linalg`` family, see ``nd.linalg``). Auto-names use the short name
(``sym.linalg.syevd`` makes ``syevd0``), as MXNet's do."""

from . import _OPS
from ._ops import _make

_PREFIX = "_linalg_"
globals().update({k[len(_PREFIX):]: _make(v._spec, k[len(_PREFIX):])
                  for k, v in _OPS.items() if k.startswith(_PREFIX)})
__all__ = sorted(k[len(_PREFIX):] for k in _OPS if k.startswith(_PREFIX))
