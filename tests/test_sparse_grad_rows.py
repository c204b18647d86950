"""Row-sparse gradients held as rows (issue 20, item 2): ``attach_grad(stype='row_sparse')``,
``Embedding(sparse_grad=True)``, ``take`` along axis 0, Gluon's ``grad_stype`` and the Trainer's
lazy updates. References are dense NumPy gradients written here."""

import os
import subprocess
import sys
import textwrap

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, gluon, nd

ROWS, DIM = 7, 3


def table(rows=ROWS, dim=DIM):
    return nd.array(np.arange(rows * dim, dtype=np.float32).reshape(rows, dim) / 10)


def dense_embedding_grad(idx, head, rows=ROWS):
    """The dense weight gradient of ``Embedding``: head rows added at the (clipped) indices."""
    flat = np.clip(np.trunc(np.asarray(idx, dtype=np.float64)).astype(np.int64), 0, rows - 1)
    head = np.asarray(head, dtype=np.float32).reshape(flat.size, -1)
    out = np.zeros((rows, head.shape[1]), dtype=np.float32)
    np.add.at(out, flat.reshape(-1), head)
    return out


def check_rows(g, want_dense):
    """``g`` is row_sparse, holds exactly the rows the batch reached (sorted, unique), and its
    values equal the dense reference."""
    assert g.stype == "row_sparse"
    idx = g.indices.asnumpy()
    assert g.indices.dtype == np.int64
    assert (np.diff(idx) > 0).all()
    np.testing.assert_allclose(g.asnumpy(), want_dense, rtol=1e-6, atol=1e-6)
    return idx


def embed(idx, w, **kw):
    return nd.Embedding(nd.array(idx), w, input_dim=w.shape[0], output_dim=w.shape[1],
                        sparse_grad=True, **kw)


def test_attached_row_sparse_grad_starts_with_no_rows():
    w = table()
    w.attach_grad(stype="row_sparse")
    g = w.grad
    assert g.stype == "row_sparse" and g.shape == (ROWS, DIM)
    assert g.indices.shape == (0,) and g.data.shape == (0, DIM)
    np.testing.assert_array_equal(g.asnumpy(), np.zeros((ROWS, DIM), np.float32))


def test_repeated_indices_in_a_2d_batch_sum_their_rows():
    w = table()
    w.attach_grad(stype="row_sparse")
    idx = [[3, 1, 3], [5, 3, 0]]
    head = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    with autograd.record():
        y = embed(idx, w)
    y.backward(nd.array(head))
    got = check_rows(w.grad, dense_embedding_grad(idx, head))
    np.testing.assert_array_equal(got, [0, 1, 3, 5])
    # row 3 is the sum of three head rows, in order
    np.testing.assert_array_equal(w.grad.data.asnumpy()[2], head[0, 0] + head[0, 2] + head[1, 1])


def test_rows_stay_even_when_their_gradient_is_zero():
    # as MXNet: the rows looked up are stored, whatever their values
    w = table()
    w.attach_grad(stype="row_sparse")
    with autograd.record():
        y = embed([4, 2], w)
    y.backward(nd.zeros((2, DIM)))
    np.testing.assert_array_equal(w.grad.indices.asnumpy(), [2, 4])
    np.testing.assert_array_equal(w.grad.data.asnumpy(), np.zeros((2, DIM), np.float32))


def test_float_and_out_of_range_indices_resolve_like_the_forward():
    # float indices truncate and out-of-range ones clip, as Embedding's forward reads them
    w = table()
    w.attach_grad(stype="row_sparse")
    idx = [2.7, -3.0, 11.0, 6.0]
    with autograd.record():
        y = embed(idx, w)
        loss = (y * nd.array(np.arange(12, dtype=np.float32).reshape(4, 3))).sum()
    loss.backward()
    got = check_rows(w.grad, dense_embedding_grad(idx, np.arange(12).reshape(4, 3)))
    np.testing.assert_array_equal(got, [0, 2, 6])


def test_take_along_axis_0_gives_rows():
    w = table()
    w.attach_grad(stype="row_sparse")
    idx = [6, 1, 6]
    with autograd.record():
        y = nd.take(w, nd.array(idx))
    y.backward()
    check_rows(w.grad, dense_embedding_grad(idx, np.ones((3, DIM))))
    np.testing.assert_array_equal(w.grad.indices.asnumpy(), [1, 6])


