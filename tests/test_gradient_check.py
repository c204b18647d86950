"""Tests of the Chainer-style gradient checkers themselves (``ferrograd.gradient_check``)."""

import math
import re

import numpy as np
import pytest
from ferrograd import autograd, nd, test_utils
from ferrograd import gradient_check as gc

F64 = np.float64


def rand(*shape, low=-1.0, high=1.0):
    return np.random.uniform(low, high, size=shape).astype(F64)


# ----------------------------------------------------------------------------------------------
# numerical_grad


def test_numerical_grad_exp_matches_exp():
    x = np.array([1.0, 2.0, 3.0])
    (gx,) = gc.numerical_grad(lambda: (np.exp(x),), (x,), (np.ones(3),))
    # Centred difference with eps=1e-3: exp(x) * (1 + eps**2 / 6) to first order.
    np.testing.assert_allclose(gx, [2.71828228, 7.38905733, 20.08554027], rtol=1e-8)
    np.testing.assert_allclose(gx, np.exp(x), rtol=2e-7)
    assert gx.dtype == F64
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])  # restored exactly


def test_numerical_grad_scalar_grad_output_and_float32():
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    before = x.copy()
    (gx,) = gc.numerical_grad(lambda: (np.exp(x),), (x,), (2.0,))
    assert gx.dtype == np.float32
    np.testing.assert_allclose(gx, 2 * np.exp(before), rtol=1e-3)
    np.testing.assert_array_equal(x, before)


def test_numerical_grad_with_ndarray_inputs_and_outputs():
    a = nd.array([[0.5, -1.0], [2.0, 0.25]], dtype=F64)
    b = nd.array([3.0, -2.0], dtype=F64)
    a0, b0 = a.asnumpy(), b.asnumpy()
    gy1 = rand(2, 2)
    gy2 = rand(2, 2)

    def f():
        return a * b, nd.sin(a) + b

    ga, gb = gc.numerical_grad(f, (a, b), (gy1, gy2))
    assert isinstance(ga, nd.NDArray) and ga.dtype is F64
    np.testing.assert_allclose(ga.asnumpy(), gy1 * b0 + gy2 * np.cos(a0), rtol=1e-6)
    np.testing.assert_allclose(gb.asnumpy(), (gy1 * a0 + gy2).sum(axis=0), rtol=1e-6)
    np.testing.assert_array_equal(a.asnumpy(), a0)
    np.testing.assert_array_equal(b.asnumpy(), b0)


def test_numerical_grad_none_grad_output_skips_that_output():
    x = np.array([0.3, -0.7])
    # The second output is garbage (non-finite); with a None gradient it must be ignored.
    with np.errstate(invalid="ignore"):
        (gx,) = gc.numerical_grad(lambda: (x ** 2, np.log(x)), (x,), (np.ones(2), None))
    np.testing.assert_allclose(gx, 2 * x, rtol=1e-8)


def test_numerical_grad_five_point_stencil_is_more_accurate():
    x = np.array([0.5, 1.5])
    (g2,) = gc.numerical_grad(lambda: (np.exp(x),), (x,), (1.0,), eps=1e-2)
    (g5,) = gc.numerical_grad(lambda: (np.exp(x),), (x,), (1.0,), eps=1e-2,
                              detect_nondifferentiable=True)
    err2 = np.abs(g2 - np.exp(x)).max()
    err5 = np.abs(g5 - np.exp(x)).max()
    assert err2 > 1e-6  # eps**2/6 relative error
    assert err5 < 1e-8  # fourth order


def test_numerical_grad_detects_abs_at_zero():
    x = np.array([1.0, 0.0])
    with pytest.raises(gc.NondifferentiableError) as info:
        gc.numerical_grad(lambda: (np.abs(x),), (x,), (np.ones(2),),
                          detect_nondifferentiable=True)
    msg = str(info.value)
    assert msg.startswith("Tried to compute the numeric gradient on a non-differentiable point.")
    for part in ["i_in: 0", "i_out: 0", "index on x: (1,)", "eps: 0.001", "diff_rtol: 0.01",
                 "diff_atol: 0", "ymax:", "ymin:", "fitting errors:", "y[x-eps    ]:",
                 "y[x+eps    ]:"]:
        assert part in msg, part
    np.testing.assert_array_equal(x, [1.0, 0.0])  # restored even when raising


