"""Row_sparse gradient buffers given to ``autograd.mark_variables``, and row_sparse Parameters on
several devices. Expected values are those MXNet 1.9.1 gives for the same code (checked with
it by hand) and follow from the closed-form gradients noted next to each check.
"""

import ferrograd as mx
import numpy as np
import pytest


def embed(idx, w, n_rows, n_cols):
    return mx.nd.Embedding(mx.nd.array(idx), w, input_dim=n_rows, output_dim=n_cols,
                           sparse_grad=True)


def test_mark_variables_row_sparse_buffer_gets_the_rows_reached():
    w = mx.nd.array(np.arange(12).reshape(4, 3))
    g = mx.nd.sparse.zeros("row_sparse", (4, 3))
    mx.autograd.mark_variables([w], [g], grad_reqs="write")
    coef = mx.nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    with mx.autograd.record():
        z = (embed([0, 2, 2], w, 4, 3) * coef).sum()
    z.backward()
    # d z / d w[r] = sum of the coefficient rows that looked up r; row 2 twice.
    assert isinstance(g, mx.nd.sparse.RowSparseNDArray) and g.stype == "row_sparse"
    np.testing.assert_array_equal(g.indices.asnumpy(), [0, 2])
    np.testing.assert_array_equal(g.data.asnumpy(), [[1, 2, 3], [11, 13, 15]])
    np.testing.assert_array_equal(g.asnumpy(), [[1, 2, 3], [0, 0, 0], [11, 13, 15], [0, 0, 0]])
    assert w.grad.stype == "row_sparse"
    np.testing.assert_array_equal(w.grad.indices.asnumpy(), [0, 2])


def test_write_replaces_the_rows_of_the_previous_backward():
    w = mx.nd.ones((4, 2))
    g = mx.nd.sparse.row_sparse_array((np.full((1, 2), 9, "float32"), [0]), shape=(4, 2))
    mx.autograd.mark_variables(w, g)
    assert g.indices.asnumpy().tolist() == []  # marking starts from no gradient
    for idx, rows in (([2], [2]), ([1, 3], [1, 3])):
        with mx.autograd.record():
            y = embed(idx, w, 4, 2)
        y.backward()
        np.testing.assert_array_equal(g.indices.asnumpy(), rows)
        np.testing.assert_array_equal(g.data.asnumpy(), np.ones((len(rows), 2)))


def test_dense_ops_give_the_nonzero_rows():
    w = mx.nd.array(np.arange(6).reshape(3, 2))
    g = mx.nd.sparse.zeros("row_sparse", (3, 2))
    mx.autograd.mark_variables(w, g)
    with mx.autograd.record():
        z = (w * w).sum()
    mx.autograd.backward(z)  # the functional form refreshes the buffer too
    np.testing.assert_array_equal(g.indices.asnumpy(), [0, 1, 2])
    np.testing.assert_array_equal(g.data.asnumpy(), 2 * np.arange(6).reshape(3, 2))


def test_grad_req_add_accumulates_and_null_leaves_the_buffer_empty():
    a, b = mx.nd.ones((3, 2)), mx.nd.ones((3, 2))
    ga, gb = mx.nd.sparse.zeros("row_sparse", (3, 2)), mx.nd.sparse.zeros("row_sparse", (3, 2))
    mx.autograd.mark_variables([a, b], [ga, gb], ["add", "null"])
    for idx in ([1], [1, 2]):
        with mx.autograd.record():
            y = embed(idx, a, 3, 2) .sum() + embed([0], b, 3, 2).sum()
        y.backward()
    # (MXNet 1.9.1 refused 'add' with a sparse Embedding gradient; here it sums.)
    np.testing.assert_array_equal(ga.indices.asnumpy(), [1, 2])
    np.testing.assert_array_equal(ga.data.asnumpy(), [[2, 2], [1, 1]])
    assert gb.indices.shape == (0,) and gb.data.shape == (0, 2)


def test_buffer_not_reached_by_a_backward_keeps_its_rows():
    w, v = mx.nd.ones((3, 2)), mx.nd.ones((2,))
    g = mx.nd.sparse.zeros("row_sparse", (3, 2))
    mx.autograd.mark_variables(w, g)
    v.attach_grad()
    with mx.autograd.record():
        y = embed([1], w, 3, 2)
    y.backward()
    g[:] = mx.nd.array([[0, 0], [5, 5], [0, 0]])  # as a Trainer's sum across devices does
    with mx.autograd.record():
        z = (v * 2).sum()
    z.backward()
    np.testing.assert_array_equal(g.data.asnumpy(), [[5, 5]])
    np.testing.assert_array_equal(v.grad.asnumpy(), [2, 2])


def test_mark_variables_row_sparse_buffer_of_another_shape_is_an_error():
    with pytest.raises(mx.MXNetError, match=r"mark_variables: gradient buffer has shape \(4, 2\) "
                       r"but the variable has shape \(3, 2\)"):
        mx.autograd.mark_variables([mx.nd.ones((3, 2))], [mx.nd.sparse.zeros("row_sparse", (4, 2))])


CTX = [mx.cpu(0), mx.cpu(1)]


