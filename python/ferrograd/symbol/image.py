"""``mx.sym.image``: the registered ``_image_<name>`` operators as ``sym.image.<name>`` (see
``nd.image``). Auto-names use the short name (``sym.image.to_tensor`` makes ``to_tensor0``)."""

from . import _OPS
from ._ops import _make

_PREFIX = "_image_"
globals().update({k[len(_PREFIX):]: _make(v._spec, k[len(_PREFIX):])
                  for k, v in _OPS.items() if k.startswith(_PREFIX)})
__all__ = sorted(k[len(_PREFIX):] for k in _OPS if k.startswith(_PREFIX))
