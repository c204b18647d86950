"""mx.onnx.export_model: small networks of each model-zoo family, built with mx.sym, exported to
ONNX and run in onnxruntime, give ferrograd's outputs (float32, within 1e-4)."""

import math
import os
import sys

import ferrograd as mx
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

sym = mx.sym


# -- helpers ------------------------------------------------------------------------------------

def _random_params(net, shapes, seed=0):
    """Random (arg_params, aux_params) for ``net`` given its input shapes: fan-in scaled weights,
    batch-norm statistics with positive variances."""
    rng = np.random.default_rng(seed)
    arg_shapes, _, aux_shapes = net.infer_shape(**shapes)
    args = {}
    for name, shape in zip(net.list_arguments(), arg_shapes, strict=True):
        if name in shapes or name.endswith("_label"):
            continue
        if name.endswith(("_gamma", "_alpha")):
            value = rng.uniform(0.5, 1.5, shape)
        elif name.endswith(("_bias", "_beta")):
            value = rng.uniform(-0.2, 0.2, shape)
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            value = rng.standard_normal(shape) / np.sqrt(fan_in)
        args[name] = mx.nd.array(value.astype(np.float32))
    aux = {}
    for name, shape in zip(net.list_auxiliary_states(), aux_shapes, strict=True):
        value = rng.uniform(0.5, 1.5, shape) if "var" in name else rng.uniform(-0.2, 0.2, shape)
        aux[name] = mx.nd.array(value.astype(np.float32))
    return args, aux


