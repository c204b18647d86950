"""Sparse storage in Gluon: row_sparse Parameters and gradients through a Trainer."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import gluon


def test_row_sparse_parameter_needs_a_trainer_then_gives_its_rows():
    p = gluon.Parameter("w", shape=(4, 2), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(init="ones", ctx=[mx.cpu(0), mx.cpu(1)])
    rows = mx.nd.array([1, 3])
    with pytest.raises(RuntimeError, match="no Trainer"):
        p.row_sparse_data(rows)
    gluon.Trainer([p], "sgd")
    w = p.row_sparse_data(rows)
    assert w.stype == "row_sparse" and w.context == mx.cpu(0)
    # as MXNet: the kvstore pull brings exactly the asked rows
    assert w.indices.asnumpy().tolist() == [1, 3]
    np.testing.assert_array_equal(w.asnumpy(), [[0, 0], [1, 1], [0, 0], [1, 1]])
    assert len(p.list_row_sparse_data(rows)) == 2
    assert p.grad(mx.cpu(1)).stype == "row_sparse"


@pytest.mark.parametrize("stype, update_on_kvstore", [
    ("default", None), ("default", True), ("default", False), ("row_sparse", None)])
def test_sparse_gradients_are_reduced_over_devices_and_applied(stype, update_on_kvstore):
    params = gluon.ParameterDict()
    x = params.get("x", shape=(5, 1), stype=stype, grad_stype="row_sparse")
    params.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore="local",
                            update_on_kvstore=update_on_kvstore)
    rows = mx.nd.arange(0, 5)
    ws = x.list_data() if stype == "default" else x.list_row_sparse_data(rows)
    with mx.autograd.record():
        for w in ws:
            (w * 3).backward()
    trainer.step(1)
    got = x.data(mx.cpu(0)) if stype == "default" else x.row_sparse_data(rows)
    # gradient 3 on each of two devices, summed, times the learning rate
    np.testing.assert_allclose(got.asnumpy(), np.full((5, 1), -0.6), rtol=1e-6)


def test_sparse_weights_refuse_updates_outside_the_kvstore():
    p = gluon.Parameter("w", shape=(2, 2), stype="row_sparse")
    p.initialize()
    trainer = gluon.Trainer([p], "sgd", update_on_kvstore=False)
    with pytest.raises(ValueError, match="sparse weights"):
        trainer._init_kvstore()


def test_embedding_sparse_grad_updates_only_looked_up_rows():
    emb = gluon.nn.Embedding(6, 2, sparse_grad=True)
    emb.initialize(init="ones")
    trainer = gluon.Trainer(emb.collect_params(), "sgd", {"learning_rate": 1.0, "wd": 0.5})
    with mx.autograd.record():
        emb(mx.nd.array([1, 4, 4])).sum().backward()
    trainer.step(1)
    w = emb.weight.data().asnumpy()
    # lazy update: rows not looked up keep their value, weight decay included
    np.testing.assert_allclose(w[[0, 2, 3, 5]], 1.0)
    np.testing.assert_allclose(w[1], 1 - (1 + 0.5))
    np.testing.assert_allclose(w[4], 1 - (2 + 0.5))


def test_ndarray_iter_batches_csr_data_and_requires_discard():
    dense = np.arange(12, dtype=np.float32).reshape(6, 2) % 3
    csr = mx.nd.array(dense).tostype("csr")
    with pytest.raises(NotImplementedError, match="discard"):
        mx.io.NDArrayIter(csr, batch_size=4)
    it = mx.io.NDArrayIter(csr, mx.nd.arange(6), batch_size=4, last_batch_handle="discard")
    batches = list(it)
    assert len(batches) == 1
    assert batches[0].data[0].stype == "csr"
    np.testing.assert_array_equal(batches[0].data[0].asnumpy(), dense[:4])
    shuffled = mx.io.NDArrayIter(csr, batch_size=3, shuffle=True, last_batch_handle="discard")
    rows = np.concatenate([b.data[0].asnumpy() for b in shuffled])
    assert sorted(map(tuple, rows)) == sorted(map(tuple, dense))


def test_module_keeps_declared_row_sparse_parameters_sparse():
    x = mx.sym.var("data", stype="csr")
    v = mx.sym.var("v", shape=(5, 1), init=mx.init.One(), stype="row_sparse")
    out = mx.sym.LinearRegressionOutput(mx.sym.dot(x, v), mx.sym.var("label"))
    mod = mx.mod.Module(out, data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=[("data", (2, 5))], label_shapes=[("label", (2, 1))])
    mod.init_params()
    p = mod._arg_params["v"]
    assert p.stype == "row_sparse" and p.indices.asnumpy().tolist() == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(p.asnumpy(), np.ones((5, 1)))


def test_check_symbolic_backward_honours_grad_stypes():
    from ferrograd import test_utils as tu
    data, w = mx.sym.var("data"), mx.sym.var("w")
    out = mx.sym.dot(data, w)
    x = np.array([[1.0, 0.0, 2.0]], dtype=np.float32)
    wv = np.ones((3, 2), dtype=np.float32)
    grads = tu.check_symbolic_backward(out, {"data": x, "w": wv}, [np.ones((1, 2))],
                                       {"w": x.T @ np.ones((1, 2))},
                                       grad_stypes={"w": "row_sparse"})
    assert grads["w"].stype == "row_sparse"
    assert grads["w"].indices.asnumpy().tolist() == [0, 2]
    with pytest.raises(mx.MXNetError, match="unknown storage type"):
        tu.check_symbolic_backward(out, {"data": x, "w": wv}, [np.ones((1, 2))],
                                   {"w": x.T @ np.ones((1, 2))}, grad_stypes={"w": "dense"})


def test_row_sparse_data_lives_on_the_row_ids_context_and_var_records_stype():
    p = gluon.Parameter("w", shape=(3, 2), stype="row_sparse")
    p.initialize(init="ones", ctx=[mx.cpu(1), mx.cpu(2)])
    gluon.Trainer([p], "sgd")
    w = p.row_sparse_data(mx.nd.arange(0, 3, ctx=mx.cpu(2)))
    assert w.context == mx.cpu(2)
    assert p.var().attr("__storage_type__") == "1"
