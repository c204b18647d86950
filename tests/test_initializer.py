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


def test_msra_prelu_is_gaussian_he_init():
    mx.random.seed(1)
    w = _filled(mx.init.MSRAPrelu(factor_type="in", slope=0.0), "w_weight", (300, 200))
    assert abs(w.std() - math.sqrt(2.0 / 200)) < 0.003
    assert mx.init.MSRAPrelu().dumps() == '["msraprelu", {"factor_type": "avg", "slope": 0.25}]'


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (3, 2, 2)])
def test_orthogonal_rows_or_columns_orthonormal(shape):
    w = _filled(mx.init.Orthogonal(scale=2.0), "w_weight", shape).reshape(shape[0], -1)
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-4)
    with pytest.raises(ValueError, match="rand_type"):
        _filled(mx.init.Orthogonal(rand_type="bad"), "w_weight", shape)


def test_bilinear_kernel_hand_derived():
    # f = ceil(4/2) = 2, c = (2f - 1 - f%2) / 2f = 0.75; 1-D weights 1 - |x/f - c|.
    one_d = np.array([0.25, 0.75, 0.75, 0.25], dtype=np.float32)
    got = _filled(mx.init.Bilinear(), "up_weight", (1, 1, 4, 4))
    np.testing.assert_allclose(got[0, 0], np.outer(one_d, one_d))
    # the name suffix 'upsampling' selects it too
    np.testing.assert_allclose(_filled(mx.init.Uniform(), "x_upsampling", (1, 1, 4, 4)), got)


def test_lstm_bias_sets_forget_gate():
    got = _filled(mx.init.Zero(), "lstm_bias", (8,), {"__init__": mx.init.LSTMBias(2.0)})
    np.testing.assert_array_equal(got, [0, 0, 2, 2, 0, 0, 0, 0])
    # by name alone a *bias is zero-filled: LSTMBias only overrides the weight rule
    assert np.all(_filled(mx.init.LSTMBias(2.0), "lstm_bias", (8,)) == 0)


def test_mixed_picks_first_matching_pattern():
    mixed = mx.init.Mixed(["fc1_.*", ".*"], [mx.init.Constant(3), mx.init.Zero()])
    assert np.all(_filled(mixed, "fc1_weight", (2,)) == 3)
    assert np.all(_filled(mixed, "fc2_weight", (2,)) == 0)
    only = mx.init.Mixed(["fc1_.*"], [mx.init.One()])
    with pytest.raises(ValueError, match="fc2_weight did not match any pattern"):
        _filled(only, "fc2_weight", (2,))
    with pytest.raises(ValueError, match="2 patterns but 1"):
        mx.init.Mixed(["a", "b"], [mx.init.One()])


def test_load_from_dict_with_default():
    load = mx.init.Load({"arg:fc_weight": mx.nd.array([[1.0, 2.0]])}, default_init=mx.init.One())
    np.testing.assert_array_equal(_filled(load, "fc_weight", (1, 2)), [[1, 2]])
    np.testing.assert_array_equal(_filled(load, "fc2_weight", (2,)), [1, 1])
    with pytest.raises(ValueError, match=r"fc_weight.*target \(2, 2\) vs loaded \(1, 2\)"):
        _filled(load, "fc_weight", (2, 2))
    with pytest.raises(ValueError, match="Cannot Initialize fc_bias"):
        _filled(mx.init.Load({}), "fc_bias", (2,))


def test_gluon_uses_mixed_free_initializers_through_parameters():
    p = mx.gluon.Parameter("lstm_i2h_bias", shape=(8,), init=mx.init.LSTMBias(1.5))
    p.initialize()
    np.testing.assert_array_equal(p.data().asnumpy()[2:4], [1.5, 1.5])


def test_initializers_compare_by_kind_and_arguments():
    assert mx.init.Constant(-10.0) == mx.init.Constant(-10.0)
    assert mx.init.Constant(-10.0) != mx.init.Constant(1.0)
    assert mx.init.Xavier() != mx.init.Uniform()
    assert len({mx.init.Normal(0.1), mx.init.Normal(0.1)}) == 1


def test_constant_with_an_array_dumps_its_values_as_lists():
    init = mx.init.Constant(mx.nd.array([[1.0, 2.0]]))
    assert init._kwargs == {"value": [[1.0, 2.0]]}
    assert init.dumps() == '["constant", {"value": [[1.0, 2.0]]}]'
    assert mx.init.Constant(np.ones(2)).dumps() == '["constant", {"value": [1.0, 1.0]}]'
    assert mx.init.Constant(1).dumps() == '["constant", {"value": 1}]'
    arr = mx.nd.zeros((2, 2))
    mx.init.create(init.dumps())(mx.init.InitDesc("w_weight"), arr)
    np.testing.assert_array_equal(arr.asnumpy(), [[1, 2], [1, 2]])
