"""Converters for MXNet's tensor ops: arithmetic (elementwise, broadcast, with a scalar),
joins, reshapes, transposes, reductions, clipping, casts and identities."""

import numpy as np

from ._registry import register

_BINARY = {
    "Add": ("elemwise_add", "broadcast_add", "broadcast_plus", "_plus", "_Plus", "_add"),
    "Sub": ("elemwise_sub", "broadcast_sub", "broadcast_minus", "_minus", "_Minus", "_sub"),
    "Mul": ("elemwise_mul", "broadcast_mul", "_mul", "_Mul"),
    "Div": ("elemwise_div", "broadcast_div", "_div", "_Div"),
    "Max": ("broadcast_maximum", "_maximum", "_Maximum"),
    "Min": ("broadcast_minimum", "_minimum", "_Minimum"),
    "Pow": ("broadcast_power", "_power", "_Power"),
}

# MXNet scalar op -> (ONNX op, whether the scalar is the left operand).
_SCALAR = {
    "_plus_scalar": ("Add", False), "_PlusScalar": ("Add", False),
    "_minus_scalar": ("Sub", False), "_MinusScalar": ("Sub", False),
    "_rminus_scalar": ("Sub", True), "_RMinusScalar": ("Sub", True),
    "_mul_scalar": ("Mul", False), "_MulScalar": ("Mul", False),
    "_div_scalar": ("Div", False), "_DivScalar": ("Div", False),
    "_rdiv_scalar": ("Div", True), "_RDivScalar": ("Div", True),
    "_power_scalar": ("Pow", False), "_PowerScalar": ("Pow", False),
    "_rpower_scalar": ("Pow", True), "_RPowerScalar": ("Pow", True),
    "_maximum_scalar": ("Max", False), "_MaximumScalar": ("Max", False),
    "_minimum_scalar": ("Min", False), "_MinimumScalar": ("Min", False),
}

_UNARY = {"exp": "Exp", "log": "Log", "sqrt": "Sqrt", "abs": "Abs", "negative": "Neg",
          "relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "floor": "Floor",
          "ceil": "Ceil", "reciprocal": "Reciprocal", "erf": "Erf", "sin": "Sin", "cos": "Cos",
          "sign": "Sign", "softsign": "Softsign"}

_IDENTITY = ("_copy", "identity", "BlockGrad", "stop_gradient", "make_loss", "MakeLoss")


def _binary(onnx_op):
    def convert(ctx, node):
        ctx.op(onnx_op, node.inputs, node.outputs[0])
    return convert


for _onnx_op, _names in _BINARY.items():
    register(*_names)(_binary(_onnx_op))


@register(*_SCALAR)
def scalar_op(ctx, node):
    onnx_op, scalar_first = _SCALAR[node.op]
    scalar = ctx.const(np.array(node.float("scalar"), dtype=node.input_dtypes[0]),
                       f"{node.name}_scalar")
    pair = [scalar, node.inputs[0]] if scalar_first else [node.inputs[0], scalar]
    ctx.op(onnx_op, pair, node.outputs[0])


def _unary(onnx_op):
    def convert(ctx, node):
        ctx.op(onnx_op, node.inputs, node.outputs[0])
    return convert


for _mx_op, _onnx_op in _UNARY.items():
    register(_mx_op)(_unary(_onnx_op))


@register("square")
def square(ctx, node):
    ctx.op("Mul", [node.inputs[0], node.inputs[0]], node.outputs[0])


@register(*_IDENTITY)
def identity(ctx, node):
    ctx.op("Identity", node.inputs[:1], node.outputs[0])


@register("add_n", "ElementWiseSum")
def add_n(ctx, node):
    ctx.op("Sum", node.inputs, node.outputs[0])


@register("Concat", "concat")
def concat(ctx, node):
    axis = node.int("dim", 1)
    ctx.op("Concat", node.inputs, node.outputs[0], axis=axis)


@register("Flatten", "flatten")
def flatten(ctx, node):
    ctx.op("Flatten", node.inputs, node.outputs[0], axis=1)


@register("Reshape", "reshape")
def reshape(ctx, node):
    if "shape" not in node.attrs and "target_shape" not in node.attrs:
        raise node.unsupported("a Reshape without a shape")
    spec = node.tuple("shape") if "shape" in node.attrs else node.tuple("target_shape")
    if all(d >= -1 for d in spec) and not node.bool("reverse") and spec.count(-1) <= 1:
        # 0 (copy the dimension) and -1 (infer it) mean the same in ONNX's Reshape, so the
        # graph keeps working with other batch sizes.
        target = spec
    elif ctx.dynamic:
        raise node.unsupported(f"shape={spec} (MXNet's special codes) with dynamic shapes")
    else:
        target = node.output_shapes[0]
    ctx.op("Reshape", [node.inputs[0], ctx.ints(target, f"{node.name}_shape")],
           node.outputs[0])


