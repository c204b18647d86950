"""Issue 19: special functions at ±inf follow SciPy (values from SciPy 1.17).

One deliberate difference: SciPy's ``gammaln(-inf)`` is ``-inf``; ferrograd, like C's ``lgamma``,
Python's ``math.lgamma`` and MXNet, gives ``+inf`` (``|Γ|`` is unbounded near -inf, with a pole
at every negative integer).
"""

import ferrograd as mx
import numpy as np
import pytest

nd = mx.nd
INF = np.inf

# op: values at [+inf, -inf, nan] (SciPy's, except gammaln(-inf): see the module docs)
LIMITS = {
    "gamma": [INF, np.nan, np.nan],
    "gammaln": [INF, INF, np.nan],
    "erf": [1.0, -1.0, np.nan],
    "erfinv": [np.nan, np.nan, np.nan],
}


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("op", sorted(LIMITS))
def test_limits_at_infinity(op, dtype):
    got = getattr(nd, op)(nd.array([INF, -INF, np.nan], dtype=dtype)).asnumpy()
    np.testing.assert_array_equal(got, np.array(LIMITS[op], dtype=dtype))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_erfinv_at_plus_minus_one_is_infinite(dtype):
    got = nd.erfinv(nd.array([1.0, -1.0, 0.0], dtype=dtype)).asnumpy()
    np.testing.assert_array_equal(got, [INF, -INF, 0.0])


def test_gammaln_is_exactly_zero_at_one_and_two():
    # SciPy and C give exact zeros; float32 callers used to see -8.9e-16.
    for dtype in ["float32", "float64"]:
        np.testing.assert_array_equal(nd.gammaln(nd.array([1.0, 2.0], dtype=dtype)).asnumpy(),
                                      [0.0, 0.0])


def test_gammaln_grows_without_bound_towards_infinity():
    # SciPy: gammaln(1e300) = 6.897755278982137e302; gammaln(1e308) overflows to inf.
    got = nd.gammaln(nd.array([1e300, 1e308, INF], dtype="float64")).asnumpy()
    np.testing.assert_allclose(got, [6.897755278982137e302, INF, INF], rtol=1e-12)


def test_digamma_at_infinity_matches_scipy():
    # d/dx gammaln = digamma: SciPy gives digamma(+inf) = +inf and digamma(-inf) = nan.
    x = nd.array([INF, -INF], dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = nd.gammaln(x)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [INF, np.nan])