def _ferrograd_outputs(net, args, aux, inputs):
    """Inference outputs of ``net`` on ferrograd's executor (labels, if any, are zeros)."""
    feed = {**args, **{k: mx.nd.array(v) for k, v in inputs.items()}}
    arg_shapes, _, _ = net.infer_shape(**{k: v.shape for k, v in inputs.items()})
    for name, shape in zip(net.list_arguments(), arg_shapes, strict=True):
        feed.setdefault(name, mx.nd.zeros(shape))
    exe = net.bind(mx.cpu(), feed, aux_states=aux, grad_req="null")
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def _onnx_outputs(path, inputs):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def _roundtrip(tmp_path, net, in_shapes, seed=0, **export_kwargs):
    """Exports ``net`` with random parameters, runs both, checks they agree; returns the path."""
    args, aux = _random_params(net, in_shapes, seed)
    rng = np.random.default_rng(seed + 1)
    inputs = {k: rng.standard_normal(s).astype(np.float32) for k, s in in_shapes.items()}
    path = str(tmp_path / "model.onnx")
    got_path = mx.onnx.export_model(net, {**args, **aux}, list(in_shapes.values()), np.float32,
                                    path, **export_kwargs)
    assert got_path == path and os.path.getsize(path) > 0
    want = _ferrograd_outputs(net, args, aux, inputs)
    got = _onnx_outputs(path, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    return path


def _conv_bn_relu(x, name, channels, kernel=3, stride=1, pad=1, group=1, fix_gamma=False,
                  act="relu"):
    x = sym.Convolution(x, kernel=(kernel, kernel), stride=(stride, stride), pad=(pad, pad),
                        num_filter=channels, num_group=group, no_bias=True, name=f"{name}_conv")
    x = sym.BatchNorm(x, fix_gamma=fix_gamma, eps=1e-5, name=f"{name}_bn")
    if act == "relu6":
        return sym.clip(x, 0, 6, name=f"{name}_relu6")
    return sym.Activation(x, act_type="relu", name=f"{name}_relu") if act else x


# -- the model-zoo families ------------------------------------------------------------------

def resnet18(width=8, classes=10):
    """ResNet-18 v1's graph (stem, 4 stages of 2 basic blocks, global pool, dense), with
    ``width`` channels in the first stage instead of 64."""
    x = sym.var("data")
    x = _conv_bn_relu(x, "stem", width, kernel=7, stride=2, pad=3)
    x = sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", name="pool0")
    channels = width
    for stage in range(4):
        for block in range(2):
            name = f"stage{stage + 1}_unit{block + 1}"
            stride = 2 if stage > 0 and block == 0 else 1
            out_channels = width * 2 ** stage
            y = _conv_bn_relu(x, f"{name}_a", out_channels, stride=stride)
            y = _conv_bn_relu(y, f"{name}_b", out_channels, act=None)
            if stride != 1 or channels != out_channels:
                x = _conv_bn_relu(x, f"{name}_down", out_channels, kernel=1, stride=stride,
                                  pad=0, act=None)
            x = sym.Activation(sym.elemwise_add(y, x, name=f"{name}_add"), act_type="relu",
                               name=f"{name}_out")
            channels = out_channels
    x = sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg", name="pool1")
    x = sym.Flatten(x, name="flatten")
    return sym.FullyConnected(x, num_hidden=classes, name="fc")


def test_resnet18_shaped_graph(tmp_path):
    path = _roundtrip(tmp_path, resnet18(), {"data": (2, 3, 32, 32)})
    model = onnx.load(path)
    assert model.opset_import[0].version == mx.onnx.OPSET == 13
    assert [i.name for i in model.graph.input] == ["data"]
    assert [o.name for o in model.graph.output] == ["fc"]
    assert {i.name for i in model.graph.initializer} >= {"stem_conv_weight", "fc_bias",
                                                          "stem_bn_moving_var"}
    kinds = {n.op_type for n in model.graph.node}
    assert {"Conv", "BatchNormalization", "Relu", "MaxPool", "Add", "GlobalAveragePool",
            "Gemm"} <= kinds


def test_mobilenet_v2_family(tmp_path):
    # Inverted residuals: expand 1x1, depthwise 3x3 (num_group = channels), relu6 as clip,
    # linear bottleneck; softmax head.
    x = _conv_bn_relu(sym.var("data"), "stem", 8, stride=2, act="relu6")
    y = _conv_bn_relu(x, "b1_expand", 24, kernel=1, pad=0, act="relu6")
    y = _conv_bn_relu(y, "b1_dw", 24, group=24, act="relu6")
    y = _conv_bn_relu(y, "b1_project", 8, kernel=1, pad=0, act=None)
    x = sym.broadcast_add(x, y, name="b1_add")
    x = sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg", name="pool")
    x = sym.Convolution(x, kernel=(1, 1), num_filter=5, name="classifier")
    x = sym.softmax(sym.Flatten(x), name="prob")
    _roundtrip(tmp_path, x, {"data": (2, 3, 16, 16)})


def test_squeezenet_family(tmp_path):
    # Fire modules (squeeze 1x1, expand 1x1 and 3x3 concatenated), 'full' pooling convention,
    # dropout, SoftmaxOutput with its label dropped from the ONNX inputs.
    def fire(x, name, squeeze, expand):
        s = sym.Activation(sym.Convolution(x, kernel=(1, 1), num_filter=squeeze,
                                           name=f"{name}_sq"), act_type="relu")
        e1 = sym.Activation(sym.Convolution(s, kernel=(1, 1), num_filter=expand,
                                            name=f"{name}_e1"), act_type="relu")
        e3 = sym.Activation(sym.Convolution(s, kernel=(3, 3), pad=(1, 1), num_filter=expand,
                                            name=f"{name}_e3"), act_type="relu")
        return sym.Concat(e1, e3, dim=1, name=f"{name}_cat")
    x = sym.Convolution(sym.var("data"), kernel=(3, 3), stride=(2, 2), num_filter=8,
                        name="conv1")
    x = sym.Pooling(sym.Activation(x, act_type="relu"), kernel=(3, 3), stride=(2, 2),
                    pool_type="max", pooling_convention="full", name="pool1")
    x = fire(x, "fire2", 4, 8)
    x = sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pool_type="max",
                    pooling_convention="full", name="pool2")
    x = fire(x, "fire3", 4, 8)
    x = sym.Dropout(x, p=0.5, name="drop")
    x = sym.Convolution(x, kernel=(1, 1), num_filter=6, name="conv10")
    x = sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg", name="pool10")
    x = sym.SoftmaxOutput(sym.Flatten(x), name="softmax")
    path = _roundtrip(tmp_path, x, {"data": (2, 3, 29, 29)})
    assert [i.name for i in onnx.load(path).graph.input] == ["data"]


