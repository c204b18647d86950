"""Converters for MXNet's neural-network layers: convolutions, normalisation, pooling, dense
layers, activations, softmax and inference-time no-ops. Attribute defaults are MXNet 1.9's."""

import math

import numpy as np

from ._registry import register

_CHANNEL_FIRST = (None, "NCW", "NCHW", "NCDHW")


def _spatial(node, nd):
    """``(strides, dilations, pads)`` of a convolution-like node with ``nd`` spatial axes."""
    stride = node.tuple("stride") or (1,) * nd
    dilate = node.tuple("dilate") or (1,) * nd
    pad = node.tuple("pad") or (0,) * nd
    return list(stride), list(dilate), list(pad) * 2


def _check_layout(node):
    if node.str("layout") not in _CHANNEL_FIRST:
        raise node.unsupported(f"layout={node.str('layout')}")


@register("Convolution")
def convolution(ctx, node):
    _check_layout(node)
    kernel = node.tuple("kernel")
    strides, dilations, pads = _spatial(node, len(kernel))
    ctx.op("Conv", node.inputs, node.outputs[0], kernel_shape=list(kernel), strides=strides,
           dilations=dilations, pads=pads, group=node.int("num_group", 1))


@register("Deconvolution")
def deconvolution(ctx, node):
    _check_layout(node)
    if node.tuple("target_shape"):
        raise node.unsupported("target_shape")
    kernel = node.tuple("kernel")
    strides, dilations, pads = _spatial(node, len(kernel))
    adj = node.tuple("adj") or (0,) * len(kernel)
    ctx.op("ConvTranspose", node.inputs, node.outputs[0], kernel_shape=list(kernel),
           strides=strides, dilations=dilations, pads=pads, output_padding=list(adj),
           group=node.int("num_group", 1))


@register("BatchNorm")
def batch_norm(ctx, node):
    axis = node.int("axis", 1)
    if axis not in (1, 1 - node.ndim):
        raise node.unsupported(f"axis={axis}")
    if node.bool("output_mean_var"):
        raise node.unsupported("output_mean_var=True")
    data, gamma, beta, mean, var = node.inputs
    if node.bool("fix_gamma", True):
        # MXNet ignores the stored gamma and scales by one.
        gamma = ctx.const(np.ones(node.input_shapes[1], dtype=node.input_dtypes[1]),
                          f"{node.name}_gamma_fixed")
    ctx.op("BatchNormalization", [data, gamma, beta, mean, var], node.outputs[0],
           epsilon=node.float("eps", 1e-3), momentum=node.float("momentum", 0.9))


@register("InstanceNorm")
def instance_norm(ctx, node):
    ctx.op("InstanceNormalization", node.inputs, node.outputs[0],
           epsilon=node.float("eps", 1e-3))


@register("LayerNorm")
def layer_norm(ctx, node):
    axis = node.int("axis", -1)
    if axis not in (-1, node.ndim - 1):
        raise node.unsupported(f"axis={axis}")
    data, gamma, beta = node.inputs
    mean = ctx.op("ReduceMean", [data], axes=[-1], keepdims=1)
    centred = ctx.op("Sub", [data, mean])
    var = ctx.op("ReduceMean", [ctx.op("Mul", [centred, centred])], axes=[-1], keepdims=1)
    eps = ctx.const(np.array(node.float("eps", 1e-5), dtype=node.input_dtypes[0]),
                    f"{node.name}_eps")
    scaled = ctx.op("Div", [centred, ctx.op("Sqrt", [ctx.op("Add", [var, eps])])])
    ctx.op("Add", [ctx.op("Mul", [scaled, gamma]), beta], node.outputs[0])


def _global_pool(ctx, node, pool_type):
    data, out = node.inputs[0], node.outputs[0]
    if pool_type == "max":
        ctx.op("GlobalMaxPool", [data], out)
    elif pool_type == "avg":
        ctx.op("GlobalAveragePool", [data], out)
    elif pool_type == "lp":
        ctx.op("GlobalLpPool", [data], out, p=node.int("p_value", 2))
    else:
        ctx.op("ReduceSum", [data, ctx.ints(range(2, node.ndim), f"{node.name}_axes")], out,
               keepdims=1)