def test_numerical_grad_smooth_and_constant_functions_are_not_flagged():
    x = np.array([0.0, 1.0, -2.0])
    (gx,) = gc.numerical_grad(lambda: (x ** 2, np.ones(3)), (x,), (np.ones(3), np.ones(3)),
                              detect_nondifferentiable=True)
    np.testing.assert_allclose(gx, 2 * x, atol=1e-10)
    # Without detection a kink is silently averaged.
    (gx,) = gc.numerical_grad(lambda: (np.abs(x),), (x,), (np.ones(3),))
    np.testing.assert_allclose(gx, [0.0, 1.0, -1.0], atol=1e-10)


def test_numerical_grad_detects_finiteness_change():
    x = np.array([0.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        with pytest.raises(gc.NondifferentiableError, match="non-differentiable point"):
            gc.numerical_grad(lambda: (np.log(x),), (x,), (1.0,), detect_nondifferentiable=True)
        # Non-finite at every sample point is allowed.
        (gx,) = gc.numerical_grad(lambda: (np.full(1, np.inf) + 0 * x,), (x,), (1.0,),
                                  detect_nondifferentiable=True)
    assert gx.shape == (1,)


def test_numerical_grad_errors():
    xi = np.array([1, 2], dtype=np.int32)
    with pytest.raises(RuntimeError, match="The dtype of input arrays must be kind of float"):
        gc.numerical_grad(lambda: (xi * 2,), (xi,), (1.0,))
    with pytest.raises(RuntimeError, match="kind of float"):
        gc.numerical_grad(lambda: (xi * 2,), (nd.array(xi, dtype="int32"),), (1.0,))
    x = np.array([1.0])
    with pytest.raises(ValueError, match="eps must be positive"):
        gc.numerical_grad(lambda: (x,), (x,), (1.0,), eps=0)
    with pytest.raises(ValueError, match="f returned 2 outputs but 1 grad_outputs"):
        gc.numerical_grad(lambda: (x, x), (x,), (1.0,))


def test_test_utils_reexports_the_checkers():
    for name in ["numerical_grad", "check_backward", "check_double_backward",
                 "NondifferentiableError"]:
        assert getattr(test_utils, name) is getattr(gc, name)
    # test_utils is MXNet's namespace: its assert_allclose is MXNet's, not Chainer's.
    assert test_utils.assert_allclose is not gc.assert_allclose


# ----------------------------------------------------------------------------------------------
# assert_allclose


def test_assert_allclose_passes_and_accepts_ndarrays_and_nan():
    gc.assert_allclose(np.array([1.0, 2.0]), np.array([1.0, 2.00001]))
    gc.assert_allclose(nd.array([1.0, np.nan]), np.array([1.0, np.nan]))
    gc.assert_allclose(1.0, 1.0 + 1e-6)
    with pytest.raises(AssertionError):
        gc.assert_allclose(1.0, 1.0 + 1e-3)


def test_assert_allclose_failure_report():
    with pytest.raises(AssertionError) as info:
        gc.assert_allclose(np.array([1.0, 2.0]), np.array([1.0, 2.1]))
    msg = str(info.value)
    assert "Not equal to tolerance rtol=0.0001, atol=1e-05" in msg
    report = msg[msg.index("assert_allclose failed:"):].splitlines()
    assert report[:6] == ["assert_allclose failed:", "  shape: (2,) (2,)",
                          "  dtype: float64 float64", "  i: (1,)", "  x[i]: 2.0", "  y[i]: 2.1"]
    values = dict(line.strip().split(": ", 1) for line in report[6:11])
    assert float(values["relative error[i]"]) == pytest.approx(0.1 / 2.1)
    assert float(values["absolute error[i]"]) == pytest.approx(0.1)
    assert float(values["relative tolerance * |y[i]|"]) == pytest.approx(2.1e-4)
    assert float(values["absolute tolerance"]) == pytest.approx(1e-5)
    assert float(values["total tolerance"]) == pytest.approx(2.2e-4)
    assert report[-2:] == ["x: [1. 2.]", "y: [1.  2.1]"]


def test_assert_allclose_report_zero_reference_and_shape_mismatch():
    with pytest.raises(AssertionError, match=r"relative error\[i\]: inf"):
        gc.assert_allclose(np.array([0.5]), np.array([0.0]))
    with pytest.raises(AssertionError) as info:
        gc.assert_allclose(np.zeros(2), np.zeros(3))
    assert "  shape: (2,) (3,)" in str(info.value)
    assert "  i:" not in str(info.value)


# ----------------------------------------------------------------------------------------------
# random directions


@pytest.mark.parametrize("seed", range(20))
def test_directions_are_unit_with_a_minimum_size(seed):
    np.random.seed(seed)
    shapes = [(3,), (2, 2), (), (1, 2)]
    ds = gc._random_directions(shapes)
    assert [d.shape for d in ds] == shapes
    flat = np.concatenate([d.reshape(-1) for d in ds])
    assert flat.size == 10
    assert np.linalg.norm(flat) == pytest.approx(1.0, abs=1e-12)
    assert np.abs(flat).min() >= 0.1 / math.sqrt(10) - 1e-15
    np.random.seed(seed)
    again = gc._random_directions(shapes)
    assert all(np.array_equal(a, b) for a, b in zip(ds, again, strict=True))


# ----------------------------------------------------------------------------------------------
# check_backward: passing cases


def test_check_backward_single_input():
    x = rand(3, 4)
    gc.check_backward(lambda a: nd.exp(a) * 2 - a, x, rand(3, 4))


def test_check_backward_multiple_inputs_and_outputs():
    x, y = rand(2, 3), rand(3)

    def f(a, b):
        return a * b, a - nd.sin(b), nd.tanh(a / (b * b + 1))

    gc.check_backward(f, (x, y), (rand(2, 3), rand(2, 3), rand(2, 3)))
    gc.check_backward(f, [nd.array(x, dtype=F64), y], [rand(2, 3), rand(2, 3), rand(2, 3)])


def test_check_backward_ndarray_inputs_are_not_modified():
    x = nd.array(rand(4), dtype=F64)
    x0 = x.asnumpy()
    gc.check_backward(nd.sin, x, rand(4))
    np.testing.assert_array_equal(x.asnumpy(), x0)
    assert x.grad is None  # the checker worked on copies


def test_check_backward_params_are_checked_and_restored():
    w = nd.array(rand(3, 2), dtype=F64)
    b = nd.array(rand(2), dtype=F64)
    w0, b0 = w.asnumpy(), b.asnumpy()
    x = rand(4, 3)
    gy = rand(4, 2)
    gc.check_backward(lambda a: nd.tanh(nd.dot(a, w) + b), x, gy, params=(w, b))
    np.testing.assert_array_equal(w.asnumpy(), w0)
    np.testing.assert_array_equal(b.asnumpy(), b0)
    # The params keep the analytic gradient of the recorded pass.
    t = np.tanh(x @ w0 + b0)
    np.testing.assert_allclose(b.grad.asnumpy(), ((1 - t * t) * gy).sum(axis=0), rtol=1e-10)
    # A single NDArray is accepted as params; a param-only check (integer input) works.
    ints = np.array([[1, 2], [3, -1], [0, 2]], dtype=np.int32)
    gc.check_backward(lambda a: a * w * w, ints, rand(3, 2), params=w)


def test_check_backward_wrong_param_gradient_fails():
    w = nd.array(rand(3), dtype=F64)
    w0 = w.asnumpy()
    ints = np.array([1, -2, 3], dtype=np.int32)
    with pytest.raises(AssertionError, match="check_backward failed"):
        gc.check_backward(lambda a: a * w * w.detach(), ints, rand(3), params=(w,))
    np.testing.assert_array_equal(w.asnumpy(), w0)  # restored after a failure too


def test_check_backward_int_inputs_are_skipped():
    x = rand(5, 2)
    idx = np.array([4, 0, 2], dtype=np.int32)
    gc.check_backward(lambda a, i: nd.take(a, i) * 3, (x, idx), rand(3, 2))
    gc.check_backward(lambda a, i: nd.take(a, i), (x, nd.array(idx, dtype="int32")), rand(3, 2))


def test_check_backward_no_grads_for_a_nondifferentiable_float_input():
    x, mask = rand(6), np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0])
    gc.check_backward(lambda a, m: a * (m > 0), (x, mask), rand(6), no_grads=[False, True])