@register("transpose")
def transpose(ctx, node):
    axes = node.tuple("axes") or tuple(reversed(range(node.ndim)))
    ctx.op("Transpose", node.inputs, node.outputs[0], perm=[a % node.ndim for a in axes])


@register("clip")
def clip(ctx, node):
    dtype = node.input_dtypes[0]
    low = ctx.const(np.array(node.float("a_min"), dtype=dtype), f"{node.name}_min")
    high = ctx.const(np.array(node.float("a_max"), dtype=dtype), f"{node.name}_max")
    ctx.op("Clip", [node.inputs[0], low, high], node.outputs[0])


def _reduce_axes(node):
    axes = node.axes("axis")
    ndim = node.ndim
    if axes is None:
        return list(range(ndim))
    axes = sorted(a % ndim for a in axes)
    if node.bool("exclude"):
        axes = [a for a in range(ndim) if a not in axes]
    return axes


def _reduce(onnx_op):
    def convert(ctx, node):
        axes, keep = _reduce_axes(node), int(node.bool("keepdims"))
        if not axes:
            ctx.op("Identity", node.inputs, node.outputs[0])
            return
        # MXNet keeps one axis of size 1 where a full reduction would give a scalar.
        to_vector = not keep and len(axes) == node.ndim
        out = None if to_vector else node.outputs[0]
        if onnx_op == "ReduceSum":  # opset 13 takes ReduceSum's axes as an input
            out = ctx.op(onnx_op, [node.inputs[0], ctx.ints(axes, f"{node.name}_axes")], out,
                         keepdims=keep)
        else:
            out = ctx.op(onnx_op, node.inputs, out, axes=axes, keepdims=keep)
        if to_vector:
            ctx.op("Reshape", [out, ctx.ints([1], f"{node.name}_shape")], node.outputs[0])
    return convert


for _mx_op, _onnx_op in {"mean": "ReduceMean", "sum": "ReduceSum", "max": "ReduceMax",
                         "min": "ReduceMin", "prod": "ReduceProd"}.items():
    register(_mx_op)(_reduce(_onnx_op))


@register("Cast", "cast")
def cast(ctx, node):
    ctx.op("Cast", node.inputs, node.outputs[0],
           to=ctx.helper.np_dtype_to_tensor_dtype(node.output_dtypes[0]))


@register("expand_dims")
def expand_dims(ctx, node):
    axis = node.int("axis") % (node.ndim + 1)
    ctx.op("Unsqueeze", [node.inputs[0], ctx.ints([axis], f"{node.name}_axes")],
           node.outputs[0])


@register("squeeze")
def squeeze(ctx, node):
    axes = node.axes("axis")
    if axes is None:
        axes = [a for a, d in enumerate(node.input_shapes[0]) if d == 1]
    ctx.op("Squeeze", [node.inputs[0], ctx.ints([a % node.ndim for a in axes],
                                                f"{node.name}_axes")], node.outputs[0])


@register("slice_axis")
def slice_axis(ctx, node):
    axis = node.int("axis") % node.ndim
    begin = node.int("begin")
    end = node.int("end")
    end = np.iinfo(np.int64).max if end is None else end
    ctx.op("Slice", [node.inputs[0], ctx.ints([begin], f"{node.name}_starts"),
                     ctx.ints([end], f"{node.name}_ends"), ctx.ints([axis], f"{node.name}_axes")],
           node.outputs[0])


@register("dot", "batch_dot")
def dot(ctx, node):
    a, b = node.inputs
    ranks = [len(s) for s in node.input_shapes]
    if node.op == "dot" and ranks != [2, 2]:
        raise node.unsupported(f"inputs of rank {ranks[0]} and {ranks[1]}")

    def maybe_t(name, rank, flag):
        if not node.bool(flag):
            return name
        perm = list(range(rank - 2)) + [rank - 1, rank - 2]
        return ctx.op("Transpose", [name], perm=perm)

    ctx.op("MatMul", [maybe_t(a, ranks[0], "transpose_a"), maybe_t(b, ranks[1], "transpose_b")],
           node.outputs[0])


@register("Pad", "pad")
def pad(ctx, node):
    width = node.tuple("pad_width")
    mode = node.str("mode", "constant")
    if mode not in ("constant", "edge", "reflect"):
        raise node.unsupported(f"mode={mode}")
    pads = list(width[0::2]) + list(width[1::2])
    inputs = [node.inputs[0], ctx.ints(pads, f"{node.name}_pads")]
    if mode == "constant":
        inputs.append(ctx.const(np.array(node.float("constant_value", 0.0),
                                         dtype=node.input_dtypes[0]), f"{node.name}_value"))
    ctx.op("Pad", inputs, node.outputs[0], mode=mode)
