"""gluon.nn activation layers against NumPy formulas, with gradients."""

import math

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.gluon import nn

X = np.array([[-2.0, -0.3, 0.0, 0.7, 3.0]], dtype=np.float32)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805
_erf = np.vectorize(math.erf)


def _elu(x, a):
    return np.where(x > 0, x, a * (np.exp(x) - 1))


@pytest.mark.parametrize("layer, ref", [
    (lambda: nn.ELU(0.5), lambda x: _elu(x, 0.5)),
    (lambda: nn.SELU(), lambda x: SELU_SCALE * _elu(x, SELU_ALPHA)),
    (lambda: nn.GELU(), lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    (lambda: nn.Swish(2.0), lambda x: x / (1 + np.exp(-2.0 * x))),
    (lambda: nn.Activation("softrelu"), lambda x: np.log1p(np.exp(x))),
])
def test_activation_values(layer, ref):
    np.testing.assert_allclose(layer()(mx.nd.array(X)).asnumpy(), ref(X), rtol=1e-4, atol=1e-5)


def test_prelu_learns_alpha():
    with mx.name.NameManager():
        act = nn.PReLU()
        assert list(act.collect_params().keys()) == ["prelu0_alpha"]
    act.initialize()
    x = mx.nd.array(X)
    with mx.autograd.record():
        y = act(x)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), np.where(X > 0, X, 0.25 * X), rtol=1e-6)
    # d y / d alpha = x where x < 0, summed over elements
    np.testing.assert_allclose(act.alpha.grad().asnumpy(), [X[X < 0].sum()], rtol=1e-5)
    per_channel = nn.PReLU(in_channels=5, alpha_initializer=mx.init.Constant(0.5))
    per_channel.initialize()
    np.testing.assert_allclose(per_channel(x).asnumpy(), np.where(X > 0, X, 0.5 * X), rtol=1e-6)


def test_swish_gradient():
    act = nn.Swish()
    x = mx.nd.array(X)
    x.attach_grad()
    with mx.autograd.record():
        y = act(x)
    y.backward()
    s = 1 / (1 + np.exp(-X))
    np.testing.assert_allclose(x.grad.asnumpy(), s + X * s * (1 - s), rtol=1e-4, atol=1e-6)
