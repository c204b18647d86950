"""``mx.nd.image``: the registered ``_image_<name>`` operators as ``nd.image.<name>``
(``to_tensor``, ``normalize``, ``flip_left_right``, ``flip_top_bottom``), the one-pass image
operators behind Gluon's ``vision.transforms``; plus MXNet's random flips, which choose with
ferrograd's random generator (``mx.random.seed``)."""

from .. import ndarray as _nd  # partly initialised: the op functions are already in it
from .._ferrograd import OpFunc as _OpFunc

_PREFIX = "_image_"
_OPS = sorted(k[len(_PREFIX):] for k, v in vars(_nd).items()
              if k.startswith(_PREFIX) and isinstance(v, _OpFunc))
globals().update({k: getattr(_nd, _PREFIX + k) for k in _OPS})


def _heads():
    return float(_nd.random.uniform(0, 1, shape=(1,)).asscalar()) < 0.5


def random_flip_left_right(data):
    """``flip_left_right(data)`` with probability 0.5, else ``data`` itself (an NHWC batch is
    flipped as a whole; MXNet takes single HWC images only)."""
    return flip_left_right(data) if _heads() else data  # noqa: F821 - defined above


def random_flip_top_bottom(data):
    """``flip_top_bottom(data)`` with probability 0.5, else ``data`` itself (an NHWC batch is
    flipped as a whole; MXNet takes single HWC images only)."""
    return flip_top_bottom(data) if _heads() else data  # noqa: F821 - defined above


__all__ = _OPS + ["random_flip_left_right", "random_flip_top_bottom"]
