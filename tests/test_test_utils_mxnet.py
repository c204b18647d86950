"""MXNet's ``test_utils`` helpers (issue 5): contexts, tolerances, random data, comparisons."""

import os

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import _mx_compare, gradient_check, test_utils
from ferrograd import test_utils as tu

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)


@pytest.fixture
def restore_context():
    yield
    tu.set_default_context(mx.cpu(0))


# ----------------------------------------------------------------------------------------------
# namespace


def test_every_mxnet_name_is_exported_from_test_utils():
    star = {}
    exec("from ferrograd.test_utils import *", star)
    for name in _mx_compare.__all__:
        assert star[name] is getattr(_mx_compare, name), name
    for name in ["check_backward", "check_double_backward", "numerical_grad",
                 "NondifferentiableError"]:
        assert star[name] is getattr(gradient_check, name)
    # no __all__, as in MXNet: private names stay private
    assert not hasattr(test_utils, "__all__")
    assert not any(k.startswith("_") for k in star if k != "__builtins__")


def test_assert_allclose_is_mxnets_and_chainers_stays_in_gradient_check():
    assert tu.assert_allclose is _mx_compare.assert_allclose
    assert tu.assert_allclose is not gradient_check.assert_allclose
    assert "gradient_check.assert_allclose" in tu.__doc__
    # MXNet's defaults: rtol=1e-7, atol=0 (Chainer's 1e-4/1e-5 would accept this pair)
    with pytest.raises(AssertionError, match=r"rtol=1.000000e-07, atol=0.000000e\+00"):
        tu.assert_allclose(np.array([1.0]), np.array([1.00001]))
    gradient_check.assert_allclose(np.array([1.0]), np.array([1.00001]))
    tu.assert_allclose(np.array([1.0, np.nan]), np.array([1.0, np.nan]))  # equal_nan=True
    tu.assert_allclose(np.array([1.0]), np.array([1.0 + 1e-8]))


# ----------------------------------------------------------------------------------------------
# contexts, dtypes and tolerance tables


def test_default_context_and_set_default_context(restore_context):
    assert tu.default_context() == mx.cpu(0)
    tu.set_default_context(mx.cpu(1))
    assert mx.current_context() == mx.cpu(1)
    assert tu.default_context() == mx.cpu(1)
    with mx.cpu(2):
        assert tu.default_context() == mx.cpu(2)
    assert mx.current_context() == mx.cpu(1)
    with pytest.raises(TypeError, match="expected a Context"):
        tu.set_default_context("cpu")


def test_default_dtype_and_tolerance_tables():
    assert tu.default_dtype() is np.float32
    rtols, atols = tu.default_rtols(), tu.default_atols()
    assert (rtols[F16], rtols[F32], rtols[F64]) == (1e-2, 1e-4, 1e-5)
    assert (atols[F16], atols[F32], atols[F64]) == (1e-1, 1e-3, 1e-20)
    for name in ["bool", "int8", "uint8", "int32", "uint32", "int64", "uint64"]:
        assert rtols[np.dtype(name)] == 0 and atols[np.dtype(name)] == 0
    eps = tu.default_numeric_eps()
    assert eps == {F16: 0.015625, F32: 0.001953125, F64: 2.0 ** -14}
    assert eps[F64] == pytest.approx(6.1035e-5, rel=1e-4)


def test_get_tolerance():
    x32 = np.zeros(2, np.float32)
    assert tu.get_tolerance(x32, 0.5, tu.default_rtols()) == 0.5
    assert tu.get_tolerance(x32, None, tu.default_rtols()) == 1e-4
    assert tu.get_tolerance(x32, {F32: 7.0}, tu.default_rtols()) == 7.0
    assert tu.get_tolerance(x32, {F64: 7.0}, tu.default_rtols()) == 1e-4
    assert tu.get_tolerance(mx.nd.zeros((2,), dtype="float16"), None, tu.default_atols()) == 0.1
    assert tu.get_tolerance(mx.np.zeros((2,)), None, tu.default_atols()) == 1e-3
    with pytest.raises(KeyError, match="complex64"):
        tu.get_tolerance(np.zeros(1, np.complex64), None, tu.default_rtols())