def test_check_backward_no_grads_input_that_gets_a_gradient_raises():
    with pytest.raises(RuntimeError, match=r"inputs\[1\] is marked no_grads=True"):
        gc.check_backward(lambda a, b: a * b, (rand(3), rand(3)), rand(3),
                          no_grads=[False, True])


def test_check_backward_loss_without_y_grad():
    x = rand(3, 4)
    gc.check_backward(lambda a: (a * a).sum(), x, None)  # shape (1,) under MXNet 1.x shapes
    gc.check_backward(lambda a: nd.mean(nd.exp(a)), x, None)
    s = np.array(0.7)  # a 0-d input gives a 0-d loss
    gc.check_backward(lambda a: a * a * a, s, None)


def test_check_backward_none_outputs_and_none_grad_outputs_are_dropped():
    x = rand(3)
    gc.check_backward(lambda a: (a * 2, None), x, (rand(3), None))
    # A wrong gradient in an output whose y_grad is None is not looked at.
    gc.check_backward(lambda a: (nd.exp(a), a * a.detach()), x, (rand(3), None))


def test_check_backward_dtype_float64_checks_a_float32_function():
    x = rand(3, 3).astype(np.float32)
    gy = rand(3, 3).astype(np.float32)
    gc.check_backward(lambda a: nd.sin(a) * a, x, gy, dtype=np.float64, atol=1e-5, rtol=1e-4)
    gc.check_backward(lambda a: nd.sin(a) * a, x, gy, atol=1e-3, rtol=1e-2)


