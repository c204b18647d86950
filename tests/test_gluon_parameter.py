"""gluon.Parameter, Constant and ParameterDict."""

import warnings

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import gluon
from ferrograd.gluon.parameter import DeferredInitializationError


def test_initialize_and_access():
    p = gluon.Parameter("w", shape=(2, 3), init=mx.init.Constant(0.5))
    with pytest.raises(RuntimeError, match="Parameter 'w' has not been initialized"):
        p.data()
    p.initialize()
    np.testing.assert_array_equal(p.data().asnumpy(), np.full((2, 3), 0.5, np.float32))
    assert p.list_data()[0] is p.data()
    np.testing.assert_array_equal(p.grad().asnumpy(), np.zeros((2, 3)))
    assert len(p.list_grad()) == 1
    assert p.list_ctx() == [mx.cpu()]
    assert repr(p) == "Parameter w (shape=(2, 3), dtype=<class 'numpy.float32'>)"


def test_reinitialize_warns_unless_forced():
    p = gluon.Parameter("w", shape=(2,), init="zeros")
    p.initialize()
    with pytest.warns(UserWarning, match="already initialized"):
        p.initialize(init="ones")
    assert p.data().asnumpy().sum() == 0
    p.initialize(init="ones", force_reinit=True)
    assert p.data().asnumpy().sum() == 2


def test_default_init_used_when_no_own_init():
    p = gluon.Parameter("w", shape=(2, 2))
    p.initialize(default_init=mx.init.One())
    np.testing.assert_array_equal(p.data().asnumpy(), np.ones((2, 2)))


def test_gradient_flows_into_parameter():
    p = gluon.Parameter("w", shape=(3,), init=mx.init.Constant(2.0))
    p.initialize()
    x = mx.nd.array([1.0, -2.0, 4.0])
    with mx.autograd.record():
        y = (p.data() * p.data() * x).sum()
    y.backward()
    # d/dw sum(w^2 x) = 2 w x
    np.testing.assert_allclose(p.grad().asnumpy(), [4.0, -8.0, 16.0])
    p.zero_grad()
    np.testing.assert_array_equal(p.grad().asnumpy(), [0, 0, 0])


def test_grad_req_add_accumulates_and_null_has_no_grad():
    p = gluon.Parameter("w", shape=(2,), init="ones", grad_req="add")
    p.initialize()
    for _ in range(2):
        with mx.autograd.record():
            y = (p.data() * 3).sum()
        y.backward()
    np.testing.assert_array_equal(p.grad().asnumpy(), [6, 6])
    p.grad_req = "null"
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        p.grad()
    with pytest.raises(ValueError, match="grad_req"):
        p.grad_req = "sometimes"


def test_deferred_init_fills_unknown_dims():
    p = gluon.Parameter("w", shape=(4, 0), init="ones", allow_deferred_init=True)
    p.initialize()
    with pytest.raises(DeferredInitializationError, match="initialization was deferred"):
        p.data()
    assert isinstance(DeferredInitializationError("x"), mx.MXNetError)
    p.shape = (4, 5)
    p._finish_deferred_init()
    assert p.data().shape == (4, 5)


def test_invalid_shape_without_deferral():
    p = gluon.Parameter("w", shape=(4, 0))
    with pytest.raises(ValueError, match="Cannot initialize Parameter 'w' because it has invalid"):
        p.initialize()


def test_set_data_and_shape_mismatch():
    p = gluon.Parameter("w", shape=(2, 3))
    p.initialize()
    p.set_data(mx.nd.ones((2, 3)) * 7)
    np.testing.assert_array_equal(p.data().asnumpy(), np.full((2, 3), 7))
    with pytest.raises(AssertionError, match=r"'w'.*\(3, 3\).*\(2, 3\)"):
        p.set_data(mx.nd.ones((3, 3)))
    with pytest.raises(mx.MXNetError):
        p.set_data(mx.nd.ones((2,)))