def test_get_tols_takes_the_looser_dtype():
    f16, f32, f64 = (np.zeros(2, d) for d in (F16, F32, F64))
    assert tu.get_tols(f32, f64, None, None) == (1e-4, 1e-3)
    assert tu.get_tols(f64, f32, None, None) == (1e-4, 1e-3)
    assert tu.get_tols(f16, f32, None, None) == (1e-2, 1e-1)
    assert tu.get_tols(f64, f64, None, None) == (1e-5, 1e-20)
    assert tu.get_tols(f64, 1.0, None, None) == (1e-5, 1e-20)  # a Python float is f64
    assert tu.get_tols(f32, 3, None, None) == (1e-4, 1e-3)  # a Python int adds 0
    assert tu.get_tols(np.zeros(1, int), 3, None, None) == (0, 0)
    assert tu.get_tols(f32, f64, 0.5, 0.25) == (0.5, 0.25)
    assert tu.get_tols(mx.nd.zeros((1,)), mx.nd.zeros((1,), dtype="float64"), None, 2) == (1e-4, 2)


def test_get_rtol_atol_etol():
    assert tu.get_rtol() == 1e-5 and tu.get_atol() == 1e-20
    assert tu.get_rtol(None, np.float32) == 1e-4 and tu.get_atol(None, F16) == 1e-1
    assert tu.get_rtol(0.3) == 0.3 and tu.get_atol(0.7, F32) == 0.7
    assert tu.get_etol() == 0 and tu.get_etol(0.2) == 0.2


# ----------------------------------------------------------------------------------------------
# random data


def test_random_arrays():
    np.random.seed(3)
    one = tu.random_arrays((2, 3))
    assert isinstance(one, np.ndarray) and one.shape == (2, 3) and one.dtype == np.float32
    np.random.seed(3)
    np.testing.assert_array_equal(one, np.random.randn(2, 3).astype(np.float32))
    several = tu.random_arrays((2,), (), (1, 4))
    assert isinstance(several, list)
    assert [a.shape for a in several] == [(2,), (), (1, 4)]
    assert all(a.dtype == np.float32 for a in several)
    assert tu.random_arrays(5).shape == (5,)


def test_random_uniform_arrays():
    np.random.seed(0)
    arrs = tu.random_uniform_arrays((1000,), low=2.0, high=3.0)
    assert isinstance(arrs, list) and len(arrs) == 1
    assert arrs[0].dtype == np.float32 and 2.0 <= arrs[0].min() and arrs[0].max() < 3.0
    a, b = tu.random_uniform_arrays((2, 2), (3,), dtype=np.float64)
    assert a.dtype == b.dtype == np.float64 and a.shape == (2, 2) and b.shape == (3,)
    with pytest.raises(TypeError, match="unexpected keyword argument 'scale'"):
        tu.random_uniform_arrays((2,), scale=3)


def test_rand_ndarray():
    np.random.seed(1)
    x = tu.rand_ndarray((3, 4))
    assert isinstance(x, mx.nd.NDArray) and x.shape == (3, 4) and x.dtype == np.float32
    np.random.seed(1)
    np.testing.assert_array_equal(x.asnumpy(), np.random.randn(3, 4).astype(np.float32))
    assert tu.rand_ndarray((2,), dtype="float64").dtype == np.float64
    assert tu.rand_ndarray((2,), ctx=mx.cpu()).context == mx.cpu(0)
    assert tu.rand_ndarray(()).shape == ()
    for stype in ["csr", "row_sparse"]:
        assert tu.rand_ndarray((2, 2), stype=stype, density=0.5).stype == stype


def test_rand_shapes():
    np.random.seed(0)
    assert tu.rand_shape_nd(3) == (6, 1, 4)
    for _ in range(50):
        d0, d1 = tu.rand_shape_2d(3, 4)
        assert 1 <= d0 <= 3 and 1 <= d1 <= 4
        s3 = tu.rand_shape_3d(2, 2, 2)
        assert len(s3) == 3 and all(1 <= d <= 2 for d in s3)
        nd_shape = tu.rand_shape_nd(4, dim=3)
        assert len(nd_shape) == 4 and all(1 <= d <= 3 for d in nd_shape)
        assert all(isinstance(d, int) for d in nd_shape)
    zeros = {tu.rand_shape_2d(1, 1, allow_zero_size=True) for _ in range(60)}
    assert (0, 0) in zeros and (1, 1) in zeros
    assert any(0 in tu.rand_shape_nd(3, 1, allow_zero_size=True) for _ in range(30))
    assert any(0 in tu.rand_shape_3d(1, 1, 1, allow_zero_size=True) for _ in range(30))
    assert mx.nd.zeros(tu.rand_shape_nd(2)).ndim == 2


