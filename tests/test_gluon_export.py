"""HybridBlock.export and SymbolBlock: MXNet's two-file format both ways, round trips with equal
outputs and gradients, fine-tuning imported models, and bad input."""

import os

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, gluon
from ferrograd.base import MXNetError
from ferrograd.gluon import nn

MXNET_DIR = os.path.join(os.path.dirname(__file__), "data", "mxnet_gluon_export")


def _model():
    net = nn.HybridSequential(prefix="model_")
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                nn.MaxPool2D(), nn.Dense(3))
    return net


def _grads(net, x, train=True):
    x = x.copy()
    x.attach_grad()
    with autograd.record(train_mode=train):
        y = net(x)
        (y * y).sum().backward()
    return y.asnumpy(), x.grad.asnumpy()


def test_imports_a_model_exported_by_mxnet():
    io = mx.nd.load(os.path.join(MXNET_DIR, "io.params"))
    net = gluon.SymbolBlock.imports(os.path.join(MXNET_DIR, "net-symbol.json"), ["data"],
                                    os.path.join(MXNET_DIR, "net-0000.params"))
    np.testing.assert_allclose(net(io["x"]).asnumpy(), io["y"].asnumpy(), rtol=1e-5, atol=1e-6)
    _, dx = _grads(net, io["x"])
    np.testing.assert_allclose(dx, io["dx"].asnumpy(), rtol=1e-4, atol=1e-5)
    params = net.collect_params()
    assert params["model_batchnorm0_running_mean"].grad_req == "null"
    assert params["model_conv0_weight"].grad_req == "write"
    assert params["model_conv0_weight"].shape == (4, 3, 3, 3)
    assert repr(net) == "SymbolBlock(\n<Symbol model_dense0_fwd> : 1 -> 1\n)"


def test_export_files_and_keys(tmp_path):
    net = _model()
    net.initialize()
    with pytest.raises(RuntimeError, match="hybridize"):
        net.export(str(tmp_path / "early"))
    net.hybridize()
    net(mx.nd.ones((1, 3, 6, 6)))
    sym_file, params_file = net.export(str(tmp_path / "m"), epoch=7)
    assert sym_file == str(tmp_path / "m-symbol.json")
    assert params_file == str(tmp_path / "m-0007.params")
    saved = mx.nd.load(params_file)
    assert sorted(saved) == sorted(
        ["arg:model_conv0_weight", "arg:model_conv0_bias", "arg:model_batchnorm0_gamma",
         "arg:model_batchnorm0_beta", "aux:model_batchnorm0_running_mean",
         "aux:model_batchnorm0_running_var", "arg:model_dense0_weight",
         "arg:model_dense0_bias"])
    np.testing.assert_array_equal(saved["arg:model_dense0_weight"].asnumpy(),
                                  net[4].weight.data().asnumpy())
    graph = mx.sym.load(sym_file)
    assert graph.list_arguments()[0] == "data"
    assert graph.list_auxiliary_states() == ["model_batchnorm0_running_mean",
                                             "model_batchnorm0_running_var"]
    # The symbol/params pair is also an mx.model checkpoint.
    _, args, auxs = mx.model.load_checkpoint(str(tmp_path / "m"), 7)
    assert "model_conv0_weight" in args and "model_batchnorm0_running_var" in auxs


def test_export_import_round_trip_outputs_and_gradients(tmp_path):
    mx.random.seed(5)
    net = _model()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.random.uniform(-1, 1, shape=(2, 3, 6, 6))
    for _ in range(2):
        with autograd.record():
            net(x)
    net.export(str(tmp_path / "rt"))
    back = gluon.SymbolBlock.imports(str(tmp_path / "rt-symbol.json"), "data",
                                     str(tmp_path / "rt-0000.params"))
    np.testing.assert_allclose(back(x).asnumpy(), net(x).asnumpy(), rtol=1e-6)
    ya, dxa = _grads(net, x)
    yb, dxb = _grads(back, x)
    np.testing.assert_allclose(yb, ya, rtol=1e-6)
    np.testing.assert_allclose(dxb, dxa, rtol=1e-5, atol=1e-7)
    original = net.collect_params()
    for name, p in back.collect_params().items():
        if p.grad_req != "null":
            np.testing.assert_allclose(p.grad().asnumpy(), original[name].grad().asnumpy(),
                                       rtol=1e-5, atol=1e-7)


def test_imported_model_fine_tunes():
    io = mx.nd.load(os.path.join(MXNET_DIR, "io.params"))
    net = gluon.SymbolBlock.imports(os.path.join(MXNET_DIR, "net-symbol.json"), ["data"],
                                    os.path.join(MXNET_DIR, "net-0000.params"))
    x = io["x"]

    def loss_value():
        return float((net(x) ** 2).sum().asscalar())

    before = loss_value()
    for _ in range(3):
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        for p in net.collect_params().values():
            if p.grad_req != "null":
                p.set_data(p.data() - 0.01 * p.grad())
    assert loss_value() < before