def test_check_backward_detect_nondifferentiable():
    x = np.array([0.5, 0.0, -1.0])
    with pytest.raises(gc.NondifferentiableError):
        gc.check_backward(nd.abs, x, rand(3), detect_nondifferentiable=True)
    gc.check_backward(nd.abs, np.array([0.5, 0.3, -1.0]), rand(3),
                      detect_nondifferentiable=True)


# ----------------------------------------------------------------------------------------------
# check_backward: failures


def _message_number(msg, label):
    return float(re.search(re.escape(label) + r"\s*(\S+)", msg).group(1))


def test_check_backward_detects_a_missing_term():
    x = rand(4)
    gy = rand(4)
    np.random.seed(3)
    with pytest.raises(AssertionError) as info:
        gc.check_backward(lambda a: a * a.detach(), x, gy)  # analytic gradient misses a term
    msg = str(info.value)
    assert msg.startswith("check_backward failed (eps=0.001 atol=1e-05 rtol=0.0001)\n")
    for part in ["\ninputs[0]:\n", "\ngrad_outputs[0]:\n", "\ndirections[0]:\n",
                 "\ngradients (numeric):  ", "\ngradients (backward): ",
                 "x: numeric gradient, y: backward gradient", "assert_allclose failed:"]:
        assert part in msg, part
    np.random.seed(3)
    (d,) = gc._random_directions([x.shape])  # the checker's only use of the RNG
    assert _message_number(msg, "gradients (numeric):") == pytest.approx(
        np.sum(2 * x * gy * d), rel=1e-6)
    assert _message_number(msg, "gradients (backward):") == pytest.approx(
        np.sum(x * gy * d), rel=1e-9)