# ----------------------------------------------------------------------------------------------
# same / almost_equal


def test_same():
    assert tu.same(np.array([1, 2]), np.array([1, 2]))
    assert not tu.same(np.array([1, 2]), np.array([1, 3]))
    assert not tu.same(np.array([1, 2]), np.array([[1, 2]]))
    assert tu.same(mx.nd.array([1, 2]), np.array([1.0, 2.0]))
    assert not tu.same(np.array([np.nan]), np.array([np.nan]))


def test_almost_equal_uses_f64_defaults_whatever_the_dtype():
    a, b = np.float32([1.0]), np.float32([1.00002])
    assert tu.almost_equal(a, b) is False
    assert tu.almost_equal(a, b, rtol=1e-4) is True
    assert tu.almost_equal(np.array([0.0]), np.array([1e-21]))
    assert tu.almost_equal(np.array([1.0, 2.0]), np.array([[1.0, 2.0], [1.0, 2.0]]))
    assert not tu.almost_equal(np.array([np.nan]), np.array([np.nan]))
    assert tu.almost_equal(np.array([np.nan]), np.array([np.nan]), equal_nan=True)
    assert tu.almost_equal(mx.nd.array([1, 2]), mx.np.array([1, 2]))
    # asymmetric: the tolerance scales with |b|
    assert tu.almost_equal(np.array([0.0]), np.array([1.0]), rtol=1.0, atol=0)
    assert not tu.almost_equal(np.array([1.0]), np.array([0.0]), rtol=1.0, atol=0)
    with pytest.raises(AssertionError, match=r"a.shape = \(2,\) and b.shape = \(1, 2\)"):
        tu.almost_equal(np.zeros(2), np.zeros((1, 2)), use_broadcast=False)


def test_almost_equal_ignore_nan():
    assert tu.almost_equal_ignore_nan(np.array([1.0, np.nan]), np.array([1.0, 5.0]))
    assert not tu.almost_equal_ignore_nan(np.array([2.0, np.nan]), np.array([1.0, 5.0]))


def test_find_max_violation():
    idx, viol = tu.find_max_violation(np.array([[1.0, 2.0], [3.0, 4.0]]),
                                      np.array([[1.0, 2.5], [3.0, 5.0]]), rtol=0, atol=0.1)
    assert idx == (1, 1) and viol == pytest.approx(10.0)
    assert tu.find_max_violation(np.array(1.0), np.array(2.0), 0, 0.5) == ((), 2.0)


# ----------------------------------------------------------------------------------------------
# assert_almost_equal

A = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
B = np.array([[1, 2.1, 3], [4.0001, 5, 6.5]], dtype=np.float32)


def test_assert_almost_equal_passes_with_dtype_tolerances():
    tu.assert_almost_equal(np.float32([1.0]), np.float32([1.00002]))  # f32: 1e-4 / 1e-3
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.float64([1.0]), np.float64([1.00002]))  # f64: 1e-5 / 1e-20
    tu.assert_almost_equal(np.float16([1.0]), np.float64([1.05]))  # f16 loosens both
    tu.assert_almost_equal(np.array([1, 2]), np.array([1, 2]))
    tu.assert_almost_equal(np.float64([1.0]), np.float64([1.1]), rtol=0.2)
    tu.assert_almost_equal(np.array([np.inf, -np.inf]), np.array([np.inf, -np.inf]))


def test_assert_almost_equal_accepts_ndarrays_np_arrays_and_scalars():
    tu.assert_almost_equal(mx.nd.array([1, 2]), mx.nd.array([1, 2.00001]))
    tu.assert_almost_equal(mx.np.array([1, 2]), np.array([1, 2], dtype=np.float32))
    tu.assert_almost_equal(mx.nd.array([1, 2]), mx.np.array([1, 2]))
    tu.assert_almost_equal(1.0, 1.0 + 1e-7)
    tu.assert_almost_equal(mx.nd.array([3.0]), 3)
    tu.assert_almost_equal([1.0, 2.0], (1.0, 2.0))
    with pytest.raises(AssertionError, match="x=1.00000000, y=1.50000000"):
        tu.assert_almost_equal(mx.nd.array([1]), mx.np.array([1.5]), names=("x", "y"))