def test_mixed_sparse_and_dense_contributions_give_the_dense_values():
    w = table()
    w.attach_grad(stype="row_sparse")
    idx = [1, 1, 4]
    with autograd.record():
        loss = (embed(idx, w) * 3).sum() + (w * w).sum()
    loss.backward()
    want = dense_embedding_grad(idx, np.full((3, DIM), 3.0)) + 2 * w.asnumpy()
    g = w.grad
    assert g.stype == "row_sparse"
    np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-6)
    # every row has a nonzero gradient (row 0 holds 2*w[0] = [0, .2, .4])
    np.testing.assert_array_equal(g.indices.asnumpy(), np.arange(ROWS))


def test_two_lookups_of_one_table_merge_into_one_gradient():
    w = table()
    w.attach_grad(stype="row_sparse")
    with autograd.record():
        loss = embed([5, 2], w).sum() + 2 * embed([2, 0], w).sum()
    loss.backward()
    want = dense_embedding_grad([5, 2], np.ones((2, DIM))) + dense_embedding_grad(
        [2, 0], np.full((2, DIM), 2.0))
    np.testing.assert_array_equal(check_rows(w.grad, want), [0, 2, 5])


def test_write_replaces_the_rows():
    w = table()
    w.attach_grad(stype="row_sparse")
    for idx in ([1, 1], [4, 2]):
        with autograd.record():
            y = embed(idx, w)
        y.backward()
    check_rows(w.grad, dense_embedding_grad([4, 2], np.ones((2, DIM))))
    np.testing.assert_array_equal(w.grad.indices.asnumpy(), [2, 4])


def test_add_twice_merges_the_rows():
    # MXNet rejects grad_req='add' for sparse Embedding gradients; here the rows accumulate
    w = table()
    w.attach_grad(grad_req="add", stype="row_sparse")
    heads = [np.full((2, DIM), 1.5, np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)]
    for idx, head in zip(([1, 1], [4, 1]), heads, strict=True):
        with autograd.record():
            y = embed(idx, w)
        y.backward(nd.array(head))
    want = dense_embedding_grad([1, 1], heads[0]) + dense_embedding_grad([4, 1], heads[1])
    np.testing.assert_array_equal(check_rows(w.grad, want), [1, 4])


def test_grad_req_null_has_no_gradient():
    w = table()
    w.attach_grad(grad_req="null", stype="row_sparse")
    assert w.grad is None


def test_non_sparse_lookup_of_a_row_sparse_variable_still_has_the_right_values():
    # MXNet refuses sparse_grad=False with a row_sparse weight gradient; here it is dense work
    w = table()
    w.attach_grad(stype="row_sparse")
    with autograd.record():
        y = nd.Embedding(nd.array([3, 0]), w, input_dim=ROWS, output_dim=DIM)
    y.backward()
    np.testing.assert_array_equal(check_rows(w.grad, dense_embedding_grad([3, 0], np.ones(
        (2, DIM)))), [0, 3])


def test_autograd_grad_returns_rows_and_leaves_grad_alone():
    w = table()
    w.attach_grad(stype="row_sparse")
    idx = [[6, 2], [2, 2]]
    with autograd.record():
        y = embed(idx, w)
    (g,) = autograd.grad(y, [w])
    assert isinstance(g, nd.sparse.RowSparseNDArray)
    np.testing.assert_array_equal(check_rows(g, dense_embedding_grad(idx, np.ones((2, 2, DIM)))),
                                  [2, 6])
    assert w.grad.indices.shape == (0,)


def test_autograd_grad_of_a_densely_reached_row_sparse_variable_is_row_sparse():
    w, v = table(), table()
    w.attach_grad(stype="row_sparse")
    v.attach_grad(stype="row_sparse")
    with autograd.record():
        y = embed([1], w) + v.sum() * 0
    gw, gv = autograd.grad(y, [w, v])
    np.testing.assert_array_equal(gw.indices.asnumpy(), [1])
    assert gv.stype == "row_sparse"  # as MXNet, whatever the contribution
    np.testing.assert_array_equal(gv.asnumpy(), np.zeros((ROWS, DIM), np.float32))
    assert gv.indices.shape == (0,)