def test_set_data_before_deferred_init_is_used():
    p = gluon.Parameter("w", shape=(0, 2), allow_deferred_init=True)
    p.initialize()
    p.set_data(mx.nd.array([[1, 2], [3, 4]]))
    p._finish_deferred_init()
    np.testing.assert_array_equal(p.data().asnumpy(), [[1, 2], [3, 4]])


def test_cast_and_var():
    p = gluon.Parameter("w", shape=(2,), init="ones", lr_mult=2.0)
    p.initialize()
    p.cast("float64")
    assert p.data().dtype == np.float64 and p.grad().dtype == np.float64
    v = p.var()
    assert v.name == "w" and v is p.var()
    assert v.list_arguments() == ["w"]


def test_constant():
    c = gluon.Constant("c", mx.nd.array([1.0, 2.0]))
    assert c.grad_req == "null"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c.grad_req = "write"
    assert c.grad_req == "null" and "does not support grad_req" in str(caught[0].message)
    c.initialize()
    np.testing.assert_array_equal(c.data().asnumpy(), [1, 2])
    assert repr(c) == "Constant c (shape=(2,), dtype=<class 'numpy.float32'>)"


def test_parameter_dict_get_prefix_and_match():
    pd = gluon.ParameterDict("net_")
    w = pd.get("weight", shape=(3, 0))
    assert w.name == "net_weight" and "net_weight" in pd
    assert pd.get("weight", shape=(3, 5)) is w and w.shape == (3, 5)
    with pytest.raises(AssertionError):
        pd.get("weight", shape=(4, 5))
    with pytest.raises(mx.MXNetError, match="desired attribute does not match"):
        pd.get("weight", lr_mult=3.0)
    assert pd.get("weight", dtype="float32") is w
    assert repr(pd) == ("net_ (\n  Parameter net_weight (shape=(3, 5), "
                        "dtype=<class 'numpy.float32'>)\n)")


def test_parameter_dict_shared_update_setattr_initialize():
    base = gluon.ParameterDict("a_")
    w = base.get("w", shape=(2,))
    shared = gluon.ParameterDict("a_", shared=base)
    assert shared.get("w") is w
    other = gluon.ParameterDict("b_")
    other.get("w", shape=(2,))
    base.update(other)
    assert list(base.keys()) == ["a_w", "b_w"]
    clash = gluon.ParameterDict("b_")
    clash.get("w", shape=(2,))
    with pytest.raises(mx.MXNetError, match="same name 'b_w'"):
        base.update(clash)
    base.setattr("grad_req", "add")
    assert all(p.grad_req == "add" for p in base.values())
    base.initialize(mx.init.One())
    np.testing.assert_array_equal(base["b_w"].data().asnumpy(), [1, 1])
    base.zero_grad()
    assert base.list_ctx() == [mx.cpu()]
    assert list(base._select(".*b_.*").keys()) == ["b_w"]


def test_get_constant():
    pd = gluon.ParameterDict("p_")
    c = pd.get_constant("c", [1.0, 2.0])
    assert isinstance(c, gluon.Constant) and pd.get_constant("c") is c
    with pytest.raises(KeyError):
        pd.get_constant("missing")


def test_reset_ctx_keeps_values_and_gives_fresh_grads():
    p = gluon.Parameter("w", shape=(2,), init="ones")
    with pytest.raises(ValueError, match="Cannot reset context for Parameter 'w'"):
        p.reset_ctx(mx.cpu())
    p.initialize()
    with mx.autograd.record():
        y = (p.data() * 2).sum()
    y.backward()
    p.reset_ctx(mx.cpu())
    np.testing.assert_array_equal(p.data().asnumpy(), [1, 1])
    np.testing.assert_array_equal(p.grad().asnumpy(), [0, 0])
    assert p.list_ctx() == [mx.cpu()]
