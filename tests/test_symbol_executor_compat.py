"""Symbol/executor behaviours MXNet code relies on: dtype inference through Cast, memory shared
by ``Executor.reshape``, ``nd.CachedOp``, ``sym._internal``, 1-D Pooling with a long pad and
the executor's memory line. Values are derived by hand (and agree with MXNet 1.9.1)."""

import re

import ferrograd as mx
import numpy as np
import pytest

sym = mx.sym


def test_infer_type_follows_cast_without_shapes():
    data = sym.var("data")
    fc = sym.FullyConnected(sym.Cast(data=data, dtype="float32"), name="fc1", num_hidden=4)
    net = sym.SoftmaxOutput(fc, name="softmax")
    args, outs, aux = net.infer_type(data=np.float16)
    assert args == [np.float16, np.float32, np.float32, np.float32]
    assert outs == [np.float32] and aux == []
    args, outs, _ = net.infer_type_partial()
    assert args == [None, np.float32, np.float32, np.float32]
    assert outs == [np.float32]


def test_reshaped_executor_shares_memory_with_its_parent():
    y = sym.FullyConnected(sym.var("x"), num_hidden=4)
    exe = y.simple_bind(mx.cpu(), x=(5, 4), grad_req="null")
    exe.arg_arrays[0][:] = 1
    exe.arg_arrays[1][:] = mx.nd.ones((4, 4))
    exe.arg_arrays[2][:] = 0
    small = exe.reshape(x=(3, 4))
    small.forward(is_train=False)
    # Each output is a sum of four ones.
    assert (small.outputs[0].asnumpy() == 4).all()
    assert (exe.outputs[0].asnumpy()[:3] == 4).all()
    assert (exe.outputs[0].asnumpy()[3:] == 0).all()
    # The data array is a view of the parent's.
    small.arg_arrays[0][:] = 2
    assert (exe.arg_arrays[0].asnumpy()[:3] == 2).all()
    assert (exe.arg_arrays[0].asnumpy()[3:] == 1).all()
    # Growing allocates new data but shares the unchanged weight.
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_arrays[0][:] = 0
    assert (exe.arg_arrays[0].asnumpy()[3:] == 1).all()
    assert big.arg_arrays[1] is exe.arg_arrays[1]
    with pytest.raises(mx.MXNetError, match="larger than original"):
        exe.reshape(x=(7, 4))


def test_cached_op_runs_the_graph_and_records_for_autograd():
    net = sym.FullyConnected(sym.var("x"), num_hidden=2, name="fc") * 2
    op = mx.nd.CachedOp(net)
    x = mx.nd.array([[1.0, 2.0, 3.0]])
    w = mx.nd.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    b = mx.nd.array([0.5, -0.5])
    # 2 * (x @ w.T + b) = 2 * [4.5, 1.5]
    np.testing.assert_allclose(op(x, w, b).asnumpy(), [[9.0, 3.0]])
    out = mx.nd.zeros((1, 2))
    assert op(x, w, b, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), [[9.0, 3.0]])
    w.attach_grad()
    with mx.autograd.record():
        y = op(x, w, b)
    y.backward()
    # d(sum y)/dw = 2 * x for each row.
    np.testing.assert_allclose(w.grad.asnumpy(), [[2.0, 4.0, 6.0], [2.0, 4.0, 6.0]])
    # Another input shape works with the same op.
    np.testing.assert_allclose(op(mx.nd.ones((2, 3)), w, b).asnumpy(), [[5.0, 1.0]] * 2)
    with pytest.raises(mx.MXNetError, match="CachedOp"):
        op(x, w)


def test_internal_namespace_holds_underscore_ops():
    a, b = sym.var("a"), sym.var("b")
    s = sym._internal._plus(a, b)
    assert s.list_arguments() == ["a", "b"]
    assert sym._internal._mul_scalar(a, scalar=3.0).attr("scalar") == "3.0"


def test_one_d_pooling_reads_only_the_first_pad_entries():
    x = mx.nd.arange(10).reshape((1, 1, 10))
    y = mx.nd.Pooling(x, kernel=(3,), pad=(1, 1, 1), stride=(1,), pool_type="max")
    np.testing.assert_array_equal(y.asnumpy().ravel(), [1, 2, 3, 4, 5, 6, 7, 8, 9, 9])


def test_debug_str_reports_whole_megabytes_like_mxnet():
    data = sym.var("data")
    for _ in range(3):
        data = data * data
    with_grad = data.simple_bind(mx.cpu(), data=(256, 1024))
    no_grad = data.simple_bind(mx.cpu(), data=(256, 1024), grad_req="null")
    mb = [int(re.search(r"Total (\d+) MB allocated", e.debug_str()).group(1))
          for e in (with_grad, no_grad)]
    # One (256, 1024) float32 array is 1 MB; the backward needs more buffers than the forward.
    assert mb[0] > mb[1] >= 1