def test_row_sparse_grads_on_two_devices_are_row_sparse_buffers():
    p = mx.gluon.Parameter("w", shape=(4, 2), grad_stype="row_sparse")
    p.initialize(init=mx.init.Constant(1.0), ctx=CTX)
    assert [d.stype for d in p.list_data()] == ["default", "default"]
    grads = p.list_grad()
    assert all(isinstance(g, mx.nd.sparse.RowSparseNDArray) for g in grads)
    assert [g.indices.shape for g in grads] == [(0,), (0,)]
    trainer = mx.gluon.Trainer([p], "sgd", {"learning_rate": 0.1})
    for i, c in enumerate(CTX):
        with mx.autograd.record():
            y = mx.nd.Embedding(mx.nd.array([i, 3], ctx=c), p.data(c), input_dim=4,
                                output_dim=2, sparse_grad=True)
        y.backward()
    assert [g.indices.asnumpy().tolist() for g in p.list_grad()] == [[0, 3], [1, 3]]
    assert p.grad(CTX[1]) is p.list_grad()[1]
    trainer.step(1)
    # The devices' gradients are summed: rows 0 and 1 once, row 3 twice; SGD with lr 0.1.
    want = np.array([[0.9, 0.9], [0.9, 0.9], [1, 1], [0.8, 0.8]], "float32")
    for d in p.list_data():
        np.testing.assert_allclose(d.asnumpy(), want, rtol=1e-6)
    assert [g.indices.asnumpy().tolist() for g in p.list_grad()] == [[0, 1, 3], [0, 1, 3]]
    p.zero_grad()
    assert [g.indices.asnumpy().tolist() for g in p.list_grad()] == [[], []]


def test_row_sparse_weight_on_two_devices_trains_lazily():
    q = mx.gluon.Parameter("q", shape=(4, 2), stype="row_sparse", grad_stype="row_sparse")
    q.initialize(init=mx.init.Constant(2.0), ctx=CTX)
    trainer = mx.gluon.Trainer([q], "sgd", {"learning_rate": 0.5})
    with pytest.raises(RuntimeError, match="storage type is row_sparse"):
        q.list_data()
    for i, c in enumerate(CTX):
        with mx.autograd.record():
            w = q.row_sparse_data(mx.nd.array([i, 2], ctx=c))
            y = mx.nd.Embedding(mx.nd.array([i, 2], ctx=c), w, input_dim=4, output_dim=2,
                                sparse_grad=True)
        y.backward()
        assert w.stype == "row_sparse" and w.context == c
    got = [(g.stype, g.indices.asnumpy().tolist()) for g in q.list_grad()]
    assert got == [("row_sparse", [0, 2]), ("row_sparse", [1, 2])]
    trainer.step(1)
    # Rows 0 and 1: 2 - 0.5 * 1; row 2 (both devices): 2 - 0.5 * 2; row 3 untouched.
    want = [[1.5, 1.5], [1.5, 1.5], [1.0, 1.0], [2.0, 2.0]]
    for r in q.list_row_sparse_data(mx.nd.arange(4)):
        np.testing.assert_array_equal(r.asnumpy(), want)


def test_op_results_report_their_inputs_context():
    a = mx.nd.ones((2, 3), ctx=mx.cpu(1))
    idx = mx.nd.array([[0, 1]], ctx=mx.cpu(2))
    assert mx.nd.relu(a).context == mx.cpu(1)
    assert mx.nd.Embedding(idx, a, input_dim=2, output_dim=3).context == mx.cpu(2)
    assert mx.nd.FullyConnected(a, mx.nd.ones((4, 3)), no_bias=True, num_hidden=4).context \
        == mx.cpu(1)
    assert mx.nd.relu(mx.nd.ones((2,))).context == mx.cpu(0)


class SparseThenDense(mx.gluon.Block):
    """A row_sparse table read with row_sparse_data inside the recorded forward, then a Dense
    layer whose shape is inferred on the first call."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.table = self.params.get("table", shape=(4, 3), stype="row_sparse",
                                         grad_stype="row_sparse")
            self.out = mx.gluon.nn.Dense(2)

    def forward(self, x):
        rows = self.table.row_sparse_data(x)
        return self.out(mx.nd.Embedding(x, rows, input_dim=4, output_dim=3, sparse_grad=True))


@pytest.mark.parametrize("ctx", [[mx.cpu(1), mx.cpu(2)], [mx.cpu(1)], [mx.cpu(0), mx.cpu(3)]])
def test_row_sparse_data_inside_record_sets_the_kvstore_up(ctx):
    net = SparseThenDense(prefix="sd_")
    net.initialize(mx.init.One(), ctx=ctx)
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1})
    batches = mx.gluon.utils.split_and_load(mx.nd.array([[0, 2], [1, 2]]), ctx)
    with mx.autograd.record():  # the first row_sparse_data call creates the kvstore here
        outs = [net(x) for x in batches]
    assert [o.context for o in outs] == ctx
    for o in outs:
        o.backward()
    trainer.step(1)
    assert not trainer._params_to_init
    # Each looked-up row gets d(sum of 2 outputs)/d(row) = 2 (Dense weights of ones) per lookup:
    # rows 0 and 1 once, row 2 twice; SGD with lr 1 from ones.
    table = net.table.row_sparse_data(mx.nd.arange(4, ctx=ctx[0])).asnumpy()
    np.testing.assert_array_equal(table, [[-1] * 3, [-1] * 3, [-3] * 3, [1] * 3])
