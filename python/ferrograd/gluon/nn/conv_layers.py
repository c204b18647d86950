"""Convolution, transposed convolution, pooling and padding layers of ``gluon.nn``.

Layouts are channels-first (``NCW``, ``NCHW``, ``NCDHW``); other layouts raise a clear error.
``in_channels=0`` leaves the weight's input-channel size to the first forward.
"""

from ...base import MXNetError
from ..block import HybridBlock
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
           "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D",
           "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D", "GlobalAvgPool1D",
           "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D"]

_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _tuple(value, ndim, what):
    if isinstance(value, int):
        return (value,) * ndim
    value = tuple(int(v) for v in value)
    if len(value) != ndim:
        raise MXNetError(f"{what} must be an int or a tuple of {ndim} ints, got {value}")
    return value


_CHANNELS_LAST = {1: "NWC", 2: "NHWC", 3: "NDHWC"}


def _check_layout(layout, ndim, cls, channels_last_ok=False):
    """True for a channels-last layout (run by transposing to channels-first and back)."""
    if layout == _LAYOUTS[ndim]:
        return False
    if channels_last_ok and layout == _CHANNELS_LAST[ndim]:
        return True
    also = f" or '{_CHANNELS_LAST[ndim]}'" if channels_last_ok else ""
    raise MXNetError(f"{cls}: layout '{layout}' is not supported; ferrograd supports only "
                     f"'{_LAYOUTS[ndim]}'{also}")


def _to_channels_first(F, x, ndim):
    return F.transpose(x, axes=(0, ndim + 1) + tuple(range(1, ndim + 1)))


def _to_channels_last(F, x, ndim):
    return F.transpose(x, axes=(0,) + tuple(range(2, ndim + 2)) + (1,))


