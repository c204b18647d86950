"""``gluon.model_zoo.vision``: image classification models with MXNet's structure and parameter
names, so MXNet's published ``.params`` files load into them.

    net = vision.get_model("resnet18_v1", pretrained=True)   # weights from the model store
    net = vision.resnet18_v1(classes=10)                     # fresh, to train
"""

# Modules first: the star imports then rebind e.g. ``vision.alexnet`` to the function, as
# in MXNet.
from . import alexnet as _alexnet
from . import densenet as _densenet
from . import inception as _inception
from . import mobilenet as _mobilenet
from . import resnet as _resnet
from . import squeezenet as _squeezenet
from . import vgg as _vgg
from .alexnet import *  # noqa: F403
from .densenet import *  # noqa: F403
from .inception import *  # noqa: F403
from .mobilenet import *  # noqa: F403
from .resnet import *  # noqa: F403
from .squeezenet import *  # noqa: F403
from .vgg import *  # noqa: F403

_MODELS = {
    **{f"resnet{depth}_v{version}": getattr(_resnet, f"resnet{depth}_v{version}")
       for version in (1, 2) for depth in (18, 34, 50, 101, 152)},
    **{f"vgg{depth}{bn}": getattr(_vgg, f"vgg{depth}{bn}")
       for depth in (11, 13, 16, 19) for bn in ("", "_bn")},
    "alexnet": _alexnet.alexnet,
    **{f"densenet{depth}": getattr(_densenet, f"densenet{depth}")
       for depth in (121, 161, 169, 201)},
    "squeezenet1.0": _squeezenet.squeezenet1_0,
    "squeezenet1.1": _squeezenet.squeezenet1_1,
    "inceptionv3": _inception.inception_v3,
    **{f"mobilenet{width}": getattr(_mobilenet, f"mobilenet{width.replace('.', '_')}")
       for width in ("1.0", "0.75", "0.5", "0.25")},
    **{f"mobilenetv2_{width}": getattr(_mobilenet, f"mobilenet_v2_{width.replace('.', '_')}")
       for width in ("1.0", "0.75", "0.5", "0.25")},
}


def get_model(name, **kwargs):
    """The model called ``name`` (case-insensitive, e.g. ``'resnet50_v1'``, ``'mobilenet0.25'``,
    ``'squeezenet1.1'``, ``'inceptionv3'``), built with ``kwargs`` (``classes``, ``pretrained``,
    ``ctx``, ``root``, ...)."""
    name = name.lower()
    if name not in _MODELS:
        options = "\n\t".join(sorted(_MODELS))
        raise ValueError(f"Model {name} is not supported. Available options are\n\t{options}")
    return _MODELS[name](**kwargs)


__all__ = ["get_model"]
for _module in (_alexnet, _densenet, _inception, _mobilenet, _resnet, _squeezenet, _vgg):
    __all__ += _module.__all__
