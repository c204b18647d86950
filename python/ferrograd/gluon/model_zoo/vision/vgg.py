"""VGG (Simonyan & Zisserman 2014), optionally with BatchNorm after each convolution."""

from ....initializer import Xavier
from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained
from ._common import _CPU

__all__ = ["VGG", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn",
           "vgg19_bn", "get_vgg"]


def _conv_stack(layers, filters, batch_norm):
    """Per group ``i``: ``layers[i]`` 3x3 convolutions of ``filters[i]`` channels, then a 2x2
    max pool."""
    seq = nn.HybridSequential(prefix="")
    for count, width in zip(layers, filters, strict=True):
        for _ in range(count):
            seq.add(nn.Conv2D(width, kernel_size=3, padding=1,
                              weight_initializer=Xavier(rnd_type="gaussian", factor_type="out",
                                                        magnitude=2),
                              bias_initializer="zeros"))
            if batch_norm:
                seq.add(nn.BatchNorm())
            seq.add(nn.Activation("relu"))
        seq.add(nn.MaxPool2D(strides=2))
    return seq


class VGG(HybridBlock):
    """VGG: ``layers`` convolutions per group, ``filters`` channels per group, then two
    4096-unit dense layers with dropout and the ``classes``-way output."""

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError(f"VGG: layers and filters need one entry per group, got "
                             f"layers={list(layers)} filters={list(filters)}")
        with self.name_scope():
            self.features = _conv_stack(layers, filters, batch_norm)
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                           bias_initializer="zeros"),
                                  nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal",
                                   bias_initializer="zeros")

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (convolutions per group, channels per group)
vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=_CPU, root=None, **kwargs):
    """VGG with ``num_layers`` 11, 13, 16 or 19 (``batch_norm=True`` for the _bn variants);
    ``pretrained`` loads the published ImageNet weights from the model store."""
    if num_layers not in vgg_spec:
        raise KeyError(num_layers)
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        suffix = "_bn" if kwargs.get("batch_norm") else ""
        load_pretrained(net, f"vgg{num_layers}{suffix}", root, ctx)
    return net


def vgg11(**kwargs):
    """VGG-11 (see ``get_vgg``)."""
    return get_vgg(11, **kwargs)


def vgg13(**kwargs):
    """VGG-13."""
    return get_vgg(13, **kwargs)


def vgg16(**kwargs):
    """VGG-16."""
    return get_vgg(16, **kwargs)


def vgg19(**kwargs):
    """VGG-19."""
    return get_vgg(19, **kwargs)


def vgg11_bn(**kwargs):
    """VGG-11 with BatchNorm."""
    return get_vgg(11, **{**kwargs, "batch_norm": True})


def vgg13_bn(**kwargs):
    """VGG-13 with BatchNorm."""
    return get_vgg(13, **{**kwargs, "batch_norm": True})


def vgg16_bn(**kwargs):
    """VGG-16 with BatchNorm."""
    return get_vgg(16, **{**kwargs, "batch_norm": True})


def vgg19_bn(**kwargs):
    """VGG-19 with BatchNorm."""
    return get_vgg(19, **{**kwargs, "batch_norm": True})