def test_check_backward_is_deterministic_under_a_seed():
    msgs = []
    for _ in range(2):
        np.random.seed(11)
        x, gy = rand(3), rand(3)
        with pytest.raises(AssertionError) as info:
            gc.check_backward(lambda a: nd.exp(a.detach()) * a, x, gy)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def _exp_function(factor):
    """An autograd.Function computing exp whose backward is scaled by ``factor``."""

    class Exp(autograd.Function):
        def forward(self, x):
            y = nd.exp(x)
            self.save_for_backward(y)
            return y

        def backward(self, dy):
            (y,) = self.saved_tensors
            return dy * y * factor

    return lambda a: Exp()(a)


def test_check_backward_with_autograd_function():
    x, gy = rand(5), rand(5)
    gc.check_backward(_exp_function(1.0), x, gy)
    with pytest.raises(AssertionError, match="check_backward failed"):
        gc.check_backward(_exp_function(1.01), x, gy)  # one percent off


# ----------------------------------------------------------------------------------------------
# check_backward: argument errors


def test_check_backward_y_grad_errors():
    x = rand(3, 4)
    with pytest.raises(ValueError) as info:
        gc.check_backward(nd.exp, x, None)
    assert str(info.value) == (
        "y_grad argument cannot be omitted if the target function is not a loss function, "
        "which has a single output with shape ().\nActual output shapes: (3, 4)")
    with pytest.raises(ValueError, match="Actual output shapes: \\(1,\\), \\(1,\\)"):
        gc.check_backward(lambda a: (a.sum(), a.sum()), x, None)
    with pytest.raises(ValueError, match="Output gradients must contain equally as many "
                                         "elements as the number of output elements"):
        gc.check_backward(nd.exp, x, (rand(3, 4), rand(3, 4)))
    with pytest.raises(ValueError) as info:
        gc.check_backward(nd.exp, x, rand(2, 2))
    assert str(info.value) == (
        "Shapes and/or dtypes of outputs and output gradients do not match.\n"
        "Output shapes and dtypes         : (3, 4):float64\n"
        "Output gradient shapes and dtypes: (2, 2):float64")
    with pytest.raises(ValueError, match=r"Output gradient shapes and dtypes: \(3, 4\):float32"):
        gc.check_backward(nd.exp, x, rand(3, 4).astype(np.float32))


def test_check_backward_argument_errors():
    x = rand(3)
    with pytest.raises(ValueError) as info:
        gc.check_backward(lambda a, b: a * b, (x, x), x, no_grads=[False])
    assert str(info.value) == "Length of no_grads param and xs should be same.\nActual: 1 != 2"
    with pytest.raises(ValueError, match="^`dtype` is allowed only float type$"):
        gc.check_backward(nd.exp, x, x, dtype=np.int32)
    with pytest.raises(ValueError, match="nothing to check"):
        gc.check_backward(lambda i: i * 2, np.array([1, 2], dtype=np.int32),
                          np.ones(2, dtype=np.int32))
    with pytest.raises(ValueError, match=r"inputs\[0\] has dtype int32"):
        gc.check_backward(lambda i: i * 2, np.array([1, 2], dtype=np.int32),
                          np.ones(2, dtype=np.int32), no_grads=[False])
    with pytest.raises(TypeError, match=r"params\[0\] must be an NDArray"):
        gc.check_backward(nd.exp, x, x, params=(np.ones(3),))
    with pytest.raises(ValueError, match=r"params\[0\] must have a float dtype"):
        gc.check_backward(nd.exp, x, x, params=(nd.array([1, 2], dtype="int32"),))
    with pytest.raises(TypeError, match="func must return NDArrays"):
        gc.check_backward(lambda a: a.asnumpy(), x, x)


