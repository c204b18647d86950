"""``nd.random`` / ``sym.random`` samplers: distributions (chi-square goodness of fit against
SciPy with fixed seeds), per-element parameters, seeding, symbolic twins, errors at the call."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import nd

stats = pytest.importorskip("scipy.stats")

N = 200_000


def _chi2_continuous(samples, dist, n_buckets=10):
    """p-value of samples against a continuous SciPy distribution, equal-probability buckets."""
    edges = dist.ppf(np.linspace(0, 1, n_buckets + 1))
    counts = np.histogram(samples, bins=edges)[0]
    expected = np.full(n_buckets, samples.size / n_buckets)
    return stats.chisquare(counts, expected).pvalue


def _chi2_discrete(samples, pmf, cutoff):
    """p-value of integer samples against a pmf on 0..c-1 plus a tail bucket, where c <= cutoff
    keeps every bucket's expected count at least 5 (chi-square's validity condition)."""
    probs = pmf(np.arange(cutoff))
    tail = 1.0 - np.cumsum(probs)
    ok = np.nonzero(tail * samples.size < 5)[0]
    c = cutoff if ok.size == 0 else int(ok[0])
    probs = np.append(probs[:c], 1.0 - probs[:c].sum())
    counts = np.bincount(np.minimum(samples.astype(np.int64), c), minlength=c + 1)
    return stats.chisquare(counts, probs * samples.size).pvalue


@pytest.fixture(autouse=True)
def _seeded():
    mx.random.seed(20240607)


@pytest.mark.parametrize("alpha,beta", [(0.5, 1.0), (1.0, 5.0), (9.0, 0.5)])
def test_gamma_fits_scipy(alpha, beta):
    x = nd.random.gamma(alpha, beta, shape=(N,)).asnumpy()
    assert x.dtype == np.float32 and (x > 0).all()
    assert _chi2_continuous(x, stats.gamma(alpha, scale=beta)) > 1e-3


@pytest.mark.parametrize("scale", [0.1, 1.0])
def test_exponential_fits_scipy(scale):
    x = nd.random.exponential(scale, shape=(N,)).asnumpy()
    assert _chi2_continuous(x, stats.expon(scale=scale)) > 1e-3


@pytest.mark.parametrize("lam", [0.5, 4.0, 10.0, 25.0, 300.0])
def test_poisson_fits_scipy(lam):
    x = nd.random.poisson(lam, shape=(N,)).asnumpy()
    assert (x == np.round(x)).all()
    cutoff = int(lam + 6 * np.sqrt(lam) + 5)
    assert _chi2_discrete(x, stats.poisson(lam).pmf, cutoff) > 1e-3


@pytest.mark.parametrize("k,p", [(3, 0.4), (6, 0.84), (0.5, 0.3)])
def test_negative_binomial_fits_scipy(k, p):
    x = nd.random.negative_binomial(k, p, shape=(N,)).asnumpy()
    assert _chi2_discrete(x, stats.nbinom(k, p).pmf, 40) > 1e-3


@pytest.mark.parametrize("mu,alpha", [(2.0, 0.3), (1.3, 1.0)])
def test_generalized_negative_binomial_fits_scipy(mu, alpha):
    x = nd.random.generalized_negative_binomial(mu, alpha, shape=(N,)).asnumpy()
    ref = stats.nbinom(1.0 / alpha, 1.0 / (mu * alpha + 1.0))
    assert _chi2_discrete(x, ref.pmf, 30) > 1e-3


def test_generalized_negative_binomial_with_zero_alpha_is_poisson():
    x = nd.random.generalized_negative_binomial(3.0, 0.0, shape=(N,)).asnumpy()
    assert _chi2_discrete(x, stats.poisson(3.0).pmf, 20) > 1e-3


def test_multinomial_fits_probabilities_and_dtypes():
    probs = np.array([0.1, 0.2, 0.3, 0.05, 0.15, 0.2])
    for dtype in ["int32", "uint8", "float16", "float32", "float64"]:
        y = nd.random.multinomial(nd.array(probs), shape=N, dtype=dtype)
        assert y.dtype == np.dtype(dtype) and y.shape == (N,)
        counts = np.bincount(y.asnumpy().astype(np.int64), minlength=6)
        assert stats.chisquare(counts, probs * N).pvalue > 1e-3


def test_multinomial_rows_shapes_and_legacy_scalar_shape():
    probs = nd.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    y = nd.random.multinomial(probs, shape=(2, 3))
    assert y.shape == (2, 2, 3)
    np.testing.assert_array_equal(y.asnumpy()[0], 1)
    np.testing.assert_array_equal(y.asnumpy()[1], 2)
    assert nd.random.multinomial(nd.array([0.2, 0.8])).shape == (1,)


def test_multinomial_log_prob_and_its_gradient():
    x = nd.array([[0.0, 0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1, 0.0]])
    x.attach_grad()
    with mx.autograd.record():
        y, logp = nd.random.multinomial(x, shape=1000, get_prob=True)
        (logp * 5).backward()
    xs, ys = x.asnumpy(), y.asnumpy().astype(np.int64)
    for r in range(2):
        np.testing.assert_allclose(logp.asnumpy()[r], np.log(xs[r][ys[r]]), rtol=1e-6)
        # d/dx[c] of sum_s 5 log x[y_s] = 5 * count(c) / x[c]
        counts = np.bincount(ys[r], minlength=5)
        want = np.where(counts > 0, 5.0 * counts / np.where(xs[r] > 0, xs[r], 1), 0.0)
        np.testing.assert_allclose(x.grad.asnumpy()[r], want, rtol=1e-4)


def test_multinomial_get_prob_returns_a_list_and_rejects_too_many_categories():
    out = nd.random.multinomial(nd.array([[0.5, 0.5]]), shape=4, get_prob=True)
    assert isinstance(out, list) and len(out) == 2
    with pytest.raises(mx.MXNetError, match="categories"):
        nd.random.multinomial(nd.zeros(300), dtype="uint8")


def test_per_element_parameters_give_param_shape_plus_shape():
    alpha = nd.array([[0.5, 2.0], [9.0, 11.0]])
    beta = nd.array([[1.0, 0.7], [0.5, 0.3]])
    x = nd.random.gamma(alpha, beta, shape=(50_000,)).asnumpy()
    assert x.shape == (2, 2, 50_000)
    a, b = alpha.asnumpy()[..., None], beta.asnumpy()[..., None]
    # Means within 6 standard errors of alpha * beta.
    se = np.sqrt(a * b * b / x.shape[-1])
    assert (np.abs(x.mean(-1, keepdims=True) - a * b) < 6 * se).all()
    lam = nd.array([25.0, 8.5, 0.5])
    p = nd.random.poisson(lam, shape=(40_000,)).asnumpy()
    assert p.shape == (3, 40_000)
    np.testing.assert_allclose(p.mean(-1), [25.0, 8.5, 0.5], rtol=0.03)
    e = nd.random.exponential(nd.array([1.0, 0.1]), shape=(40_000,)).asnumpy()
    np.testing.assert_allclose(e.mean(-1), [1.0, 0.1], rtol=0.03)


def test_same_seed_same_draws_for_every_sampler():
    draws = [
        lambda: nd.random.gamma(2.0, 1.5, shape=(100,)),
        lambda: nd.random.poisson(30.0, shape=(100,)),
        lambda: nd.random.negative_binomial(3, 0.4, shape=(100,)),
        lambda: nd.random.multinomial(nd.array([0.3, 0.7]), shape=100),
        lambda: nd.random.shuffle(nd.arange(100)),
        lambda: nd.random.gamma(nd.array([1.0, 2.0]), nd.array([1.0, 3.0]), shape=(50,)),
    ]
    for draw in draws:
        mx.random.seed(7)
        a = draw().asnumpy()
        mx.random.seed(7)
        b = draw().asnumpy()
        c = draw().asnumpy()
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(b, c)


def test_shuffle_permutes_rows_uniformly():
    data = nd.arange(0, 18).reshape((3, 2, 3))
    seen = {}
    for _ in range(3000):
        out = nd.random.shuffle(data).asnumpy()
        first = tuple(out[:, 0, 0].astype(int))
        np.testing.assert_array_equal(np.sort(out.reshape(3, -1), axis=0),
                                      data.asnumpy().reshape(3, -1))
        np.testing.assert_array_equal(out - out[:, :1, :1], np.broadcast_to(
            np.arange(6).reshape(1, 2, 3), (3, 2, 3)))
        seen[first] = seen.get(first, 0) + 1
    assert len(seen) == 6
    assert stats.chisquare(list(seen.values())).pvalue > 1e-3


def test_dtype_out_and_like_samplers():
    x = nd.random.poisson(4.0, shape=(3, 4), dtype="float64")
    assert x.dtype == np.float64 and x.shape == (3, 4)
    out = nd.zeros((5,), dtype="float16")
    res = nd.random.gamma(2.0, 1.0, out=out)
    assert res is out and (out.asnumpy() > 0).all()
    like = nd.random.gamma_like(nd.ones((2, 3), dtype="float64"), alpha=2.0)
    assert like.shape == (2, 3) and like.dtype == np.float64
    assert nd.random.exponential_like(nd.ones((4,)), lam=2.0).shape == (4,)
    assert nd.random.uniform_like(nd.ones((2, 2)), low=1.0, high=2.0).asnumpy().min() >= 1.0


def test_legacy_top_level_names():
    assert nd.random_gamma(alpha=2.0, shape=(3,)).shape == (3,)
    assert nd._random_poisson(lam=2.0, shape=(2, 2)).shape == (2, 2)
    assert nd.sample_gamma(nd.array([1.0, 2.0]), nd.array([1.0, 1.0]), shape=(4,)).shape == (2, 4)
    assert nd._sample_poisson(nd.array([1.0]), shape=(3,)).shape == (1, 3)
    assert nd.random_negative_binomial(k=2, p=0.5, shape=(2,)).shape == (2,)
    assert nd.sample_multinomial(nd.array([0.5, 0.5]), shape=(3,)).shape == (3,)


@pytest.mark.parametrize("call,param", [
    (lambda: nd.random.gamma(-1, 1), "alpha"),
    (lambda: nd.random.gamma(1, 0), "beta"),
    (lambda: nd.random.exponential(-1), "scale"),
    (lambda: nd.random.exponential(0), "scale"),
    (lambda: nd.random.poisson(-1), "lam"),
    (lambda: nd.random.negative_binomial(1, 1.5), "p"),
    (lambda: nd.random.generalized_negative_binomial(-1, 1), "mu"),
    (lambda: nd.random.gamma(nd.array([1.0, -1.0]), nd.array([1.0, 1.0])), "element 1"),
    (lambda: nd.random.normal(0, -1, (2, 2)), "scale"),
    (lambda: nd.random.multinomial(nd.array([0.5, -0.5])), "probability"),
])
def test_bad_parameters_raise_at_the_call(call, param):
    with pytest.raises(mx.MXNetError, match=param):
        call()


def test_mixed_number_and_array_parameters_raise():
    with pytest.raises(TypeError, match="all be numbers or all be NDArrays"):
        nd.random.gamma(nd.array([1.0]), 2.0)


def test_symbolic_samplers_match_the_imperative_stream():
    shape = (40, 30)
    for nd_draw, sym_draw in [
        (lambda: nd.random.gamma(2.0, 1.5, shape=shape), mx.sym.random.gamma(2.0, 1.5, shape)),
        (lambda: nd.random.poisson(6.0, shape=shape), mx.sym.random.poisson(6.0, shape)),
        (lambda: nd.random.uniform(-1, 2, shape=shape), mx.sym.random.uniform(-1, 2, shape)),
    ]:
        x = mx.sym.var("x")
        exe = (sym_draw + x).bind(mx.cpu(), {"x": nd.zeros(shape)},
                                  args_grad={"x": nd.zeros(shape)})
        mx.random.seed(11)
        want = nd_draw().asnumpy()
        mx.random.seed(11)
        exe.forward(is_train=True)
        exe.backward(nd.ones(shape))
        np.testing.assert_array_equal(exe.outputs[0].asnumpy(), want)
        np.testing.assert_array_equal(exe.grad_arrays[0].asnumpy(), np.ones(shape))


def test_symbolic_per_element_multinomial_shuffle_and_like():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    exe = mx.sym.random.gamma(a, b, shape=(5000,)).bind(
        mx.cpu(), {"a": nd.array([1.0, 4.0]), "b": nd.array([2.0, 0.5])})
    out = exe.forward()[0].asnumpy()
    assert out.shape == (2, 5000)
    np.testing.assert_allclose(out.mean(-1), [2.0, 2.0], rtol=0.08)
    p = mx.sym.var("p")
    exe = mx.sym.random.multinomial(p, shape=100).bind(mx.cpu(), {"p": nd.array([0.0, 1.0])})
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), 1)
    d = mx.sym.var("d")
    perm = mx.sym.sort(mx.sym.random.shuffle(mx.sym.random.shuffle(d)), axis=0)
    data = nd.arange(0, 12).reshape((4, 3))
    np.testing.assert_array_equal(perm.eval(d=data)[0].asnumpy(), data.asnumpy())
    like = mx.sym.random.poisson_like(d, lam=3.0).bind(mx.cpu(), {"d": data}).forward()[0]
    assert like.shape == (4, 3)


def test_symbolic_multinomial_log_prob_and_gradient():
    p = mx.sym.var("p")
    probs = np.array([[0.2, 0.8], [0.6, 0.4]])
    out = mx.sym.random.multinomial(p, shape=(50,), get_prob=True)
    assert len(out.list_outputs()) == 2
    grad = nd.zeros((2, 2))
    exe = out.bind(mx.cpu(), {"p": nd.array(probs)}, args_grad={"p": grad})
    samples, logp = (o.asnumpy() for o in exe.forward(is_train=True))
    ys = samples.astype(np.int64)
    np.testing.assert_allclose(logp, np.log(np.take_along_axis(probs, ys, axis=1)), rtol=1e-6)
    exe.backward([nd.zeros((2, 50)), nd.ones((2, 50))])
    counts = np.stack([np.bincount(r, minlength=2) for r in ys])
    np.testing.assert_allclose(grad.asnumpy(), counts / probs, rtol=1e-5)
    one = nd.random.multinomial(nd.array([0.3, 0.7]), get_prob=True)
    assert one[0].shape == (1,) and one[1].shape == (1,)


def test_np_random_choice_and_keyword_names():
    from ferrograd import np as mnp
    idx = mnp.random.choice(5, size=(20_000,))
    assert idx.dtype == np.int64 and idx.shape == (20_000,)
    counts = np.bincount(idx.asnumpy(), minlength=5)
    assert stats.chisquare(counts).pvalue > 1e-3
    picked = mnp.random.choice(10, size=10, replace=False).asnumpy()
    np.testing.assert_array_equal(np.sort(picked), np.arange(10))
    weighted = mnp.random.choice(3, size=30_000, p=[0.2, 0.0, 0.8]).asnumpy()
    counts = np.bincount(weighted, minlength=3)
    assert counts[1] == 0
    assert stats.chisquare(counts[[0, 2]], [6000, 24000]).pvalue > 1e-3
    pool = mnp.array([1.5, 2.5, 3.5])
    assert set(mnp.random.choice(pool, size=50).asnumpy().tolist()) <= {1.5, 2.5, 3.5}
    with pytest.raises(ValueError, match="population"):
        mnp.random.choice(3, size=4, replace=False)
    for op in (mnp.random.uniform, mnp.random.normal, mnp.random.randint, mnp.random.choice):
        with pytest.raises(TypeError):
            op(shape=())


def test_per_element_samplers_are_float32_unless_asked_as_mxnet():
    a = nd.array([0.0, 1.0], dtype="float64")
    b = nd.array([1.0, 2.0], dtype="float64")
    assert nd.random.uniform(a, b, shape=2).dtype == np.float32
    assert nd.random.normal(a, b).dtype == np.float32
    assert nd.random.gamma(b, b, shape=3).dtype == np.float32
    assert nd.random.uniform(a, b, dtype="float64").dtype == np.float64
    x = mx.sym.var("x")
    exe = mx.sym.random.normal(x, x, shape=(2,)).bind(mx.cpu(), {"x": b})
    assert exe.forward()[0].dtype == np.float32
