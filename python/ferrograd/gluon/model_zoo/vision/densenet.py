"""DenseNet (Huang et al. 2016): each layer's output is concatenated to its input."""

from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained
from ._common import _CPU, HybridConcurrent

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _dense_layer(growth_rate, bn_size, dropout):
    """BN-ReLU-1x1 (``bn_size * growth_rate`` channels), BN-ReLU-3x3 (``growth_rate``), whose
    output is concatenated to the layer's input."""
    new = nn.HybridSequential(prefix="")
    new.add(nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(bn_size * growth_rate, kernel_size=1, use_bias=False),
            nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(growth_rate, kernel_size=3, padding=1, use_bias=False))
    if dropout:
        new.add(nn.Dropout(dropout))
    both = HybridConcurrent(axis=1, prefix="")
    both.add(nn.Identity(), new)
    return both


def _dense_block(num_layers, bn_size, growth_rate, dropout, index):
    block = nn.HybridSequential(prefix=f"stage{index}_")
    with block.name_scope():
        for _ in range(num_layers):
            block.add(_dense_layer(growth_rate, bn_size, dropout))
    return block


def _transition(channels):
    """BN-ReLU-1x1 convolution to ``channels``, then a 2x2 average pool."""
    seq = nn.HybridSequential(prefix="")
    seq.add(nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(channels, kernel_size=1, use_bias=False),
            nn.AvgPool2D(pool_size=2, strides=2))
    return seq


class DenseNet(HybridBlock):
    """DenseNet: a stem of ``num_init_features`` channels, dense blocks of ``block_config``
    layers each adding ``growth_rate`` channels, transitions halving the channels in between,
    and a 7x7 average pool before the classifier (so inputs are about 224x224)."""

    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0,
                 classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3,
                                        use_bias=False),
                              nn.BatchNorm(), nn.Activation("relu"),
                              nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            width = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_dense_block(num_layers, bn_size, growth_rate, dropout, i + 1))
                width += num_layers * growth_rate
                if i != len(block_config) - 1:
                    width //= 2
                    self.features.add(_transition(width))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(pool_size=7),
                              nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (stem channels, growth rate, layers per dense block)
densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=_CPU, root=None, **kwargs):
    """DenseNet with ``num_layers`` 121, 161, 169 or 201; ``pretrained`` loads the published
    ImageNet weights from the model store."""
    num_init_features, growth_rate, block_config = densenet_spec[num_layers]
    net = DenseNet(num_init_features, growth_rate, block_config, **kwargs)
    if pretrained:
        load_pretrained(net, f"densenet{num_layers}", root, ctx)
    return net


def densenet121(**kwargs):
    """DenseNet-121 (see ``get_densenet``)."""
    return get_densenet(121, **kwargs)


def densenet161(**kwargs):
    """DenseNet-161."""
    return get_densenet(161, **kwargs)


def densenet169(**kwargs):
    """DenseNet-169."""
    return get_densenet(169, **kwargs)


def densenet201(**kwargs):
    """DenseNet-201."""
    return get_densenet(201, **kwargs)