# ----------------------------------------------------------------------------------------------
# check_double_backward


def test_check_double_backward_sin():
    x = rand(3, 2)
    gc.check_double_backward(nd.sin, x, rand(3, 2), rand(3, 2))


def test_check_double_backward_a_b_a():
    a, b = rand(4), rand(4)
    gc.check_double_backward(lambda p, q: p * q * p, (a, b), rand(4), (rand(4), rand(4)))


def test_check_double_backward_with_params_int_inputs_and_loss():
    w = nd.array(rand(3, 2), dtype=F64)
    w0 = w.asnumpy()
    gc.check_double_backward(lambda a: nd.tanh(nd.dot(a, w)), rand(4, 3), rand(4, 2),
                             rand(4, 3), params=w, params_grad_grad=rand(3, 2))
    np.testing.assert_array_equal(w.asnumpy(), w0)
    idx = np.array([1, 1, 0], dtype=np.int32)
    gc.check_double_backward(lambda a, i: nd.take(a * a * a, i), (rand(2, 3), idx), rand(3, 3),
                             (rand(2, 3),))
    gc.check_double_backward(lambda a: (a * a * a).sum(), rand(3), None, rand(3))


def _sin_with_first_order_only(a):
    """sin(a) whose gradient cos(a) is built from a detached copy: right value, no 2nd order."""
    c = a.detach()
    return nd.sin(c) + nd.cos(c) * (a - c)


def test_check_double_backward_detects_a_wrong_second_derivative():
    x, gy, ggx = rand(3), rand(3), rand(3)
    gc.check_backward(_sin_with_first_order_only, x, gy)  # first order is right
    with pytest.raises(AssertionError) as info:
        gc.check_double_backward(_sin_with_first_order_only, x, gy, ggx)
    msg = str(info.value)
    assert msg.startswith("check_double_backward failed (eps=0.001 atol=0.0001 rtol=0.001)\n")
    for part in ["\ninput[0]:\n", "\ngrad_output[0]:\n", "\ngrad_grad_input[0]:\n",
                 "\ncheck_backward failed (eps=0.001 atol=0.0001 rtol=0.001)\n",
                 "gradients (numeric):", "gradients (backward):"]:
        assert part in msg, part


def test_check_double_backward_with_autograd_function():
    class SinDetachedBackward(autograd.Function):
        """sin with a backward that is right to first order but built from a detached input."""

        def forward(self, x):
            self.save_for_backward(x)
            return nd.sin(x)

        def backward(self, dy):
            (x,) = self.saved_tensors
            return dy * nd.cos(x.detach())

    x, gy, ggx = rand(3), rand(3), rand(3)
    gc.check_backward(lambda a: SinDetachedBackward()(a), x, gy)
    with pytest.raises(AssertionError, match="check_double_backward failed"):
        gc.check_double_backward(lambda a: SinDetachedBackward()(a), x, gy, ggx)


def test_check_double_backward_errors():
    x = rand(3)
    with pytest.raises(ValueError, match="y_grad entries cannot be None"):
        gc.check_double_backward(nd.sin, x, (None,), x)
    with pytest.raises(ValueError, match="y_grad argument cannot be omitted"):
        gc.check_double_backward(nd.sin, x, None, x)
    with pytest.raises(ValueError, match="Output gradients must contain equally as many"):
        gc.check_double_backward(nd.sin, x, x, (x, x))
    with pytest.raises(ValueError) as info:
        gc.check_double_backward(nd.sin, x, rand(2), x)
    assert str(info.value) == ("check_double_backward: the output gradients do not match the "
                               "outputs.\nOutput shapes         : [(3,)]\n"
                               "Output gradient shapes: [(2,)]")
    with pytest.raises(ValueError, match="^`dtype` is allowed only float type$"):
        gc.check_double_backward(nd.sin, x, x, x, dtype="int64")