@register("Pooling")
def pooling(ctx, node):
    _check_layout(node)
    pool_type = node.str("pool_type", "max")
    if pool_type not in ("max", "avg", "sum", "lp"):
        raise node.unsupported(f"pool_type={pool_type}")
    if pool_type == "lp" and node.int("p_value", 2) == 1:
        pool_type = "sum"  # MXNet's p = 1 is the signed window sum; ONNX LpPool sums |x|
    elif pool_type == "lp" and node.int("p_value", 2) == 3:
        # MXNet takes the real cube root of the signed sum of cubes; ONNX LpPool uses |x|.
        raise node.unsupported("pool_type='lp' with p_value=3 (a signed cube root)")
    if node.bool("global_pool"):
        return _global_pool(ctx, node, pool_type)
    convention = node.str("pooling_convention", "valid")
    if convention not in ("valid", "full"):
        raise node.unsupported(f"pooling_convention={convention}")
    kernel = list(node.tuple("kernel"))
    strides, _, pads = _spatial(node, len(kernel))
    ceil_mode = int(convention == "full")
    data, out = node.inputs[0], node.outputs[0]
    if pool_type == "max":
        ctx.op("MaxPool", [data], out, kernel_shape=kernel, strides=strides, pads=pads,
               ceil_mode=ceil_mode)
    elif pool_type == "avg":
        ctx.op("AveragePool", [data], out, kernel_shape=kernel, strides=strides, pads=pads,
               ceil_mode=ceil_mode, count_include_pad=int(node.bool("count_include_pad", True)))
    elif pool_type == "sum":
        mean = ctx.op("AveragePool", [data], kernel_shape=kernel, strides=strides, pads=pads,
                      ceil_mode=ceil_mode, count_include_pad=1)
        size = ctx.const(np.array(math.prod(kernel), dtype=node.input_dtypes[0]),
                         f"{node.name}_window")
        ctx.op("Mul", [mean, size], out)
    else:
        # LpPool has no ceil_mode before opset 18: extra zero padding at the end gives the
        # same windows (zeros add nothing to a p-norm).
        extra = _ceil_padding(node, kernel, strides, pads) if ceil_mode else [0] * len(kernel)
        pads = pads[:len(kernel)] + [p + e for p, e in zip(pads[len(kernel):], extra,
                                                           strict=True)]
        ctx.op("LpPool", [data], out, kernel_shape=kernel, strides=strides, pads=pads,
               p=node.int("p_value", 2))


def _ceil_padding(node, kernel, strides, pads):
    """End padding per axis that makes floor-mode windows cover the inferred ('full') output."""
    nd = len(kernel)
    spatial_in, spatial_out = node.input_shapes[0][2:], node.output_shapes[0][2:]
    extra = []
    for i in range(nd):
        need = (spatial_out[i] - 1) * strides[i] + kernel[i]
        have = spatial_in[i] + pads[i] + pads[nd + i]
        extra.append(max(0, need - have))
    return extra


@register("FullyConnected")
def fully_connected(ctx, node):
    data, weight = node.inputs[0], node.inputs[1]
    bias = node.inputs[2:3]
    flatten = node.bool("flatten", True)
    if flatten and node.ndim > 2:
        data = ctx.op("Flatten", [data], axis=1)
    if flatten or node.ndim == 2:
        ctx.op("Gemm", [data, weight, *bias], node.outputs[0], transB=1)
        return
    product = ctx.op("MatMul", [data, ctx.op("Transpose", [weight], perm=[1, 0])],
                     None if bias else node.outputs[0])
    if bias:
        ctx.op("Add", [product, bias[0]], node.outputs[0])


_ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
                "softsign": "Softsign"}


@register("Activation")
def activation(ctx, node):
    kind = node.str("act_type")
    data, out = node.inputs[0], node.outputs[0]
    if kind in _ACTIVATIONS:
        ctx.op(_ACTIVATIONS[kind], [data], out)
    elif kind == "log_sigmoid":
        ctx.op("Log", [ctx.op("Sigmoid", [data])], out)
    elif kind == "mish":
        ctx.op("Mul", [data, ctx.op("Tanh", [ctx.op("Softplus", [data])])], out)
    else:
        raise node.unsupported(f"act_type={kind}")


# SELU's constants as MXNet uses them (ONNX's defaults are rounded to float32).
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946


