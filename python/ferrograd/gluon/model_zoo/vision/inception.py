"""Inception V3 (Szegedy et al. 2015); inputs are 299x299."""

from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained
from ._common import _CPU, HybridConcurrent

__all__ = ["Inception3", "inception_v3"]


def _conv_bn_relu(channels, kernel_size, strides=None, padding=None):
    """Bias-free convolution, BatchNorm (epsilon 1e-3), ReLU; unset options keep Conv2D's
    defaults."""
    options = {"strides": strides, "padding": padding}
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.Conv2D(channels=channels, kernel_size=kernel_size, use_bias=False,
                      **{k: v for k, v in options.items() if v is not None}),
            nn.BatchNorm(epsilon=0.001), nn.Activation("relu"))
    return seq


def _branch(pool, *convs):
    """An optional pool ('avg': 3x3/1 padded, 'max': 3x3/2) followed by convolutions given as
    (channels, kernel, strides, padding) tuples (None = default)."""
    seq = nn.HybridSequential(prefix="")
    if pool == "avg":
        seq.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        seq.add(nn.MaxPool2D(pool_size=3, strides=2))
    for conv in convs:
        seq.add(_conv_bn_relu(*conv))
    return seq


def _mixed(prefix, *branches):
    """Runs the branches side by side (each ``(pool, conv, ...)`` or a ready block) and
    concatenates them on the channel axis."""
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for branch in branches:
            out.add(branch() if callable(branch) else _branch(*branch))
    return out


def _block_a(pool_features, prefix):
    return _mixed(prefix,
                  (None, (64, 1)),
                  (None, (48, 1), (64, 5, None, 2)),
                  (None, (64, 1), (96, 3, None, 1), (96, 3, None, 1)),
                  ("avg", (pool_features, 1)))


def _block_b(prefix):
    return _mixed(prefix,
                  (None, (384, 3, 2)),
                  (None, (64, 1), (96, 3, None, 1), (96, 3, 2)),
                  ("max",))


def _block_c(channels_7x7, prefix):
    c = channels_7x7
    return _mixed(prefix,
                  (None, (192, 1)),
                  (None, (c, 1), (c, (1, 7), None, (0, 3)), (192, (7, 1), None, (3, 0))),
                  (None, (c, 1), (c, (7, 1), None, (3, 0)), (c, (1, 7), None, (0, 3)),
                   (c, (7, 1), None, (3, 0)), (192, (1, 7), None, (0, 3))),
                  ("avg", (192, 1)))


def _block_d(prefix):
    return _mixed(prefix,
                  (None, (192, 1), (320, 3, 2)),
                  (None, (192, 1), (192, (1, 7), None, (0, 3)), (192, (7, 1), None, (3, 0)),
                   (192, 3, 2)),
                  ("max",))


def _split_1x3_3x1(first):
    """``first`` then 1x3 and 3x1 convolutions (384 channels each) side by side."""
    def build():
        seq = nn.HybridSequential(prefix="")
        seq.add(_branch(None, *first))
        split = HybridConcurrent(axis=1, prefix="")
        split.add(_branch(None, (384, (1, 3), None, (0, 1))),
                  _branch(None, (384, (3, 1), None, (1, 0))))
        seq.add(split)
        return seq
    return build


def _block_e(prefix):
    return _mixed(prefix,
                  (None, (320, 1)),
                  _split_1x3_3x1([(384, 1)]),
                  _split_1x3_3x1([(448, 1), (384, 3, None, 1)]),
                  ("avg", (192, 1)))


class Inception3(HybridBlock):
    """Inception V3 without the auxiliary classifier."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(_conv_bn_relu(32, 3, 2), _conv_bn_relu(32, 3),
                              _conv_bn_relu(64, 3, None, 1), nn.MaxPool2D(pool_size=3, strides=2),
                              _conv_bn_relu(80, 1), _conv_bn_relu(192, 3),
                              nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_block_a(32, "A1_"), _block_a(64, "A2_"), _block_a(64, "A3_"),
                              _block_b("B_"), _block_c(128, "C1_"), _block_c(160, "C2_"),
                              _block_c(160, "C3_"), _block_c(192, "C4_"), _block_d("D_"),
                              _block_e("E1_"), _block_e("E2_"))
            self.features.add(nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=_CPU, root=None, **kwargs):
    """Inception V3; ``pretrained`` loads the published ImageNet weights from the model store
    (``root``, default ``$MXNET_HOME/models``) onto ``ctx``."""
    net = Inception3(**kwargs)
    if pretrained:
        load_pretrained(net, "inceptionv3", root, ctx)
    return net
