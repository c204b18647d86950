"""gluon.model_zoo.vision: structure, parameter names and shapes against MXNet 1.9.1 (fixture
from tests/fixtures/gen_model_zoo_fixtures.py), outputs equal to MXNet's on MXNet-written
weights, and get_model's errors."""

import json
import os
import re

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.gluon import _serialization
from ferrograd.gluon.model_zoo import vision

DATA = os.path.join(os.path.dirname(__file__), "data", "model_zoo")

with open(os.path.join(DATA, "params.json")) as _f:
    FIXTURE = json.load(_f)
MODELS = FIXTURE["models"]
CLASSES = FIXTURE["classes"]
BLOCKS = {"BasicBlockV1": vision.BasicBlockV1, "BasicBlockV2": vision.BasicBlockV2,
          "BottleneckV1": vision.BottleneckV1, "BottleneckV2": vision.BottleneckV2}


def describe(net):
    """[attribute path, name without the model prefix, shape] for every parameter."""
    keys = _serialization.collect_with_prefix(net)
    return sorted([key, p.name[len(net.prefix):], list(p.shape)] for key, p in keys.items())


def expect_prefix(net, mxnet_prefix):
    # Top-level prefixes carry a process-wide counter: compare the class part only.
    alias = re.fullmatch(r"([a-z0-9]*?)\d+_", mxnet_prefix).group(1)
    assert re.fullmatch(alias + r"\d+_", net.prefix), (net.prefix, mxnet_prefix)


def build_class(case):
    spec = CLASSES[case]
    args = [BLOCKS.get(a, a) if isinstance(a, str) else a for a in spec["args"]]
    return getattr(vision, spec["cls"])(*args, **spec["kwargs"])


def test_get_model_accepts_exactly_mxnets_names():
    assert sorted(vision._MODELS) == sorted(MODELS)
    assert len(MODELS) == 34


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_parameters_match_mxnet(name):
    spec = MODELS[name]
    net = vision.get_model(name)
    expect_prefix(net, spec["prefix"])
    assert describe(net) == sorted(spec["params"])
    assert all(p.name.startswith(net.prefix) for p in net.collect_params().values())


@pytest.mark.parametrize("name", sorted(n for n in MODELS if "repr" in MODELS[n]))
def test_model_prints_as_mxnet(name):
    assert repr(vision.get_model(name)) == MODELS[name]["repr"]


# Heavy at their minimal input (4096-wide dense layers, 224/299 pixels): only a few run forward.
FORWARD = ["alexnet", "densenet121", "inceptionv3", "mobilenet0.5", "mobilenetv2_0.75",
           "resnet18_v1", "resnet34_v2", "resnet50_v1", "resnet50_v2", "squeezenet1.0",
           "squeezenet1.1", "vgg11_bn"]


@pytest.mark.parametrize("name", FORWARD)
def test_model_forward_shape(name):
    spec = MODELS[name]
    net = vision.get_model(name, classes=7)
    net.initialize()
    side = spec["side"]
    out = net(mx.nd.ones((2, 3, side, side)))
    assert out.shape == (2, 7)
    assert np.isfinite(out.asnumpy()).all()
    # Deferred input widths were resolved as MXNet resolves them.
    mxnet_after = {key: shape for key, _, shape in spec["params"]}
    for key, p in _serialization.collect_with_prefix(net).items():
        if key.startswith("output"):
            continue  # classes differ
        assert 0 not in p.shape, key
        known = mxnet_after[key]
        assert all(k in (0, s) for k, s in zip(known, p.shape, strict=True)), (key, known)


@pytest.mark.parametrize("case", sorted(CLASSES))
def test_class_constructors_match_mxnet(case):
    spec = CLASSES[case]
    net = build_class(case)
    expect_prefix(net, spec["prefix"])
    assert describe(net) == sorted(spec["params"])
    net.initialize()
    side = spec["side"]
    out = net(mx.nd.ones((1, 3, side, side)))
    assert list(out.shape) == spec["output_shape"]


OUTPUT_CASES = [("squeezenet1.1_c10", lambda: vision.squeezenet1_1(classes=10)),
                ("mobilenet0.25_c10", lambda: vision.get_model("mobilenet0.25", classes=10)),
                ("mobilenetv2_0.25_c10", lambda: vision.mobilenet_v2_0_25(classes=10)),
                ("resnet_v1_tiny", lambda: build_class("ResNetV1_basic")),
                ("resnet_v2_tiny", lambda: build_class("ResNetV2_bottleneck")),
                ("densenet_tiny", lambda: build_class("DenseNet_small"))]