def test_vgg_bn_family(tmp_path):
    # fix_gamma=True batch norm (the stored gamma is ignored), max pools, dense layers with
    # dropout, FullyConnected on a 4-D input (flattened implicitly).
    x = sym.var("data")
    for i, c in enumerate((4, 8)):
        x = _conv_bn_relu(x, f"conv{i}", c, fix_gamma=True)
        x = sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name=f"pool{i}")
    x = sym.Activation(sym.FullyConnected(x, num_hidden=16, name="fc6"), act_type="relu")
    x = sym.Dropout(x, p=0.5)
    x = sym.FullyConnected(x, num_hidden=4, name="fc8")
    _roundtrip(tmp_path, x, {"data": (3, 3, 12, 12)})


def test_densenet_family(tmp_path):
    # Dense block (each layer's output concatenated to its input), transition with average
    # pooling, final BN-relu-global pool.
    x = sym.Convolution(sym.var("data"), kernel=(3, 3), pad=(1, 1), num_filter=8, no_bias=True,
                        name="conv0")
    for i in range(3):
        y = sym.Activation(sym.BatchNorm(x, fix_gamma=False, name=f"l{i}_bn"), act_type="relu")
        y = sym.Convolution(y, kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True,
                            name=f"l{i}_conv")
        x = sym.Concat(x, y, dim=1, name=f"l{i}_cat")
    x = sym.Convolution(x, kernel=(1, 1), num_filter=10, no_bias=True, name="trans_conv")
    x = sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="trans_pool")
    x = sym.Activation(sym.BatchNorm(x, fix_gamma=False, name="final_bn"), act_type="relu")
    x = sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type="avg", name="gpool")
    x = sym.FullyConnected(sym.Flatten(x), num_hidden=3, name="out")
    _roundtrip(tmp_path, x, {"data": (2, 3, 8, 8)})


def test_alexnet_family(tmp_path):
    x = sym.Convolution(sym.var("data"), kernel=(5, 5), stride=(4, 4), pad=(2, 2), num_filter=8,
                        name="c1")
    x = sym.Pooling(sym.Activation(x, act_type="relu"), kernel=(3, 3), stride=(2, 2),
                    pool_type="max", name="p1")
    x = sym.Activation(sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=12, name="c2"),
                       act_type="relu")
    x = sym.Flatten(x)
    x = sym.Dropout(sym.Activation(sym.FullyConnected(x, num_hidden=20, name="f1"),
                                   act_type="relu"), p=0.5)
    x = sym.FullyConnected(x, num_hidden=5, name="f2")
    _roundtrip(tmp_path, x, {"data": (2, 3, 35, 35)})


def test_inception_family(tmp_path):
    # Four parallel branches concatenated; average pooling without counting padding
    # (Inception-v3's pools) and with it.
    x = _conv_bn_relu(sym.var("data"), "stem", 6)
    b1 = _conv_bn_relu(x, "b1", 4, kernel=1, pad=0)
    b2 = _conv_bn_relu(_conv_bn_relu(x, "b2a", 3, kernel=1, pad=0), "b2b", 4)
    b3 = sym.Pooling(x, kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type="avg",
                     count_include_pad=False, name="b3_pool")
    b3 = _conv_bn_relu(b3, "b3", 2, kernel=1, pad=0)
    b4 = sym.Pooling(x, kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type="avg", name="b4_pool")
    x = sym.Concat(b1, b2, b3, b4, dim=1, name="mixed")
    x = sym.Pooling(x, kernel=(3, 3), stride=(2, 2), pool_type="max", name="reduce")
    x = sym.FullyConnected(x, num_hidden=4, name="fc")
    _roundtrip(tmp_path, x, {"data": (2, 3, 9, 9)})


# -- individual operators -----------------------------------------------------------------------

def test_deconvolution_and_upsampling(tmp_path):
    x = sym.Deconvolution(sym.var("data"), kernel=(4, 4), stride=(2, 2), pad=(1, 1), adj=(1, 1),
                          num_filter=3, name="up")
    y = sym.Deconvolution(sym.var("data"), kernel=(3, 3), num_filter=3, num_group=1,
                          no_bias=False, name="up2")
    z = sym.UpSampling(sym.var("data"), scale=2, sample_type="nearest", name="nn")
    _roundtrip(tmp_path, sym.Group([x, y, z]), {"data": (2, 4, 5, 5)})