@register("LeakyReLU")
def leaky_relu(ctx, node):
    kind = node.str("act_type", "leaky")
    slope = node.float("slope", 0.25)
    data, out = node.inputs[0], node.outputs[0]
    if kind == "leaky":
        ctx.op("LeakyRelu", [data], out, alpha=slope)
    elif kind == "elu":
        ctx.op("Elu", [data], out, alpha=slope)
    elif kind == "selu":
        ctx.op("Selu", [data], out, alpha=_SELU_ALPHA, gamma=_SELU_LAMBDA)
    elif kind == "gelu":
        # MXNet 1.9's GELU is the exact one, x * Phi(x), written with erf.
        dtype = node.input_dtypes[0]
        root2 = ctx.const(np.array(math.sqrt(2.0), dtype=dtype), f"{node.name}_sqrt2")
        one = ctx.const(np.array(1.0, dtype=dtype), f"{node.name}_one")
        half = ctx.const(np.array(0.5, dtype=dtype), f"{node.name}_half")
        erf = ctx.op("Erf", [ctx.op("Div", [data, root2])])
        ctx.op("Mul", [ctx.op("Mul", [data, half]), ctx.op("Add", [erf, one])], out)
    elif kind == "prelu":
        # One slope per channel (axis 1): reshaped to broadcast against (N, C, ...).
        shape = ctx.ints([-1] + [1] * (node.ndim - 2), f"{node.name}_slope_shape")
        ctx.op("PRelu", [data, ctx.op("Reshape", [node.inputs[1], shape])], out)
    else:
        raise node.unsupported(f"act_type={kind}")


def _softmax_like(ctx, node, onnx_op):
    if node.bool("use_length"):
        raise node.unsupported("use_length=True")
    data = node.inputs[0]
    temperature = node.float("temperature")
    if temperature is not None and temperature != 1.0:
        t = ctx.const(np.array(temperature, dtype=node.input_dtypes[0]), f"{node.name}_temp")
        data = ctx.op("Div", [data, t])
    axis = node.int("axis", -1)
    if node.output_dtypes[0] == node.input_dtypes[0]:
        ctx.op(onnx_op, [data], node.outputs[0], axis=axis)
        return
    ctx.op("Cast", [ctx.op(onnx_op, [data], axis=axis)], node.outputs[0],
           to=ctx.helper.np_dtype_to_tensor_dtype(node.output_dtypes[0]))


@register("softmax")
def softmax(ctx, node):
    _softmax_like(ctx, node, "Softmax")


@register("log_softmax")
def log_softmax(ctx, node):
    _softmax_like(ctx, node, "LogSoftmax")


def _softmax_flat(ctx, node, data, out):
    """Softmax over everything but axis 0, keeping the input's shape."""
    if node.ndim == 2:
        ctx.op("Softmax", [data], out, axis=1)
        return
    flat = ctx.op("Softmax", [ctx.op("Flatten", [data], axis=1)], axis=1)
    ctx.op("Reshape", [flat, ctx.op("Shape", [data])], out)


@register("SoftmaxOutput", "Softmax")
def softmax_output(ctx, node):
    data, out = node.inputs[0], node.outputs[0]
    if node.bool("multi_output"):
        ctx.op("Softmax", [data], out, axis=1)
    elif node.bool("preserve_shape"):
        ctx.op("Softmax", [data], out, axis=-1)
    else:
        _softmax_flat(ctx, node, data, out)


@register("SoftmaxActivation")
def softmax_activation(ctx, node):
    if node.str("mode", "instance") == "channel":
        ctx.op("Softmax", [node.inputs[0]], node.outputs[0], axis=1)
    else:
        _softmax_flat(ctx, node, node.inputs[0], node.outputs[0])


@register("Dropout")
def dropout(ctx, node):
    if node.str("mode", "training") == "always":
        raise node.unsupported("mode='always' (dropout at inference)")
    ctx.op("Identity", [node.inputs[0]], node.outputs[0])


@register("Embedding")
def embedding(ctx, node):
    indices = ctx.op("Cast", [node.inputs[0]], to=ctx.onnx.TensorProto.INT64)
    ctx.op("Gather", [node.inputs[1], indices], node.outputs[0], axis=0)


@register("UpSampling")
def upsampling(ctx, node):
    if node.str("sample_type") != "nearest" or node.int("num_args", 1) != 1:
        raise node.unsupported(f"sample_type={node.str('sample_type')} with "
                               f"num_args={node.int('num_args', 1)}")
    scale = float(node.int("scale"))
    scales = ctx.const(np.array([1.0, 1.0] + [scale] * (node.ndim - 2), dtype=np.float32),
                       f"{node.name}_scales")
    ctx.op("Resize", [node.inputs[0], "", scales], node.outputs[0], mode="nearest",
           nearest_mode="floor", coordinate_transformation_mode="asymmetric")


@register("LRN")
def lrn(ctx, node):
    ctx.op("LRN", [node.inputs[0]], node.outputs[0], alpha=node.float("alpha", 1e-4),
           beta=node.float("beta", 0.75), bias=node.float("knorm", 2.0),
           size=node.int("nsize"))