def test_contrib_sparse_embedding_gives_rows():
    w = table()
    w.attach_grad(stype="row_sparse")
    with autograd.record():
        y = nd.contrib.SparseEmbedding(nd.array([0, 6, 0]), w, input_dim=ROWS, output_dim=DIM)
    y.backward()
    np.testing.assert_array_equal(check_rows(w.grad, dense_embedding_grad([0, 6, 0], np.ones(
        (3, DIM)))), [0, 6])


def test_float64_table_keeps_its_dtype():
    w = nd.array(np.ones((5, 2)), dtype="float64")
    w.attach_grad(stype="row_sparse")
    with autograd.record():
        y = nd.Embedding(nd.array([3, 3]), w, input_dim=5, output_dim=2, dtype="float64",
                         sparse_grad=True)
    y.backward()
    g = w.grad
    assert g.dtype == np.float64 and g.data.dtype == np.float64
    np.testing.assert_array_equal(g.data.asnumpy(), [[2.0, 2.0]])


def test_merging_is_bitwise_deterministic():
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 50, 2000)
    head = nd.array(rng.standard_normal((2000, 4)).astype(np.float32))
    w = nd.zeros((50, 4))
    results = []
    for _ in range(3):
        w.attach_grad(stype="row_sparse")
        with autograd.record():
            y = nd.Embedding(nd.array(idx), w, input_dim=50, output_dim=4, sparse_grad=True)
        y.backward(head)
        results.append(w.grad.data.asnumpy().tobytes())
    assert results[0] == results[1] == results[2]


# ---------------------------------------------------------------------------------------------
# Gluon


def make_embedding(rows=ROWS, dim=DIM):
    emb = gluon.nn.Embedding(rows, dim, sparse_grad=True)
    emb.initialize(init=mx.init.Constant(0.5))
    return emb


def test_gluon_embedding_gradient_and_zero_grad():
    emb = make_embedding()
    idx = [3, 1, 3]
    with autograd.record():
        y = emb(nd.array(idx))
    y.backward()
    g = emb.weight.grad()
    np.testing.assert_array_equal(check_rows(g, dense_embedding_grad(idx, np.ones((3, DIM)))),
                                  [1, 3])
    assert [x.stype for x in emb.weight.list_grad()] == ["row_sparse"]
    emb.weight.zero_grad()  # as MXNet: no stored rows are left
    g = emb.weight.grad()
    assert g.stype == "row_sparse" and g.indices.shape == (0,) and g.data.shape == (0, DIM)


def sgd_rows(w, rows, g, lr, wd, momentum=0.0, mom=None):
    """MXNet's lazy sgd(_mom)_update on ``rows`` only."""
    w, mom = w.copy(), None if mom is None else mom.copy()
    step = g + wd * w[rows]
    if mom is None:
        w[rows] -= lr * step
    else:
        mom[rows] = momentum * mom[rows] - lr * step
        w[rows] += mom[rows]
    return w, mom


def adam_rows(w, rows, g, m, v, t, lr, wd, b1=0.9, b2=0.999, eps=1e-8):
    """MXNet's lazy adam_update on ``rows`` only (lr with the bias corrections folded in)."""
    w, m, v = w.copy(), m.copy(), v.copy()
    lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    step = g + wd * w[rows]
    m[rows] = b1 * m[rows] + (1 - b1) * step
    v[rows] = b2 * v[rows] + (1 - b2) * step * step
    w[rows] -= lr_t * m[rows] / (np.sqrt(v[rows]) + eps)
    return w, m, v


def train_steps(optimizer, params, batches):
    emb = make_embedding()
    trainer = gluon.Trainer(emb.collect_params(), optimizer, params)
    history = []
    for idx in batches:
        with autograd.record():
            y = emb(nd.array(idx))
            loss = (y * nd.array(np.arange(len(idx) * DIM, dtype=np.float32)
                                 .reshape(len(idx), DIM))).sum()
        loss.backward()
        trainer.step(2)
        history.append(emb.weight.data().asnumpy())
    return history


BATCHES = ([3, 1, 3], [5, 1])