@pytest.mark.parametrize("kind", ["leaky", "elu", "selu", "prelu"])
def test_leaky_relu_variants(tmp_path, kind):
    x = sym.LeakyReLU(sym.var("data"), act_type=kind, slope=0.3, name="act")
    _roundtrip(tmp_path, x, {"data": (2, 3, 4, 4)})


def test_gelu_is_mxnets_exact_gelu(tmp_path):
    # MXNet 1.9's LeakyReLU(act_type='gelu') is x * Phi(x) (erf form): MXNet gives
    # -0.15865526 at x = -1, where the tanh approximation gives -0.15880801.
    net = sym.LeakyReLU(sym.var("data"), act_type="gelu", name="act")
    path = mx.onnx.export_model(net, {}, [(5,)], np.float32, str(tmp_path / "gelu.onnx"))
    x = np.array([-3.0, -1.0, -0.5, 0.0, 2.0], dtype=np.float32)
    phi = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()])
    got = _onnx_outputs(path, {"data": x})[0]
    np.testing.assert_allclose(got, x * phi, rtol=1e-6, atol=1e-7)
    assert abs(got[1] - (-0.15865526)) < 1e-7


@pytest.mark.parametrize("kind", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_activation_kinds(tmp_path, kind):
    _roundtrip(tmp_path, sym.Activation(sym.var("data"), act_type=kind), {"data": (3, 7)})


@pytest.mark.parametrize("pool", [
    dict(pool_type="max", kernel=(3, 3), stride=(2, 2), pad=(1, 1), pooling_convention="full"),
    dict(pool_type="avg", kernel=(3, 3), stride=(2, 2), pad=(1, 1), pooling_convention="full"),
    dict(pool_type="avg", kernel=(2, 2), stride=(2, 2), pad=(1, 1), count_include_pad=False),
    dict(pool_type="sum", kernel=(2, 2), stride=(1, 1)),
    dict(pool_type="lp", p_value=2, kernel=(2, 2), stride=(2, 2), pooling_convention="full"),
    dict(pool_type="max", global_pool=True, kernel=(1, 1)),
    dict(pool_type="sum", global_pool=True, kernel=(1, 1)),
    dict(pool_type="lp", p_value=1, global_pool=True, kernel=(1, 1)),
    dict(pool_type="max", kernel=(3,), stride=(2,)),
])
def test_pooling_conventions(tmp_path, pool):
    shape = (2, 3, 7) if len(pool["kernel"]) == 1 and not pool.get("global_pool") else (2, 3, 7, 8)
    _roundtrip(tmp_path, sym.Pooling(sym.var("data"), name="pool", **pool), {"data": shape})


def test_tensor_ops(tmp_path):
    a, b = sym.var("a"), sym.var("b")
    outs = [
        sym.Reshape(a, shape=(0, -1), name="flat"),
        sym.Reshape(a, shape=(-3, -2), name="merged"),        # MXNet's special codes
        sym.transpose(a, axes=(0, 2, 3, 1), name="nhwc"),
        sym.transpose(b, name="rev"),
        sym.mean(a, axis=(2, 3), keepdims=True, name="m"),
        sym.sum(a, axis=1, exclude=True, name="s"),
        sym.max(b, name="mx"),
        sym.clip(a, -0.5, 0.5, name="c"),
        2.0 - a * 3 + 1,
        1.0 / (abs(a) + 1),
        sym.broadcast_mul(a, sym.mean(a, axis=1, keepdims=True)),
        sym.elemwise_sub(a, a * a),
        sym.softmax(a, axis=1, temperature=2.0, name="sm"),
        sym.log_softmax(b, name="lsm"),
        sym.add_n(a, a, a),
        sym.expand_dims(b, axis=1),
        sym.slice_axis(a, axis=2, begin=1, end=3),
        sym.squeeze(sym.slice_axis(a, axis=1, begin=0, end=1), axis=1),
        sym.Pad(a, mode="constant", pad_width=(0, 0, 0, 0, 1, 2, 2, 1), constant_value=0.5),
        sym.FullyConnected(a, num_hidden=3, flatten=False, name="fc_nf"),
        sym.exp(sym.tanh(b)),
        sym.SoftmaxActivation(a, mode="channel"),
    ]
    _roundtrip(tmp_path, sym.Group(outs), {"a": (2, 3, 4, 5), "b": (4, 6)})


def test_embedding_and_cast(tmp_path):
    ids = sym.var("ids")
    emb = sym.Embedding(ids, input_dim=10, output_dim=4, name="emb")
    args, _ = _random_params(emb, {"ids": (2, 3)})
    path = str(tmp_path / "emb.onnx")
    mx.onnx.export_model(emb, args, [(2, 3)], np.float32, path)
    tokens = np.array([[0, 9, 3], [4, 4, 1]], dtype=np.float32)
    got = _onnx_outputs(path, {"ids": tokens})[0]
    np.testing.assert_allclose(got, args["emb_weight"].asnumpy()[tokens.astype(int)])
    half = sym.Cast(sym.var("x"), dtype="float16", name="half")
    path = mx.onnx.export_model(half, {}, [(3,)], np.float32, str(tmp_path / "cast.onnx"))
    out = _onnx_outputs(path, {"x": np.array([1.5, -2.25, 3.0], dtype=np.float32)})[0]
    assert out.dtype == np.float16 and out.tolist() == [1.5, -2.25, 3.0]


# -- export_model's arguments -------------------------------------------------------------------

def _small_net():
    x = _conv_bn_relu(sym.var("data"), "c", 4)
    return sym.SoftmaxOutput(sym.FullyConnected(x, num_hidden=3, name="fc"), name="softmax")


def test_checkpoint_files_and_prefixed_params(tmp_path):
    net = _small_net()
    args, aux = _random_params(net, {"data": (1, 2, 5, 5)})
    prefix = str(tmp_path / "model")
    mx.model.save_checkpoint(prefix, 3, net, args, aux)
    x = np.random.default_rng(3).standard_normal((1, 2, 5, 5)).astype(np.float32)
    want = _ferrograd_outputs(net, args, aux, {"data": x})[0]
    paths = [mx.onnx.export_model(f"{prefix}-symbol.json", f"{prefix}-0003.params",
                                  [(1, 2, 5, 5)], onnx_file_path=str(tmp_path / "a.onnx")),
             mx.contrib.onnx.export_model(net, [args, aux], input_shape=[(1, 2, 5, 5)],
                                          input_type=np.float32,
                                          onnx_file_path=str(tmp_path / "b.onnx")),
             mx.onnx.export_model(net, mx.nd.load(f"{prefix}-0003.params"), [(1, 2, 5, 5)],
                                  onnx_file_path=str(tmp_path / "c.onnx"))]
    for path in paths:
        np.testing.assert_allclose(_onnx_outputs(path, {"data": x})[0], want, rtol=1e-4,
                                   atol=1e-5)


MXNET_FILES = os.path.join(os.path.dirname(__file__), "data", "mxnet_files")


def test_checkpoint_written_by_mxnet(tmp_path):
    # FullyConnected -> BatchNorm -> relu -> SoftmaxOutput, saved by MXNet 1.9.1's
    # Module.save_checkpoint (see tests/fixtures/gen_mxnet_ndarray_files.py).
    prefix = os.path.join(MXNET_FILES, "ckpt")
    net, args, aux = mx.model.load_checkpoint(prefix, 3)
    path = mx.onnx.export_model(f"{prefix}-symbol.json", f"{prefix}-0003.params", [(3, 2)],
                                onnx_file_path=str(tmp_path / "ckpt.onnx"))
    model = onnx.load(path)
    assert [i.name for i in model.graph.input] == ["data"]
    assert "softmax_label" not in {i.name for i in model.graph.initializer}
    x = np.random.default_rng(5).standard_normal((3, 2)).astype(np.float32)
    want = _ferrograd_outputs(net, args, aux, {"data": x})[0]
    np.testing.assert_allclose(_onnx_outputs(path, {"data": x})[0], want, rtol=1e-4, atol=1e-6)


def test_dynamic_batch(tmp_path):
    net = resnet18(width=4)
    args, aux = _random_params(net, {"data": (1, 3, 16, 16)})
    path = mx.onnx.export_model(net, {**args, **aux}, [(1, 3, 16, 16)], np.float32,
                                str(tmp_path / "dyn.onnx"), dynamic=True,
                                dynamic_input_shapes=[(None, 3, 16, 16)],
                                run_shape_inference=True)
    model = onnx.load(path)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value if d.HasField("dim_value") else None for d in dims] == [None, 3, 16, 16]
    x = np.random.default_rng(0).standard_normal((5, 3, 16, 16)).astype(np.float32)
    want = _ferrograd_outputs(net, args, aux, {"data": x})[0]
    np.testing.assert_allclose(_onnx_outputs(path, {"data": x})[0], want, rtol=1e-4, atol=1e-4)