@pytest.mark.parametrize("stem,make", OUTPUT_CASES, ids=[c[0] for c in OUTPUT_CASES])
def test_mxnet_weights_give_mxnets_output(stem, make):
    """The .params files were written by MXNet (by attribute path, or for two of them by name
    without the model prefix, the layout of MXNet's published pretrained files)."""
    net = make()
    net.load_parameters(os.path.join(DATA, stem + ".params"))
    data = np.load(os.path.join(DATA, stem + ".npz"))
    out = net(mx.nd.array(data["x"])).asnumpy()
    np.testing.assert_allclose(out, data["y"], rtol=1e-4, atol=1e-4)


def _output_and_grads(net, x):
    with mx.autograd.record():
        out = net(x)
        loss = (out * out).sum()
    loss.backward()
    grads = {name: p.grad().asnumpy() for name, p in net.collect_params().items()
             if p.grad_req != "null"}
    return out.asnumpy(), grads


@pytest.mark.parametrize("stem,make", [OUTPUT_CASES[1], OUTPUT_CASES[4]],
                         ids=["mobilenet0.25", "resnet_v2_tiny"])
def test_hybridized_model_matches_imperative(stem, make):
    """Training mode (BatchNorm on batch statistics): outputs and every parameter gradient."""
    net = make()
    net.load_parameters(os.path.join(DATA, stem + ".params"))
    x = mx.nd.array(np.load(os.path.join(DATA, stem + ".npz"))["x"])
    eager_out, eager_grads = _output_and_grads(net, x)
    assert any(np.abs(g).max() > 0 for g in eager_grads.values())
    net.load_parameters(os.path.join(DATA, stem + ".params"))  # undo the running-stat updates
    net.hybridize()
    out, grads = _output_and_grads(net, x)
    np.testing.assert_allclose(out, eager_out, rtol=1e-5, atol=1e-5)
    assert grads.keys() == eager_grads.keys()
    for name, g in grads.items():
        np.testing.assert_allclose(g, eager_grads[name], rtol=1e-4, atol=1e-5, err_msg=name)


def test_symbolic_forward_builds_a_graph_with_mxnets_argument_names():
    net = vision.get_model("mobilenet0.25", classes=5)
    out = net(mx.sym.var("data"))
    args = set(out.list_arguments()) | set(out.list_auxiliary_states())
    assert args == {"data"} | set(net.collect_params().keys())


def test_get_model_is_case_insensitive_and_passes_kwargs():
    net = vision.get_model("ResNet18_V1", classes=3, thumbnail=True)
    assert isinstance(net, vision.ResNetV1)
    assert net.output.weight.shape == (3, 512)
    assert net.features[0].weight.shape == (64, 0, 3, 3)  # thumbnail stem: 3x3, stride 1


def test_get_model_unknown_name_lists_the_options():
    with pytest.raises(ValueError) as info:
        vision.get_model("resnet19_v1")
    msg = str(info.value)
    assert msg.startswith("Model resnet19_v1 is not supported. Available options are\n\t")
    assert msg.split("\n\t")[1:] == sorted(MODELS)


def test_constructor_argument_errors():
    with pytest.raises(AssertionError, match="Invalid number of layers: 20"):
        vision.get_resnet(1, 20)
    with pytest.raises(AssertionError, match="Invalid resnet version: 3"):
        vision.get_resnet(3, 18)
    with pytest.raises(AssertionError, match="Unsupported SqueezeNet version 1.2"):
        vision.SqueezeNet("1.2")
    with pytest.raises(ValueError, match="layers=.*channels="):
        vision.ResNetV1(vision.BasicBlockV1, [2, 2], [64, 64])
    with pytest.raises(ValueError, match="layers and filters"):
        vision.VGG([1, 1], [8])


def test_vgg_bn_variants_and_explicit_batch_norm():
    assert any("batchnorm" in n for n in vision.vgg11_bn(batch_norm=True).collect_params())
    assert not any("batchnorm" in n for n in vision.vgg11().collect_params())


def test_public_names():
    expected = {"get_model", "AlexNet", "alexnet", "DenseNet", "densenet121", "densenet161",
                "densenet169", "densenet201", "Inception3", "inception_v3", "MobileNet",
                "MobileNetV2", "mobilenet1_0", "mobilenet0_75", "mobilenet0_5", "mobilenet0_25",
                "mobilenet_v2_1_0", "mobilenet_v2_0_75", "mobilenet_v2_0_5",
                "mobilenet_v2_0_25", "get_mobilenet", "get_mobilenet_v2", "ResNetV1",
                "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1", "BottleneckV2",
                "get_resnet", "SqueezeNet", "squeezenet1_0", "squeezenet1_1", "VGG", "get_vgg",
                "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn",
                "vgg19_bn"} | {f"resnet{d}_v{v}" for d in (18, 34, 50, 101, 152) for v in (1, 2)}
    assert set(vision.__all__) == expected
    assert all(callable(getattr(vision, n)) for n in expected)
    assert mx.gluon.model_zoo.vision is vision