def batch_grad(idx):
    head = np.arange(len(idx) * DIM, dtype=np.float32).reshape(len(idx), DIM)
    full = dense_embedding_grad(idx, head) / 2  # rescale_grad = 1 / batch_size
    rows = np.unique(idx)
    return rows, full[rows]


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_trainer_sgd_updates_only_the_looked_up_rows(momentum):
    lr, wd = 0.1, 0.05
    got = train_steps("sgd", {"learning_rate": lr, "wd": wd, "momentum": momentum}, BATCHES)
    w = np.full((ROWS, DIM), 0.5, np.float32)
    mom = np.zeros_like(w) if momentum else None
    for idx, after in zip(BATCHES, got, strict=True):
        rows, g = batch_grad(idx)
        w, mom = sgd_rows(w, rows, g, lr, wd, momentum, mom)
        np.testing.assert_allclose(after, w, rtol=1e-5, atol=1e-6)
    untouched = [r for r in range(ROWS) if r not in (1, 3, 5)]
    np.testing.assert_array_equal(got[-1][untouched], 0.5)


def test_trainer_adam_updates_only_the_looked_up_rows():
    lr, wd = 0.01, 0.01
    got = train_steps("adam", {"learning_rate": lr, "wd": wd}, BATCHES)
    w = np.full((ROWS, DIM), 0.5, np.float64)
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t, (idx, after) in enumerate(zip(BATCHES, got, strict=True), start=1):
        rows, g = batch_grad(idx)
        w, m, v = adam_rows(w, rows, g, m, v, t, lr, wd)
        np.testing.assert_allclose(after, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[-1][[0, 2, 4, 6]], 0.5)


# ---------------------------------------------------------------------------------------------
# no dense buffer


def test_a_table_whose_dense_gradient_cannot_be_allocated_still_trains():
    """Under an address-space limit that leaves no room for a second table-sized buffer, the
    row-sparse backward of a large Embedding works (a dense gradient would fail to allocate)."""
    script = textwrap.dedent("""
        import resource, numpy as np, ferrograd as mx
        from ferrograd import nd, autograd
        rows, dim = 20_000_000, 8          # 640 MB of float32
        w = nd.zeros((rows, dim))
        nd.ones((1000, 1000)).sum().wait_to_read()   # start the worker threads first
        vm = int([l for l in open('/proc/self/status') if l.startswith('VmSize')][0].split()[1])
        room = 320 * 2**20                 # half the 640 MB a dense gradient needs
        resource.setrlimit(resource.RLIMIT_AS, (vm * 1024 + room, resource.RLIM_INFINITY))
        try:
            np.zeros((rows, dim), np.float32)
            print("DENSE-FITS")
        except MemoryError:
            print("DENSE-FAILS")
        w.attach_grad(stype="row_sparse")
        idx = np.array([rows - 1, 5, 5, 123456])
        with autograd.record():
            y = nd.Embedding(nd.array(idx), w, input_dim=rows, output_dim=dim, sparse_grad=True)
        y.backward()
        # the limit covered the backward; building the RowSparseNDArray is sparse_storage's part
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        g = w.grad
        print("INDICES", g.indices.asnumpy().tolist())
        print("DATA", g.data.asnumpy()[:, 0].tolist())
    """)
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "DENSE-FAILS" in out.stdout, out.stdout
    assert "INDICES [5, 123456, 19999999]" in out.stdout, out.stdout
    assert "DATA [2.0, 1.0, 1.0]" in out.stdout, out.stdout


def test_two_devices_sum_their_rows_in_the_trainer():
    params = gluon.ParameterDict()
    w = params.get("w", shape=(6, 2), grad_stype="row_sparse")
    params.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 1.0}, kvstore="local")
    with autograd.record():
        losses = [nd.Embedding(nd.array(idx, ctx=d.context), d, input_dim=6, output_dim=2,
                               sparse_grad=True).sum()
                  for idx, d in zip(([1, 4], [4, 5]), w.list_data(), strict=True)]
    autograd.backward(losses)
    trainer.step(1)
    want = np.zeros((6, 2), np.float32)
    want[[1, 5]] = -1.0
    want[4] = -2.0  # both devices' rows, summed
    for d in w.list_data():
        np.testing.assert_array_equal(d.asnumpy(), want)
