"""The density ops ``random_pdf_<dist>`` (nd and sym): values against SciPy, parameter
broadcasting over the sample's trailing axes, ``is_log``, and gradients against finite
differences."""

import ferrograd as mx
import numpy as np
import pytest
import scipy.stats as ss

RNG = np.random.default_rng(14)

# name -> (parameter arrays of shape (2, 3), sample maker, SciPy density(x, *params))
CASES = {
    "uniform": ([np.full((2, 3), -1.0), np.full((2, 3), 2.5)],
                lambda s: RNG.uniform(-0.9, 2.4, s),
                lambda x, lo, hi: ss.uniform.pdf(x, lo, hi - lo)),
    "normal": ([RNG.normal(size=(2, 3)), RNG.uniform(0.5, 2, (2, 3))],
               lambda s: RNG.normal(size=s),
               ss.norm.pdf),
    "gamma": ([RNG.uniform(0.8, 3, (2, 3)), RNG.uniform(0.5, 2, (2, 3))],
              lambda s: RNG.uniform(0.2, 3, s),
              lambda x, a, b: ss.gamma.pdf(x, a, 0, 1 / b)),
    "exponential": ([RNG.uniform(0.5, 3, (2, 3))],
                    lambda s: RNG.uniform(0.1, 3, s),
                    lambda x, lam: ss.expon.pdf(x, 0, 1 / lam)),
    "poisson": ([RNG.uniform(0.5, 6, (2, 3))],
                lambda s: RNG.integers(0, 8, s).astype(float),
                ss.poisson.pmf),
    "negative_binomial": ([RNG.uniform(1, 5, (2, 3)), RNG.uniform(0.2, 0.8, (2, 3))],
                          lambda s: RNG.integers(0, 8, s).astype(float),
                          ss.nbinom.pmf),
    "generalized_negative_binomial": (
        [RNG.uniform(1, 5, (2, 3)), RNG.uniform(0.1, 1, (2, 3))],
        lambda s: RNG.integers(0, 8, s).astype(float),
        lambda x, mu, alpha: ss.nbinom.pmf(x, 1 / alpha, 1 / (mu * alpha + 1))),
}


def _expected(ref, x, params):
    """The reference density with each parameter broadcast over x's trailing axes."""
    extra = x.ndim - params[0].ndim
    ps = [p.reshape(p.shape + (1,) * extra) for p in params]
    return ref(x, *ps)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("is_log", [False, True])
def test_density_matches_scipy_with_trailing_sample_axes(name, is_log):
    params, sample, ref = CASES[name]
    x = sample((2, 3, 4))
    want = _expected(ref, x, params)
    if is_log:
        want = np.log(want)
    op = getattr(mx.nd, "random_pdf_" + name)
    got = op(mx.nd.array(x, dtype="float64"), *[mx.nd.array(p, dtype="float64") for p in params],
             is_log=is_log)
    assert got.shape == x.shape and got.dtype == np.float64
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-9, atol=1e-12)


def test_uniform_density_is_zero_outside_its_support():
    got = mx.nd.random_pdf_uniform(mx.nd.array([[-1.0, 0.5, 3.0]]), mx.nd.array([0.0]),
                                   mx.nd.array([2.0]))
    np.testing.assert_allclose(got.asnumpy(), [[0.0, 0.5, 0.0]])


def test_dirichlet_density_matches_scipy():
    alpha = RNG.uniform(0.5, 2, (2, 3))
    x = np.stack([RNG.dirichlet(a, size=5) for a in alpha])  # (2, 5, 3)
    want = np.array([[ss.dirichlet.logpdf(v, a) for v in xs]
                     for xs, a in zip(x, alpha, strict=True)])
    got = mx.nd.random_pdf_dirichlet(mx.nd.array(x, dtype="float64"),
                                     mx.nd.array(alpha, dtype="float64"), is_log=True)
    assert got.shape == (2, 5)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-9)


def _numeric_grad(f, arrays, i, eps=1e-6):
    base = [a.copy() for a in arrays]
    g = np.zeros_like(base[i])
    for j in np.ndindex(base[i].shape):
        hi, lo = [a.copy() for a in base], [a.copy() for a in base]
        hi[i][j] += eps
        lo[i][j] -= eps
        g[j] = (f(hi) - f(lo)) / (2 * eps)
    return g


@pytest.mark.parametrize("name", sorted(CASES) + ["dirichlet"])
@pytest.mark.parametrize("is_log", [False, True])
def test_gradients_match_finite_differences(name, is_log):
    if name == "dirichlet":
        params = [RNG.uniform(0.8, 2, (2, 3))]
        x = np.stack([RNG.dirichlet(a, size=2) for a in params[0]])
    else:
        params, sample, _ = CASES[name]
        x = sample((2, 3, 2))
    arrays = [x] + [p.copy() for p in params]
    op = getattr(mx.nd, "random_pdf_" + name)
    head = RNG.uniform(0.5, 1.5, x.shape[:-1] if name == "dirichlet" else x.shape)

    def f(arrs):
        y = op(*[mx.nd.array(a, dtype="float64") for a in arrs], is_log=is_log)
        return float((y.asnumpy() * head).sum())

    nds = [mx.nd.array(a, dtype="float64") for a in arrays]
    for a in nds:
        a.attach_grad()
    with mx.autograd.record():
        y = op(*nds, is_log=is_log)
    y.backward(mx.nd.array(head, dtype="float64"))
    for i, a in enumerate(nds):
        np.testing.assert_allclose(a.grad.asnumpy(), _numeric_grad(f, arrays, i),
                                   rtol=1e-5, atol=1e-7, err_msg=f"input {i}")


def test_symbolic_density_and_bad_shapes():
    x, mu, sigma = mx.sym.var("x"), mx.sym.var("mu"), mx.sym.var("sigma")
    s = mx.sym.random_pdf_normal(x, mu, sigma, is_log=True)
    assert s.list_arguments() == ["x", "mu", "sigma"]
    _, out, _ = s.infer_shape(x=(2, 5), mu=(2,), sigma=(2,))
    assert out == [(2, 5)]
    with pytest.raises(mx.base.MXNetError, match="random_pdf_normal"):
        mx.nd.random_pdf_normal(mx.nd.ones((3, 5)), mx.nd.ones((2,)), mx.nd.ones((2,)))
    with pytest.raises(mx.base.MXNetError, match="dtype"):
        mx.nd.random_pdf_normal(mx.nd.ones((2,)), mx.nd.ones((2,), dtype="float64"),
                                mx.nd.ones((2,)))
