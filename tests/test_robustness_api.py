"""Issue 19, items 6-9: no silent broadcasting into existing arrays, no partial updates, clear
exception types, and the special functions' poles as SciPy gives them."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.base import DTypeError, MXNetError, ShapeError

nd = mx.nd


# --- item 6: out= and copies into existing arrays need the exact shape ----------------------

@pytest.mark.parametrize("call", [
    lambda out: nd.sum(nd.ones((2, 3)), out=out),
    lambda out: nd.exp(nd.ones((2, 3)), out=out),
    lambda out: nd.dot(nd.ones((2, 3)), nd.ones((3, 2)), out=out),
    lambda out: nd.broadcast_add(nd.ones((2, 1)), nd.ones((1, 3)), out=out),
    lambda out: nd.zeros((2, 3), out=out),
    lambda out: nd.ones((2, 3), out=out),
    lambda out: nd.full((2, 3), 1.5, out=out),
], ids=["sum", "exp", "dot", "broadcast_add", "zeros", "ones", "full"])
def test_out_of_the_wrong_shape_raises_and_is_left_alone(call):
    out = nd.full((4, 5), 7.0)
    with pytest.raises(ShapeError, match=r"out= has shape \(4, 5\), but the result has shape"):
        call(out)
    np.testing.assert_array_equal(out.asnumpy(), np.full((4, 5), 7.0))


def test_out_of_the_wrong_dtype_raises_as_in_mxnet():
    out = nd.zeros((2, 3), dtype="int32")
    with pytest.raises(DTypeError, match="exp: out= has dtype int32, but the result has dtype"):
        nd.exp(nd.ones((2, 3)), out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.zeros((2, 3)))


def test_out_of_the_exact_shape_is_written_and_returned():
    out = nd.zeros((2, 3))
    res = nd.exp(nd.zeros((2, 3)), out=out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), np.ones((2, 3)))
    total = nd.zeros((1,))
    nd.sum(nd.ones((2, 3)), out=total)
    assert total.asnumpy().tolist() == [6.0]


def test_ones_like_out_needs_the_exact_shape():
    out = nd.zeros((4, 5))
    with pytest.raises(ShapeError, match="ones_like"):
        nd.ones_like(nd.zeros((2, 3)), out=out)
    assert out.asnumpy().sum() == 0


def _fc_executor():
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=5, name="fc")
    return net.simple_bind(mx.cpu(), data=(2, 6))


def test_copy_params_from_rejects_a_wrong_shape_without_writing_anything():
    exe = _fc_executor()
    exe.arg_dict["fc_weight"][:] = 2.0
    with pytest.raises(ShapeError, match=r"fc_weight.*\(1, 1\).*needs \(5, 6\)"):
        exe.copy_params_from({"fc_bias": nd.ones((5,)), "fc_weight": nd.ones((1, 1))})
    np.testing.assert_array_equal(exe.arg_dict["fc_weight"].asnumpy(), np.full((5, 6), 2.0))
    np.testing.assert_array_equal(exe.arg_dict["fc_bias"].asnumpy(), np.zeros(5))


def test_copy_params_from_converts_the_dtype_as_mxnet_does():
    exe = _fc_executor()
    exe.copy_params_from({"fc_weight": nd.full((5, 6), 3, dtype="int32")})
    w = exe.arg_dict["fc_weight"]
    assert w.dtype == np.float32
    np.testing.assert_array_equal(w.asnumpy(), np.full((5, 6), 3.0))


# --- item 7: forward validates every keyword before writing any ------------------------------

def test_forward_with_one_bad_keyword_writes_nothing():
    data, label = mx.sym.var("data"), mx.sym.var("label")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(data, num_hidden=1, name="fc"),
                                        label)
    exe = net.simple_bind(mx.cpu(), data=(2, 3), label=(2, 1))
    exe.arg_dict["data"][:] = 5.0
    with pytest.raises(ValueError, match="label"):
        exe.forward(data=nd.ones((2, 3)), label=nd.ones((7, 7)))
    np.testing.assert_array_equal(exe.arg_dict["data"].asnumpy(), np.full((2, 3), 5.0))
    exe.forward(data=nd.ones((2, 3)), label=np.ones((2, 1), dtype=np.float32))
    np.testing.assert_array_equal(exe.arg_dict["data"].asnumpy(), np.ones((2, 3)))


# --- item 8: exception types ------------------------------------------------------------------

def test_unknown_grad_req_is_an_mxnet_value_error_and_still_a_key_error():
    for call in (lambda: nd.ones((2,)).attach_grad("bogus"),
                 lambda: mx.autograd.mark_variables([nd.ones((2,))], [nd.zeros((2,))], "bogus")):
        with pytest.raises(MXNetError) as info:
            call()
        assert isinstance(info.value, ValueError) and isinstance(info.value, KeyError)
        assert "bogus" in str(info.value) and "grad_req" in str(info.value)


@pytest.mark.parametrize("call,name,base", [
    (lambda: nd.ones_like((2, 3)), "ones_like", TypeError),
    (lambda: nd.zeros_like([1, 2]), "zeros_like", TypeError),
    (lambda: nd.arange(None), "arange", TypeError),
    (lambda: nd.arange(0, "5"), "arange", TypeError),
    (lambda: nd.random.uniform(None, 1), "uniform", TypeError),
    (lambda: nd.random.normal(0, None), "normal", TypeError),
    (lambda: nd.NDArray((2, 3)), "NDArray", TypeError),
], ids=["ones_like", "zeros_like", "arange-None", "arange-str", "uniform", "normal", "NDArray"])
def test_bad_arguments_raise_mxnet_errors_naming_the_function(call, name, base):
    with pytest.raises(MXNetError) as info:
        call()
    assert isinstance(info.value, base)
    assert name in str(info.value), str(info.value)


def test_ndarray_constructor_without_arguments_still_works_for_unpickling():
    import pickle

    a = nd.array([[1, 2], [3, 4]])
    b = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())


# --- item 9: special functions at their poles and limits (values from SciPy 1.17) -------------

def _f64(op, xs):
    return getattr(nd, op)(nd.array(xs, dtype="float64")).asnumpy()


def test_gamma_poles_and_limits_match_scipy():
    got = _f64("gamma", [0.0, -0.0, -1.0, -2.0, -0.5, 1e-300, 172.0, np.inf, -np.inf, np.nan])
    want = [np.inf, -np.inf, np.nan, np.nan, -3.5449077018110318, 1e300, np.inf, np.inf, np.nan,
            np.nan]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # float32, as MXNet users call it: gamma(0) = inf, not NaN.
    assert nd.gamma(nd.array([0.0])).asnumpy()[0] == np.inf


def test_gammaln_poles_match_scipy():
    got = _f64("gammaln", [0.0, -0.0, -1.0, -2.0, -0.5, 1e-300])
    want = [np.inf, np.inf, np.inf, np.inf, 1.2655121234846454, 690.7755278982137]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_digamma_and_trigamma_poles_match_scipy():
    x = nd.array([0.0, -0.0, -1.0, -2.0, 1e-5], dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = nd.gammaln(x)
    y.backward()  # d/dx gammaln = digamma
    np.testing.assert_allclose(x.grad.asnumpy(), [-np.inf, np.inf, np.nan, np.nan,
                                                  -100000.57719922], rtol=1e-9)
