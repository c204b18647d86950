"""Symbolic samplers whose shape is left open: `sym.random.*` without `shape` (or with unknown
0 dimensions) takes its output shape from where the output is used, as MXNet does."""

import ferrograd as mx
import numpy as np
import pytest


def test_unshaped_sampler_takes_the_shape_of_its_consumer():
    x = mx.sym.Variable("X")
    z = mx.sym.random.uniform(low=2, high=3) * x
    args, outs, _ = z.infer_shape(X=(2, 3))
    assert args == [(2, 3)] and outs == [(2, 3)]
    e = z.simple_bind(mx.cpu(), X=(2, 3))
    mx.random.seed(3)
    got = e.forward(X=mx.nd.ones((2, 3)))[0].asnumpy()
    mx.random.seed(3)
    want = mx.nd.random.uniform(2, 3, shape=(2, 3)).asnumpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("make", [
    lambda: mx.sym.random.normal(loc=1, scale=2),
    lambda: mx.sym.random.randn(loc=1, scale=2),
    lambda: mx.sym.random.gamma(alpha=2, beta=1),
    lambda: mx.sym.random.exponential(scale=2),
    lambda: mx.sym.random.poisson(lam=3),
    lambda: mx.sym.random.negative_binomial(k=3, p=0.4),
    lambda: mx.sym.random.generalized_negative_binomial(mu=2, alpha=0.5),
])
def test_unshaped_samplers_of_every_family_bind_to_the_inferred_shape(make):
    x = mx.sym.Variable("X")
    y = make() + x
    e = y.bind(mx.cpu(), {"X": mx.nd.zeros((40, 50))})
    out = e.forward()[0].asnumpy()
    assert out.shape == (40, 50)
    assert len(np.unique(out)) > 1  # 2000 independent draws, not one broadcast value


def test_shape_is_inferred_backward_through_a_chain():
    x = mx.sym.Variable("X")
    z = mx.sym.exp(mx.sym.random.uniform()) + x
    _, outs, _ = z.infer_shape(X=(4,))
    assert outs == [(4,)]
    out = z.bind(mx.cpu(), {"X": mx.nd.zeros((4,))}).forward()[0].asnumpy()
    assert out.shape == (4,) and np.all((out >= 1) & (out < np.e))


def test_unknown_dimension_of_a_sampler_shape_is_filled_in():
    x = mx.sym.Variable("X")
    z = mx.sym.random.uniform(shape=(0, 3)) + x
    assert z.infer_shape(X=(2, 3))[1] == [(2, 3)]
    assert mx.sym.random.uniform(shape=(0, 3)).infer_shape_partial()[1] == [(0, 3)]


def test_a_given_sampler_shape_still_conflicts_with_its_consumer():
    x = mx.sym.Variable("X")
    with pytest.raises(mx.MXNetError, match=r"\(4, 3\)|\[4,3\]"):
        (mx.sym.random.uniform(shape=(4, 3)) + x).infer_shape(X=(2, 3))


def test_an_undecidable_sampler_shape_is_unknown():
    with pytest.warns(UserWarning, match="Cannot decide shape"):
        args, outs, aux = mx.sym.random.uniform().infer_shape()
    assert (args, outs, aux) == (None, None, None)  # as MXNet answers


def test_symbol_keywords_of_an_input_less_sampler_are_ignored():
    # MXNet composes no input for them: randn(data=x) draws standard normals of the inferred shape.
    d = mx.sym.Variable("d")
    y = mx.sym.random.randn(data=d, loc=1, scale=2)
    assert y.list_arguments() == []
    x = mx.sym.Variable("X")
    out = (y + x).bind(mx.cpu(), {"X": mx.nd.zeros((300, 300))}).forward()[0].asnumpy()
    assert out.shape == (300, 300)
    assert abs(out.mean() - 1) < 0.05 and abs(out.std() - 2) < 0.05


def test_randint_without_shape_takes_its_consumers_shape():
    x = mx.sym.Variable("X", dtype="int32")
    y = mx.sym.random.randint(0, 5) + x
    out = y.bind(mx.cpu(), {"X": mx.nd.zeros((3, 7), dtype="int32")}).forward()[0].asnumpy()
    assert out.shape == (3, 7) and out.dtype == np.int32
    assert out.min() >= 0 and out.max() < 5
