"""ONNX export of Gluon model-zoo graphs as MXNet 1.9.1 exports them (reduced width, full
structure): the exported model, run in onnxruntime, gives MXNet's own outputs within 1e-4.

Fixtures: tests/data/onnx_zoo (graphs and MXNet's outputs), written by
tests/fixtures/gen_mxnet_zoo_symbols.py; the parameters are rebuilt from their names by
tests/fixtures/zoo_params.py on both sides."""

import gzip
import os
import sys

import ferrograd as mx
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

HERE = os.path.dirname(__file__)
DATA = os.path.join(HERE, "data", "onnx_zoo")
sys.path.insert(0, os.path.join(HERE, "fixtures"))
from zoo_params import input_value, param_value  # noqa: E402

EXPECTED = np.load(os.path.join(DATA, "expected.npz"))
NETWORKS = ["resnet_v1", "resnet_v2", "mobilenet", "mobilenet_v2", "squeezenet", "densenet",
            "vgg_bn", "inception_v3"]


def _load(name):
    with open(os.path.join(DATA, f"{name}-symbol.json.gz"), "rb") as f:
        return mx.sym.load_json(gzip.decompress(f.read()).decode())


def _params(net, shape):
    arg_shapes, _, aux_shapes = net.infer_shape(data=shape)
    args = {n: mx.nd.array(param_value(n, s))
            for n, s in zip(net.list_arguments(), arg_shapes, strict=True) if n != "data"}
    aux = {n: mx.nd.array(param_value(n, s))
           for n, s in zip(net.list_auxiliary_states(), aux_shapes, strict=True)}
    return args, aux


def test_fixture_is_from_mxnet_1_9():
    assert str(EXPECTED["mxnet_version"]) == "1.9.1"


@pytest.mark.parametrize("name", NETWORKS)
def test_zoo_graph_exports_and_matches_mxnet(tmp_path, name):
    net = _load(name)
    shape = tuple(int(d) for d in EXPECTED[f"{name}_input_shape"])
    args, aux = _params(net, shape)
    path = mx.onnx.export_model(net, {**args, **aux}, [shape], np.float32,
                                str(tmp_path / f"{name}.onnx"))
    x = input_value(shape)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {"data": x})[0]
    want = EXPECTED[f"{name}_output"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    # ... and ferrograd's own executor, on the same graph and parameters.
    exe = net.bind(mx.cpu(), {**args, "data": mx.nd.array(x)}, aux_states=aux, grad_req="null")
    ours = exe.forward(is_train=False)[0].asnumpy()
    np.testing.assert_allclose(got, ours, rtol=1e-4, atol=1e-4 * np.abs(ours).max())
