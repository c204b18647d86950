"""MobileNet (Howard et al. 2017) and MobileNetV2 (Sandler et al. 2018) with width
multipliers."""

from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained
from ._common import _CPU

__all__ = ["MobileNet", "MobileNetV2", "mobilenet1_0", "mobilenet_v2_1_0", "mobilenet0_75",
           "mobilenet_v2_0_75", "mobilenet0_5", "mobilenet_v2_0_5", "mobilenet0_25",
           "mobilenet_v2_0_25", "get_mobilenet", "get_mobilenet_v2"]


class RELU6(HybridBlock):
    """``min(max(x, 0), 6)``."""

    def hybrid_forward(self, F, x):
        return F.clip(x, 0, 6, name="relu6")


def _conv_bn(seq, channels, kernel=1, stride=1, pad=0, groups=1, active=True, relu6=False):
    """Appends a bias-free convolution, BatchNorm and (if ``active``) ReLU or ReLU6."""
    seq.add(nn.Conv2D(channels, kernel, stride, pad, groups=groups, use_bias=False),
            nn.BatchNorm(scale=True))
    if active:
        seq.add(RELU6() if relu6 else nn.Activation("relu"))


def _depthwise_separable(seq, dw_channels, channels, stride, relu6=False):
    """A 3x3 depthwise convolution then a 1x1 pointwise one, each with BN and activation."""
    _conv_bn(seq, dw_channels, kernel=3, stride=stride, pad=1, groups=dw_channels, relu6=relu6)
    _conv_bn(seq, channels, relu6=relu6)


class LinearBottleneck(HybridBlock):
    """MobileNetV2's inverted residual: 1x1 expansion by ``t``, 3x3 depthwise (``stride``),
    linear 1x1 projection to ``channels``; the input is added back when shapes allow."""

    def __init__(self, in_channels, channels, t, stride, **kwargs):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        with self.name_scope():
            self.out = nn.HybridSequential()
            expanded = in_channels * t
            _conv_bn(self.out, expanded, relu6=True)
            _conv_bn(self.out, expanded, kernel=3, stride=stride, pad=1, groups=expanded,
                     relu6=True)
            _conv_bn(self.out, channels, active=False, relu6=True)

    def hybrid_forward(self, F, x):
        out = self.out(x)
        return F.elemwise_add(out, x) if self.use_shortcut else out


class MobileNet(HybridBlock):
    """MobileNet V1: a 3x3/2 stem then 13 depthwise-separable layers; every width is scaled by
    ``multiplier`` (at least 0.25)."""

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        dw_channels = [int(c * multiplier)
                       for c in [32, 64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024]]
        channels = [int(c * multiplier)
                    for c in [64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2]
        strides = [1, 2] * 3 + [1] * 5 + [2, 1]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                _conv_bn(self.features, int(32 * multiplier), kernel=3, pad=1, stride=2)
                for dwc, c, s in zip(dw_channels, channels, strides, strict=True):
                    _depthwise_separable(self.features, dwc, c, s)
                self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class MobileNetV2(HybridBlock):
    """MobileNet V2: a 3x3/2 stem, 17 linear bottlenecks, a 1x1 convolution to 1280 channels
    (scaled up only for ``multiplier > 1``) and a 1x1 convolution classifier."""

    def __init__(self, multiplier=1.0, classes=1000, **kwargs):
        super().__init__(**kwargs)
        in_channels = [int(c * multiplier)
                       for c in [32, 16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3]
        channels = [int(c * multiplier)
                    for c in [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3 + [320]]
        expansions = [1] + [6] * 16
        strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="features_")
            with self.features.name_scope():
                _conv_bn(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1,
                         relu6=True)
                for in_c, c, t, s in zip(in_channels, channels, expansions, strides,
                                         strict=True):
                    self.features.add(LinearBottleneck(in_channels=in_c, channels=c, t=t,
                                                       stride=s))
                last = int(1280 * multiplier) if multiplier > 1.0 else 1280
                _conv_bn(self.features, last, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix="output_")
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix="pred_"),
                                nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def _version_suffix(multiplier):
    """0.25 -> '0.25', 0.5 -> '0.5', 1.0 -> '1.0' (the published files' names)."""
    suffix = f"{multiplier:.2f}"
    return suffix[:-1] if suffix in ("1.00", "0.50") else suffix


def get_mobilenet(multiplier, pretrained=False, ctx=_CPU, root=None, **kwargs):
    """MobileNet V1 of width ``multiplier``; ``pretrained`` loads the published ImageNet
    weights (1.0, 0.75, 0.5, 0.25) from the model store."""
    net = MobileNet(multiplier, **kwargs)
    if pretrained:
        load_pretrained(net, f"mobilenet{_version_suffix(multiplier)}", root, ctx)
    return net


def get_mobilenet_v2(multiplier, pretrained=False, ctx=_CPU, root=None, **kwargs):
    """MobileNet V2 of width ``multiplier``; ``pretrained`` loads the published weights."""
    net = MobileNetV2(multiplier, **kwargs)
    if pretrained:
        load_pretrained(net, f"mobilenetv2_{_version_suffix(multiplier)}", root, ctx)
    return net


def mobilenet1_0(**kwargs):
    """MobileNet V1, width 1.0."""
    return get_mobilenet(1.0, **kwargs)


def mobilenet0_75(**kwargs):
    """MobileNet V1, width 0.75."""
    return get_mobilenet(0.75, **kwargs)


def mobilenet0_5(**kwargs):
    """MobileNet V1, width 0.5."""
    return get_mobilenet(0.5, **kwargs)


def mobilenet0_25(**kwargs):
    """MobileNet V1, width 0.25."""
    return get_mobilenet(0.25, **kwargs)


def mobilenet_v2_1_0(**kwargs):
    """MobileNet V2, width 1.0."""
    return get_mobilenet_v2(1.0, **kwargs)


def mobilenet_v2_0_75(**kwargs):
    """MobileNet V2, width 0.75."""
    return get_mobilenet_v2(0.75, **kwargs)


def mobilenet_v2_0_5(**kwargs):
    """MobileNet V2, width 0.5."""
    return get_mobilenet_v2(0.5, **kwargs)


def mobilenet_v2_0_25(**kwargs):
    """MobileNet V2, width 0.25."""
    return get_mobilenet_v2(0.25, **kwargs)
