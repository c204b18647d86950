"""SqueezeNet 1.0 (Iandola et al. 2016) and 1.1 (fewer operations, same accuracy)."""

from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained
from ._common import _CPU, HybridConcurrent

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


def _conv_relu(channels, kernel_size, padding=0):
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(channels, kernel_size, padding=padding), nn.Activation("relu"))
    return seq


def _fire(squeeze, expand1x1, expand3x3):
    """A 1x1 squeeze convolution feeding 1x1 and 3x3 expand convolutions, concatenated."""
    seq = nn.HybridSequential(prefix="")
    seq.add(_conv_relu(squeeze, 1))
    expand = HybridConcurrent(axis=1, prefix="")
    expand.add(_conv_relu(expand1x1, 1), _conv_relu(expand3x3, 3, 1))
    seq.add(expand)
    return seq


def _pool():
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


class SqueezeNet(HybridBlock):
    """SqueezeNet ``version`` '1.0' or '1.1'; the classifier is a 1x1 convolution with ReLU and
    a 13x13 average pool (so inputs are about 224x224)."""

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        if version not in ("1.0", "1.1"):
            raise AssertionError(f"Unsupported SqueezeNet version {version}:1.0 or 1.1 expected")
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            f = self.features
            if version == "1.0":
                f.add(nn.Conv2D(96, kernel_size=7, strides=2), nn.Activation("relu"), _pool())
                f.add(_fire(16, 64, 64), _fire(16, 64, 64), _fire(32, 128, 128), _pool())
                f.add(_fire(32, 128, 128), _fire(48, 192, 192), _fire(48, 192, 192),
                      _fire(64, 256, 256), _pool(), _fire(64, 256, 256))
            else:
                f.add(nn.Conv2D(64, kernel_size=3, strides=2), nn.Activation("relu"), _pool())
                f.add(_fire(16, 64, 64), _fire(16, 64, 64), _pool())
                f.add(_fire(32, 128, 128), _fire(32, 128, 128), _pool())
                f.add(_fire(48, 192, 192), _fire(48, 192, 192), _fire(64, 256, 256),
                      _fire(64, 256, 256))
            f.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"),
                            nn.AvgPool2D(13), nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=_CPU, root=None, **kwargs):
    """SqueezeNet '1.0' or '1.1'; ``pretrained`` loads the published ImageNet weights."""
    net = SqueezeNet(version, **kwargs)
    if pretrained:
        load_pretrained(net, f"squeezenet{version}", root, ctx)
    return net


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0 (see ``get_squeezenet``)."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1."""
    return get_squeezenet("1.1", **kwargs)