def test_verbose_logs_each_node(tmp_path, caplog):
    net = _small_net()
    args, aux = _random_params(net, {"data": (1, 2, 5, 5)})
    with caplog.at_level("INFO"):
        mx.onnx.export_model(net, {**args, **aux}, [(1, 2, 5, 5)], verbose=True,
                             onnx_file_path=str(tmp_path / "v.onnx"))
    text = caplog.text
    for layer in ("c_conv", "c_bn", "fc", "softmax"):
        assert f"name {layer}" in text, layer


def test_operator_support_lists_the_zoo_ops():
    ops = mx.onnx.get_operator_support()
    for op in ("Convolution", "Deconvolution", "BatchNorm", "Pooling", "Activation", "LeakyReLU",
               "FullyConnected", "Flatten", "Concat", "elemwise_add", "broadcast_add", "_Plus",
               "Dropout", "softmax", "SoftmaxOutput", "Reshape", "clip", "transpose", "mean"):
        assert op in ops, op
    assert ops == sorted(ops)


# -- bad input ----------------------------------------------------------------------------------

def test_unsupported_operator_is_named(tmp_path):
    net = sym.topk(sym.FullyConnected(sym.var("data"), num_hidden=4, name="fc"), k=2)
    args, _ = _random_params(net, {"data": (2, 3)})
    with pytest.raises(mx.MXNetError, match="topk") as err:
        mx.onnx.export_model(net, args, [(2, 3)], onnx_file_path=str(tmp_path / "x.onnx"))
    assert isinstance(err.value, mx.onnx.UnsupportedError)
    assert not (tmp_path / "x.onnx").exists()