class _Conv(HybridBlock):
    """Shared body of the (transposed) convolutions."""

    _transpose = False

    def _alias(self):
        return "conv"

    def __init__(self, ndim, channels, kernel_size, strides, padding, dilation, groups, layout,
                 in_channels, activation, use_bias, weight_initializer, bias_initializer,
                 output_padding=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        name = self.__class__.__name__
        # MXNet has channels-last kernels only for 2-D/3-D convolutions (weights O, *k, I).
        self._channels_last = _check_layout(layout, ndim, name,
                                            channels_last_ok=ndim > 1 and not self._transpose)
        self._ndim = ndim
        kernel = _tuple(kernel_size, ndim, f"{name}: kernel_size")
        self._channels = channels
        self._in_channels = in_channels
        self._kwargs = {
            "kernel": kernel, "stride": _tuple(strides, ndim, f"{name}: strides"),
            "dilate": _tuple(dilation, ndim, f"{name}: dilation"),
            "pad": _tuple(padding, ndim, f"{name}: padding"), "num_filter": channels,
            "num_group": groups, "no_bias": not use_bias, "layout": _LAYOUTS[ndim]}
        if self._transpose:
            self._kwargs["adj"] = _tuple(output_padding, ndim, f"{name}: output_padding")
            wshape = (in_channels, channels // groups) + kernel
        elif self._channels_last:
            wshape = (channels,) + kernel + (in_channels // groups if in_channels else 0,)
        else:
            wshape = (channels, in_channels // groups if in_channels else 0) + kernel
        with self.name_scope():
            self.weight = self.params.get("weight", shape=wshape, init=weight_initializer,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def hybrid_forward(self, F, x, weight, bias=None):
        op = F.Deconvolution if self._transpose else F.Convolution
        if self._channels_last:
            x = _to_channels_first(F, x, self._ndim)
            weight = _to_channels_first(F, weight, self._ndim)
        out = op(x, weight, bias, name="fwd", **self._kwargs)
        if self._channels_last:
            out = _to_channels_last(F, out, self._ndim)
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        k = self._kwargs
        n = len(k["kernel"])
        shape = self.weight.shape
        text = (f"{self.__class__.__name__}({shape[1] if shape[1] else None} -> {shape[0]}, "
                f"kernel_size={k['kernel']}, stride={k['stride']}")
        if k["pad"] != (0,) * n:
            text += f", padding={k['pad']}"
        if k["dilate"] != (1,) * n:
            text += f", dilation={k['dilate']}"
        if k["num_group"] != 1:
            text += f", groups={k['num_group']}"
        if self.bias is None:
            text += ", bias=False"
        if self.act is not None:
            text += f", {self.act!r}"
        return text + ")"


def _conv_class(ndim, transpose):
    suffix = "Transpose" if transpose else ""
    ones, zeros = (1,) * ndim, (0,) * ndim

    def __init__(self, channels, kernel_size, strides=ones, padding=zeros, *more, **kwargs):
        names = (["output_padding"] if transpose else []) + ["dilation", "groups", "layout",
                                                              "activation", "use_bias",
                                                              "weight_initializer",
                                                              "bias_initializer", "in_channels"]
        if len(more) > len(names):
            raise TypeError(f"Conv{ndim}D{suffix}: too many positional arguments")
        args = {"dilation": ones, "groups": 1, "layout": _LAYOUTS[ndim], "activation": None,
                "use_bias": True, "weight_initializer": None, "bias_initializer": "zeros",
                "in_channels": 0, "output_padding": zeros}
        args.update(zip(names, more, strict=False))
        prefix, params = kwargs.pop("prefix", None), kwargs.pop("params", None)
        unknown = set(kwargs) - set(args)
        if unknown:
            raise TypeError(f"Conv{ndim}D{suffix}: unexpected arguments {sorted(unknown)}")
        args.update(kwargs)
        _Conv.__init__(self, ndim, channels, kernel_size, strides, padding, args["dilation"],
                       args["groups"], args["layout"], args["in_channels"], args["activation"],
                       args["use_bias"], args["weight_initializer"], args["bias_initializer"],
                       output_padding=args["output_padding"], prefix=prefix, params=params)

    doc = (f"{ndim}-D {'transposed ' if transpose else ''}convolution, layout "
           f"{_LAYOUTS[ndim]}; arguments and defaults as MXNet's Conv{ndim}D{suffix}.")
    cls = type(f"Conv{ndim}D{suffix}", (_Conv,), {"__init__": __init__, "__doc__": doc,
                                                   "_transpose": transpose})
    cls.__module__ = __name__
    return cls


Conv1D, Conv2D, Conv3D = (_conv_class(n, False) for n in (1, 2, 3))
Conv1DTranspose, Conv2DTranspose, Conv3DTranspose = (_conv_class(n, True) for n in (1, 2, 3))


class _Pooling(HybridBlock):
    """Shared body of the pooling layers."""

    def _alias(self):
        return "pool"

    def __init__(self, ndim, pool_size, strides, padding, ceil_mode, global_pool, pool_type,
                 layout, count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        name = self.__class__.__name__
        self._channels_last = _check_layout(layout, ndim, name, channels_last_ok=True)
        self._ndim = ndim
        self._layout = layout
        kernel = _tuple(pool_size, ndim, f"{name}: pool_size")
        self._kwargs = {
            "kernel": kernel,
            "stride": kernel if strides is None else _tuple(strides, ndim, f"{name}: strides"),
            "pad": _tuple(padding, ndim, f"{name}: padding"), "global_pool": global_pool,
            "pool_type": pool_type, "layout": _LAYOUTS[ndim],
            "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def hybrid_forward(self, F, x):
        if not self._channels_last:
            return F.Pooling(x, name="fwd", **self._kwargs)
        out = F.Pooling(_to_channels_first(F, x, self._ndim), name="fwd", **self._kwargs)
        return _to_channels_last(F, out, self._ndim)

    def __repr__(self):
        k = self._kwargs
        return (f"{self.__class__.__name__}(size={k['kernel']}, stride={k['stride']}, "
                f"padding={k['pad']}, ceil_mode={k['pooling_convention'] == 'full'}, "
                f"global_pool={k['global_pool']}, pool_type={k['pool_type']}, "
                f"layout={self._layout})")


def _pool_class(ndim, pool_type, global_pool):
    base = f"{'Max' if pool_type == 'max' else 'Avg'}Pool{ndim}D"
    cls_name = ("Global" + base) if global_pool else base

    if global_pool:
        def __init__(self, layout=_LAYOUTS[ndim], **kwargs):
            _Pooling.__init__(self, ndim, (1,) * ndim, None, 0, True, True, pool_type, layout,
                              **kwargs)
    elif pool_type == "max":
        def __init__(self, pool_size=2, strides=None, padding=0, layout=_LAYOUTS[ndim],
                     ceil_mode=False, **kwargs):
            _Pooling.__init__(self, ndim, pool_size, strides, padding, ceil_mode, False, "max",
                              layout, **kwargs)
    else:
        def __init__(self, pool_size=2, strides=None, padding=0, layout=_LAYOUTS[ndim],
                     ceil_mode=False, count_include_pad=True, **kwargs):
            _Pooling.__init__(self, ndim, pool_size, strides, padding, ceil_mode, False, "avg",
                              layout, count_include_pad, **kwargs)

    doc = (f"{'Global ' if global_pool else ''}{pool_type} pooling over {ndim}-D windows, layout "
           f"{_LAYOUTS[ndim]}.")
    cls = type(cls_name, (_Pooling,), {"__init__": __init__, "__doc__": doc})
    cls.__module__ = __name__
    return cls


MaxPool1D, MaxPool2D, MaxPool3D = (_pool_class(n, "max", False) for n in (1, 2, 3))
AvgPool1D, AvgPool2D, AvgPool3D = (_pool_class(n, "avg", False) for n in (1, 2, 3))
GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D = (_pool_class(n, "max", True) for n in (1, 2, 3))
GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D = (_pool_class(n, "avg", True) for n in (1, 2, 3))


class ReflectionPad2D(HybridBlock):
    """Pads the last two axes of NCHW input by mirroring (``padding`` int or 8-tuple)."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, int):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        padding = tuple(padding)
        if len(padding) != 8:
            raise MXNetError(f"ReflectionPad2D: padding must be an int or 8 ints, got {padding}")
        self._padding = padding

    def hybrid_forward(self, F, x):
        return F.pad(x, mode="reflect", pad_width=self._padding)