def test_symbol_block_from_symbols_with_two_outputs_and_shared_params():
    data = mx.sym.var("data")
    hidden = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    block = gluon.SymbolBlock([hidden, mx.sym.relu(hidden)], data)
    block.initialize(mx.init.One())  # the bias too (its variable names no initializer)
    out, act = block(mx.nd.array([[1.0, -2.0]]))
    np.testing.assert_allclose(out.asnumpy(), [[0.0, 0.0, 0.0]])  # 1 - 2 + 1
    np.testing.assert_allclose(act.asnumpy(), [[0.0, 0.0, 0.0]])
    assert sorted(block.collect_params()) == ["fc_bias", "fc_weight"]
    block.collect_params()["fc_weight"].set_data(mx.nd.array([[1, 0], [0, 1], [1, 1]]))
    out, act = block(mx.nd.array([[1.0, -2.0]]))
    np.testing.assert_allclose(act.asnumpy(), [[2.0, 0.0, 0.0]])
    # Another block over the same variables shares the Parameters given as params=.
    twin = gluon.SymbolBlock(hidden, data, params=block.collect_params())
    assert twin.collect_params()["fc_weight"] is block.collect_params()["fc_weight"]
    np.testing.assert_allclose(twin(mx.nd.array([[1.0, -2.0]])).asnumpy(), [[2, -1, 0]])
    # Called on a Symbol it composes its graph onto it.
    composed = twin(mx.sym.var("z"))
    assert composed.list_arguments() == ["z", "fc_weight", "fc_bias"]


def test_symbol_block_bad_input(tmp_path):
    data = mx.sym.var("data")
    with pytest.raises(ValueError, match="not a variable"):
        gluon.SymbolBlock(mx.sym.relu(data), mx.sym.relu(data))
    net = _model()
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((1, 3, 6, 6)))
    net.export(str(tmp_path / "b"))
    params = mx.nd.load(str(tmp_path / "b-0000.params"))
    del params["arg:model_dense0_bias"]
    params["arg:extra"] = mx.nd.ones((1,))
    mx.nd.save(str(tmp_path / "bad.params"), params)
    sym_file = str(tmp_path / "b-symbol.json")
    with pytest.raises(MXNetError, match="model_dense0_bias"):
        gluon.SymbolBlock.imports(sym_file, ["data"], str(tmp_path / "bad.params"),
                                  ignore_extra=True)
    with pytest.raises(MXNetError, match="extra"):
        gluon.SymbolBlock.imports(sym_file, ["data"], str(tmp_path / "bad.params"),
                                  allow_missing=True)
    block = gluon.SymbolBlock.imports(sym_file, ["data"], str(tmp_path / "bad.params"),
                                      allow_missing=True, ignore_extra=True)
    with pytest.raises(ValueError, match="argument structure"):
        block(mx.nd.ones((1, 3, 6, 6)), mx.nd.ones((1,)))


def test_deduplicated_file_loads_into_shared_parameters(tmp_path):
    class Pair(gluon.Block):
        def __init__(self):
            super().__init__()
            self.a = nn.Dense(2, in_units=2)
            self.b = nn.Dense(2, in_units=2, params=self.a.collect_params())

    net = Pair()
    net.initialize()
    path = str(tmp_path / "dedup.params")
    net.save_parameters(path, deduplicate=True)
    assert sorted(mx.nd.load(path)) == ["a.bias", "a.weight"]
    other = Pair()
    other.load_parameters(path)
    np.testing.assert_array_equal(other.b.weight.data().asnumpy(),
                                  net.a.weight.data().asnumpy())
    assert gluon.nn.SymbolBlock is gluon.SymbolBlock


def test_sparse_storage_is_refused_clearly():
    weight = mx.sym.var("weight", stype="row_sparse")
    with pytest.raises(AssertionError) as err:
        gluon.SymbolBlock(mx.sym.dot(mx.sym.var("data"), weight), mx.sym.var("data"))
    # MXNet 1.9.1's message, word for word.
    assert str(err.value) == ("SymbolBlock doesn't support Parameter 'weight' because its storage "
                              "type is 'row_sparse'.")
    sparse = gluon.Parameter("w", shape=(2, 2), stype="row_sparse")
    sparse.initialize()
    with pytest.raises(RuntimeError, match="use row_sparse_data"):
        sparse.data()
    with pytest.raises(RuntimeError, match="no Trainer"):
        sparse.row_sparse_data(mx.nd.arange(0, 2))
    dense = gluon.Parameter("v", shape=(2, 2))
    dense.initialize()
    with pytest.raises(RuntimeError, match="use data"):
        dense.list_row_sparse_data(mx.nd.arange(0, 2))