def test_assert_almost_equal_failure_message(capsys):
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(A, B)
    msg = str(info.value)
    assert msg.startswith("\nItems are not equal:\n")
    assert ("Error 303.030304 exceeds tolerance rtol=1.000000e-04, atol=1.000000e-03 "
            "(mismatch 33.333333%).\n") in msg
    assert "Location of maximum error: (1, 2), a=6.00000000, b=6.50000000" in msg
    assert " ACTUAL: array([[1., 2., 3.],\n       [4., 5., 6.]]" in msg
    assert " DESIRED: array([[1.    , 2.1   , 3.    ],\n       [4.0001, 5.    , 6.5   ]]" in msg
    out = capsys.readouterr().out
    assert "\n*** Maximum errors for vector of size 6:  rtol=0.0001, atol=0.001\n" in out
    assert "  1: Error 303.030304  Location of error: (1, 2), a=6.00000000, b=6.50000000" in out
    assert "  2: Error 82.644547  Location of error: (0, 1), a=2.00000000, b=2.09999990" in out
    assert "  3:" not in out


def test_assert_almost_equal_custom_names():
    with pytest.raises(AssertionError, match="Location of maximum error: \\(1,\\), "
                                             "out=2.00000000, ref=3.00000000"):
        tu.assert_almost_equal(np.array([1.0, 2.0]), np.array([1.0, 3.0]), names=("out", "ref"))


def test_assert_almost_equal_mismatch_limits(capsys):
    a, b = np.zeros(20), np.ones(20)  # 20 equal violations
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(a, b, mismatches=(3, 5))
    msg = str(info.value)
    assert "(mismatch at least 30.000000%)" in msg  # the search stops after 5 (+1 known)
    assert "Location of maximum error: (0,)" in msg  # all ratios are 1e5: first index wins
    out = capsys.readouterr().out
    assert "  3: Error" in out and "  4: Error" not in out
    with pytest.raises(AssertionError, match=r"\(mismatch 100.000000%\)"):
        tu.assert_almost_equal(a, b, mismatches=(0, 0))  # 0 = no limit on the search
    assert "Error" not in capsys.readouterr().out  # mismatches[0] = 0 prints no line
    with pytest.raises(AssertionError, match=r"\(mismatch 50.000000%\)"):
        tu.assert_almost_equal(np.array([1.0, 2.0]), np.array([1.0, 3.0]))


def test_assert_almost_equal_orders_violations_by_size(capsys):
    a = np.array([0.0, 0.0, 0.0, 0.0])
    b = np.array([1.0, 3.0, 0.0, 2.0])
    with pytest.raises(AssertionError, match="Location of maximum error: \\(1,\\)"):
        tu.assert_almost_equal(a, b, rtol=0, atol=0.5)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "Error" in ln]
    assert [ln.split("(")[1].split(")")[0] for ln in lines] == ["1,", "3,", "0,"]
    assert lines[0] == "  1: Error 6.000000  Location of error: (1,), a=0.00000000, b=3.00000000"


def test_assert_almost_equal_0d_message(capsys):
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(1.0, 1.1, rtol=1e-4, atol=1e-3)
    msg = str(info.value)
    assert "Error 90.090090 exceeds tolerance rtol=1.000000e-04, atol=1.000000e-03." in msg
    assert "mismatch" not in msg and "Location" not in msg
    assert msg.endswith("\n ACTUAL: 1.0\n DESIRED: 1.1")
    assert capsys.readouterr().out == ""
    with pytest.raises(AssertionError, match=" ACTUAL: 1.0\n DESIRED: 2.0"):
        tu.assert_almost_equal(np.float32(1.0), np.float32(2.0))


def test_failed_assert_leaves_numpy_print_options_alone():
    before = np.get_printoptions()
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(np.arange(100.0), np.arange(100.0) + 1)
    assert "..." in str(info.value)  # the report itself is summarised (threshold=4)
    assert np.get_printoptions() == before
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_with_err(np.zeros(10), np.ones(10), etol=0.5)
    assert np.get_printoptions() == before


