"""``mx.sym.linalg``: the registered ``_linalg_<name>`` operators as ``sym.linalg.<name>``."""

from . import _OPS

_PREFIX = "_linalg_"
globals().update({k[len(_PREFIX):]: v for k, v in _OPS.items() if k.startswith(_PREFIX)})
__all__ = sorted(k[len(_PREFIX):] for k in _OPS if k.startswith(_PREFIX))
