"""Precision of ``check_numeric_gradient`` / ``numeric_grad``: the finite differences are taken on
the unsummed output and then summed (MXNet's algorithm). Differencing a pre-summed float32 loss
instead quantises every numerical gradient to multiples of ``ulp(sum) / eps``: with a sum near
2000 and eps = 2⁻⁹, to steps of 2⁻⁵ = 0.03125."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.test_utils import check_numeric_gradient, numeric_grad


def _sin_location(n, seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.uniform(0.5, 1.5, size=(n,)).astype(np.float32)}


@pytest.mark.parametrize("n", [100, 4000])
def test_float32_check_passes_default_tolerances_on_a_large_positive_output(n):
    # sum(sin(x) * proj) is about 0.45 n: at n = 4000 the old algorithm's numerical gradients
    # were multiples of 1/16 and failed the default float32 tolerances by a factor of ~60.
    np.random.seed(0)
    check_numeric_gradient(mx.sym.sin(mx.sym.var("x")), _sin_location(n, 1))


def test_numeric_grad_is_not_quantised_by_the_output_sum():
    x = mx.sym.var("x")
    n = 4000
    loc = _sin_location(n, 2)
    # An output whose total is large (~2000 + n) while each element's derivative is cos(x).
    y = mx.sym.sin(x) + 1.0
    exe = y.bind(mx.cpu(), {"x": mx.nd.array(loc["x"])})
    got = numeric_grad(exe, {"x": loc["x"]}, eps=2.0**-9)["x"]
    want = np.cos(loc["x"].astype(np.float64))
    # Quantised differences would be multiples of ulp(~5000) / eps = 2⁻¹¹ · 2⁹ = 0.25.
    np.testing.assert_allclose(got, want, atol=2e-3)
    steps = np.unique(np.round(got / 0.25, 6) % 1.0)
    assert steps.size > 10  # values are not confined to a grid of 0.25


def test_float64_location_is_differenced_in_float64():
    x = mx.sym.var("x")
    loc = {"x": np.linspace(0.1, 2.0, 50)}
    exe = mx.sym.exp(x).bind(mx.cpu(), {"x": mx.nd.array(loc["x"], dtype="float64")})
    got = numeric_grad(exe, loc, eps=1e-6, dtype=np.float64)["x"]
    np.testing.assert_allclose(got, np.exp(loc["x"]), rtol=1e-8)


def test_check_still_detects_a_wrong_gradient():
    # BlockGrad's backward is zero while its numerical gradient is exp(x).
    np.random.seed(0)
    with pytest.raises(AssertionError, match="NUMERICAL_x"):
        check_numeric_gradient(mx.sym.BlockGrad(mx.sym.exp(mx.sym.var("x"))),
                               [np.array([0.1, 0.5, 1.0], dtype=np.float32)])