def test_unsupported_attribute_is_named(tmp_path):
    net = sym.Dropout(sym.var("data"), p=0.5, mode="always", name="drop")
    with pytest.raises(mx.MXNetError, match=r"Dropout.*'drop'.*mode='always'"):
        mx.onnx.export_model(net, {}, [(1, 4)], onnx_file_path=str(tmp_path / "x.onnx"))


def test_input_count_and_param_shape_errors(tmp_path):
    net = _small_net()
    args, aux = _random_params(net, {"data": (1, 2, 5, 5)})
    out = str(tmp_path / "x.onnx")
    with pytest.raises(ValueError, match=r"1 input\(s\).*data.*2 in_shapes"):
        mx.onnx.export_model(net, {**args, **aux}, [(1, 2, 5, 5), (1,)], onnx_file_path=out)
    missing = {k: v for k, v in args.items() if k != "fc_weight"}
    with pytest.raises(ValueError, match="data, fc_weight"):
        mx.onnx.export_model(net, {**missing, **aux}, [(1, 2, 5, 5)], onnx_file_path=out)
    bad = dict(args, fc_weight=mx.nd.zeros((3, 7)))
    with pytest.raises(mx.MXNetError, match="fc"):
        mx.onnx.export_model(net, {**bad, **aux}, [(1, 2, 5, 5)], onnx_file_path=out)
    with pytest.raises(TypeError, match="params"):
        mx.onnx.export_model(net, 42, [(1, 2, 5, 5)], onnx_file_path=out)
    with pytest.raises(TypeError, match="sym"):
        mx.onnx.export_model(42, {}, [(1, 2, 5, 5)], onnx_file_path=out)


def test_missing_onnx_package_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"ferrograd\[onnx\]"):
        mx.onnx.export_model(_small_net(), {}, [(1, 2, 5, 5)],
                             onnx_file_path=str(tmp_path / "x.onnx"))
