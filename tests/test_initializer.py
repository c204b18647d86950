"""mx.init: name dispatch, fill values, Xavier scale, registry and seeding."""

import math

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import initializer as init


def _filled(initializer, name, shape, attrs=None):
    arr = mx.nd.zeros(shape)
    initializer(init.InitDesc(name, attrs), arr)
    return arr.asnumpy()


def test_name_dispatch_without_explicit_init():
    uni = mx.init.Uniform(0.5)
    assert np.all(_filled(uni, "fc_bias", (4,)) == 0)
    assert np.all(_filled(uni, "bn_gamma", (4,)) == 1)
    assert np.all(_filled(uni, "bn_beta", (4,)) == 0)
    assert np.all(_filled(uni, "bn_running_mean", (4,)) == 0)
    assert np.all(_filled(uni, "bn_running_var", (4,)) == 1)
    w = _filled(uni, "fc_weight", (50, 40))
    assert np.all(np.abs(w) <= 0.5) and w.std() > 0.2


def test_unknown_name_raises():
    with pytest.raises(ValueError, match="Unknown initialization pattern for fc_other"):
        _filled(mx.init.Uniform(), "fc_other", (2,))


def test_explicit_init_overrides_name():
    # '__init__' chooses the initializer whatever the suffix says.
    assert np.all(_filled(mx.init.Uniform(), "fc_bias", (3,), {"__init__": "ones"}) == 1)
    got = _filled(mx.init.Zero(), "x_gamma", (3,), {"__init__": mx.init.Constant(2.5)})
    np.testing.assert_array_equal(got, [2.5, 2.5, 2.5])


def test_constant_zero_one():
    np.testing.assert_array_equal(_filled(mx.init.Constant(-3), "a_weight", (2, 2)), -3)
    np.testing.assert_array_equal(_filled(mx.init.Zero(), "a_weight", (2, 2)), 0)
    np.testing.assert_array_equal(_filled(mx.init.One(), "a_weight", (2, 2)), 1)
    got = _filled(mx.init.Constant([1.0, 2.0]), "a_weight", (3, 2))
    np.testing.assert_array_equal(got, [[1, 2]] * 3)


def test_normal_statistics():
    mx.random.seed(3)
    w = _filled(mx.init.Normal(0.2), "w_weight", (200, 100))
    assert abs(w.mean()) < 0.01
    assert abs(w.std() - 0.2) < 0.01


@pytest.mark.parametrize("factor_type", ["avg", "in", "out"])
def test_xavier_uniform_bound(factor_type):
    shape = (30, 20, 3, 3)
    fan_in, fan_out = 20 * 9, 30 * 9
    factor = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    bound = math.sqrt(2.0 / factor)
    w = _filled(mx.init.Xavier(factor_type=factor_type, magnitude=2), "c_weight", shape)
    assert np.abs(w).max() <= bound + 1e-6
    assert np.abs(w).max() > 0.95 * bound
    # variance of U(-b, b) is b^2 / 3
    assert abs(w.var() - bound ** 2 / 3) < 0.1 * bound ** 2 / 3


def test_xavier_gaussian_std():
    mx.random.seed(0)
    w = _filled(mx.init.Xavier(rnd_type="gaussian", factor_type="in", magnitude=1), "w_weight",
                (400, 100))
    assert abs(w.std() - math.sqrt(1 / 100)) < 0.005


def test_xavier_bad_arguments():
    with pytest.raises(ValueError, match="at least 2D"):
        _filled(mx.init.Xavier(), "v_weight", (5,))
    with pytest.raises(ValueError, match="factor_type"):
        _filled(mx.init.Xavier(factor_type="bad"), "v_weight", (5, 5))
    with pytest.raises(ValueError, match="rnd_type"):
        _filled(mx.init.Xavier(rnd_type="bad"), "v_weight", (5, 5))


def test_seed_reproducible():
    mx.random.seed(42)
    a = _filled(mx.init.Xavier(), "w_weight", (6, 5))
    mx.random.seed(42)
    b = _filled(mx.init.Xavier(), "w_weight", (6, 5))
    np.testing.assert_array_equal(a, b)


def test_registry_create_and_dumps():
    x = mx.init.create("xavier", factor_type="in")
    assert isinstance(x, mx.init.Xavier) and x.factor_type == "in"
    again = mx.init.create(x.dumps())
    assert isinstance(again, mx.init.Xavier) and again.factor_type == "in"
    assert isinstance(mx.init.create("zeros"), mx.init.Zero)
    assert mx.initializer is mx.init

    @mx.init.register
    class Twos(mx.init.Initializer):
        def _init_weight(self, _, arr):
            arr[:] = 2

    np.testing.assert_array_equal(_filled(mx.init.create("twos"), "w_weight", (2,)), 2)
    with pytest.raises(ValueError, match="Cannot find initializer 'nope'"):
        mx.init.create("nope")
    with pytest.raises(TypeError):
        mx.init.register(int)