def test_assert_almost_equal_nan():
    with pytest.raises(AssertionError, match="Error inf .*\n.*\\(1,\\), a=nan, b=2.00000000"):
        tu.assert_almost_equal(np.array([1.0, np.nan]), np.array([1.0, 2.0]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal(np.array([np.nan]), np.array([np.nan]))
    tu.assert_almost_equal(np.array([np.nan]), np.array([np.nan]), equal_nan=True)
    # with equal_nan the NaN pair is not reported as the worst element
    with pytest.raises(AssertionError, match="Location of maximum error: \\(2,\\)"):
        tu.assert_almost_equal(np.array([1, np.nan, 3]), np.array([1, np.nan, 4]), equal_nan=True)


def test_assert_almost_equal_shapes():
    tu.assert_almost_equal(np.array([1.0, 2.0]), np.array([[1.0, 2.0], [1.0, 2.0]]))
    with pytest.raises(AssertionError) as info:
        tu.assert_almost_equal(np.zeros(2), np.zeros((2, 2)), use_broadcast=False)
    assert str(info.value).startswith(
        "\nItems are not equal: a.shape = (2,) and b.shape = (2, 2) are not equal\n ACTUAL:")
    with pytest.raises(ValueError, match="could not be broadcast together"):
        tu.assert_almost_equal(np.zeros(2), np.zeros(3))
    with pytest.raises(AssertionError, match="Location of maximum error: \\(1, 0\\)"):
        tu.assert_almost_equal(np.array([1.0, 2.0]), np.array([[1.0, 2.0], [9.0, 2.0]]))


def test_assert_almost_equal_bool_and_int():
    tu.assert_almost_equal(np.array([True, False]), np.array([True, False]))
    with pytest.raises(AssertionError, match="Arrays are not equal"):
        tu.assert_almost_equal(np.array([True, False]), np.array([True, True]))
    tu.assert_almost_equal(mx.np.array([1, 2]) > 1, np.array([False, True]))
    with pytest.raises(AssertionError, match="rtol=0.000000e\\+00, atol=0.000000e\\+00"):
        tu.assert_almost_equal(np.array([1, 2], np.int32), np.array([1, 3], np.int64))


# ----------------------------------------------------------------------------------------------
# other comparison helpers


def test_assert_almost_equal_with_err():
    a = np.zeros(10)
    b = np.zeros(10)
    b[:2] = 1.0  # 20% of the elements are off
    tu.assert_almost_equal_with_err(a, b, etol=0.2)
    tu.assert_almost_equal_with_err(a, b, etol=0.5)
    with pytest.raises(AssertionError, match=r"\(mismatch 20.000000%\)"):
        tu.assert_almost_equal_with_err(a, b, etol=0.1)
    with pytest.raises(AssertionError, match="Location of maximum error"):
        tu.assert_almost_equal_with_err(a, b)  # etol None: plain assert_almost_equal
    tu.assert_almost_equal_with_err(a, b, rtol=0, atol=1.0)
    tu.assert_almost_equal_with_err(mx.nd.array(a), mx.nd.array(b), etol=0.25)
    with pytest.raises(AssertionError, match="p=0.00000000, q=1.00000000"):
        tu.assert_almost_equal_with_err(a, b, etol=0.1, names=("p", "q"))


def test_assert_almost_equal_ignore_nan():
    a = np.array([1.0, np.nan, 3.0])
    b = np.array([1.0, 2.0, np.nan])
    tu.assert_almost_equal_ignore_nan(a, b)
    assert np.isnan(a[1]) and np.isnan(b[2])  # the inputs are not modified
    with pytest.raises(AssertionError, match="u=1.00000000, v=2.00000000"):
        tu.assert_almost_equal_ignore_nan(np.array([1.0, np.nan]), np.array([2.0, 0.0]),
                                          names=("u", "v"))
    tu.assert_almost_equal_ignore_nan(mx.nd.array([1, 2]), np.array([1, 2.0], np.float32))
    tu.assert_almost_equal_ignore_nan(np.array([1, 2]), np.array([1, 2]))  # ints: no NaN


def test_assert_exception():
    def boom(x, scale=1):
        raise ValueError(f"bad {x * scale}")

    tu.assert_exception(boom, ValueError, 1, scale=2)
    tu.assert_exception(boom, Exception, 1)
    tu.assert_exception(mx.nd.zeros, mx.MXNetError, ())  # 0-d shape without np semantics
    with pytest.raises(AssertionError, match="did not raise ValueError"):
        tu.assert_exception(lambda: None, ValueError)
    with pytest.raises(ValueError, match="bad 3"):  # another exception type propagates
        tu.assert_exception(boom, KeyError, 3)

    def failing_assert():
        raise AssertionError("inner")

    tu.assert_exception(failing_assert, AssertionError)
    with pytest.raises(AssertionError, match="did not raise AssertionError"):
        tu.assert_exception(lambda: 1, AssertionError)


def test_retry():
    calls = []

    @tu.retry(3)
    def flaky(x):
        """Doc."""
        calls.append(x)
        assert len(calls) >= 2, "first try fails"
        return x * 2

    assert flaky(5) == 10 and calls == [5, 5]
    assert flaky.__name__ == "flaky" and flaky.__doc__ == "Doc."

    attempts = []

    @tu.retry(2)
    def always_fails():
        attempts.append(1)
        raise AssertionError(f"attempt {len(attempts)}")

    with pytest.raises(AssertionError, match="attempt 2"):
        always_fails()
    assert len(attempts) == 2

    @tu.retry(5)
    def other_error():
        attempts.append(1)
        raise KeyError("not retried")

    attempts.clear()
    with pytest.raises(KeyError):
        other_error()
    assert len(attempts) == 1
    with pytest.raises(ValueError, match="positive integer"):
        tu.retry(0)


def test_same_array():
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    assert tu.same_array(x, x)
    assert tu.same_array(x, x.reshape((2, 3)))  # a view
    assert tu.same_array(x, x.detach())
    assert not tu.same_array(x, x.copy())  # equal values, other memory
    assert not tu.same_array(x, mx.nd.array([[1, 2, 3], [4, 5, 6]]))
    assert not tu.same_array(x, x[0])
    np.testing.assert_array_equal(x.asnumpy(), [[1, 2, 3], [4, 5, 6]])  # restored
    tricky = mx.nd.array(np.array([1e-20, np.nan, 1.0, 1e30]), dtype="float64")
    assert tu.same_array(tricky, tricky)
    np.testing.assert_array_equal(tricky.asnumpy(), [1e-20, np.nan, 1.0, 1e30])  # bit for bit
    s = mx.nd.array(3.0)
    assert tu.same_array(s, s) and s.asscalar() == 3.0
    n = mx.np.array([1, 2])
    assert tu.same_array(n, n.as_nd_ndarray()) and not tu.same_array(n, n.copy())
    flags = mx.np.array([1, 0]) > 0
    assert tu.same_array(flags, flags)
    np.testing.assert_array_equal(flags.asnumpy(), [True, False])


def test_same_array_is_not_recorded():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        assert tu.same_array(x, x)
        y = (x * x).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [2.0, 4.0])


def test_collapse_sum_like():
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (3, 1)), a.sum(axis=(0, 2))[:, None])
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (4,)), a.sum(axis=(0, 1)))
    np.testing.assert_array_equal(tu.collapse_sum_like(a, (2, 3, 4)), a)
    assert tu.collapse_sum_like(a, ()) == a.sum()
    out = tu.collapse_sum_like(np.zeros((0, 3)), (1, 3))
    assert out.shape == (1, 3) and not out.any()
    np.testing.assert_array_equal(tu.collapse_sum_like(mx.nd.ones((2, 2)), (1, 2)), [[2, 2]])
    with pytest.raises(ValueError, match=r"shape \(2,\) does not broadcast to \(2, 3, 4\)"):
        tu.collapse_sum_like(a, (2,))
    with pytest.raises(ValueError, match="does not broadcast"):
        tu.collapse_sum_like(np.zeros(3), (1, 3))


def test_environment_sets_and_restores():
    os.environ.pop("FG_TU_A", None)
    os.environ["FG_TU_B"] = "old"
    with tu.environment("FG_TU_A", "1"):
        assert os.environ["FG_TU_A"] == "1"
    assert "FG_TU_A" not in os.environ
    with tu.environment({"FG_TU_A": "x", "FG_TU_B": None}):
        assert os.environ["FG_TU_A"] == "x" and "FG_TU_B" not in os.environ
    assert "FG_TU_A" not in os.environ and os.environ["FG_TU_B"] == "old"
    with pytest.raises(RuntimeError), tu.environment("FG_TU_B", "new"):
        assert os.environ["FG_TU_B"] == "new"
        raise RuntimeError("boom")
    assert os.environ["FG_TU_B"] == "old"
    del os.environ["FG_TU_B"]
    with pytest.raises(TypeError, match="one dict argument or two arguments"):
        with tu.environment("FG_TU_A"):
            pass
