"""``mx.contrib.autograd`` (issue 14): MXNet's legacy autograd API on ferrograd's tape."""

import json
from pathlib import Path

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import autograd, nd
from ferrograd.contrib import autograd as cag

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "mxnet_compat_names.json").read_text())


def test_star_import_gives_mxnets_api_names():
    star = {}
    exec("from ferrograd.contrib.autograd import *", star)
    # MXNet also star-exports its ctypes plumbing (c_array, NDArrayHandle, ...): not ours
    plumbing = {"ctypes", "c_array", "c_array_buf", "c_handle_array", "NDArrayHandle", "mx_uint"}
    missing = set(FIXTURE["contrib_autograd_star"]) - plumbing - set(star)
    assert not missing
    assert not any(k.startswith("_") for k in star if k != "__builtins__")
    assert mx.contrib.autograd is cag


def test_sections_set_recording_and_training_together_and_restore():
    assert (autograd.is_recording(), autograd.is_training()) == (False, False)
    with cag.train_section():
        assert (autograd.is_recording(), autograd.is_training()) == (True, True)
        with cag.test_section():
            assert (autograd.is_recording(), autograd.is_training()) == (False, False)
        assert (autograd.is_recording(), autograd.is_training()) == (True, True)
    assert (autograd.is_recording(), autograd.is_training()) == (False, False)


def test_set_is_training_returns_previous_state():
    assert cag.set_is_training(True) is False
    try:
        assert autograd.is_recording() and autograd.is_training()
    finally:
        assert cag.set_is_training(False) is True
    assert not autograd.is_recording() and not autograd.is_training()


def test_dropout_is_active_only_in_train_section():
    x = nd.ones((20, 20))
    with cag.train_section():
        y = nd.Dropout(x, p=0.5).asnumpy()
        with cag.test_section():
            z = nd.Dropout(x, p=0.5).asnumpy()
    assert set(np.unique(y)) == {0.0, 2.0}  # dropped, the rest scaled by 1/(1-p)
    np.testing.assert_array_equal(z, 1.0)


def test_grad_and_loss_matches_hand_derived_gradients():
    x = nd.array([[0.5, -1.0], [2.0, 3.0]])
    y = nd.array([[1.5, 2.0], [-0.5, 1.0]])

    def f(a, b):
        return a * b + nd.exp(a)

    grads, out = cag.grad_and_loss(f)(x, y)
    xn, yn = x.asnumpy(), y.asnumpy()
    np.testing.assert_allclose(out.asnumpy(), xn * yn + np.exp(xn), rtol=1e-6)
    np.testing.assert_allclose(grads[0].asnumpy(), yn + np.exp(xn), rtol=1e-6)
    np.testing.assert_allclose(grads[1].asnumpy(), xn, rtol=1e-6)
    assert not autograd.is_recording()


def test_argnum_selects_the_differentiated_arguments():
    x, y = nd.array([1.0, 2.0]), nd.array([3.0, 5.0])

    def f(a, b, square):
        return a * a * b if square else a * b

    grads, _ = cag.grad_and_loss(f, argnum=[1])(x, y, True)
    assert len(grads) == 1
    np.testing.assert_allclose(grads[0].asnumpy(), [1.0, 4.0])
    only = cag.grad(f, argnum=0)(x, y, True)  # d(a²b)/da = 2ab
    np.testing.assert_allclose(only[0].asnumpy(), [6.0, 20.0])


def test_grad_and_loss_rejects_non_arrays():
    with pytest.raises(TypeError, match="grad_and_loss: argument 0"):
        cag.grad_and_loss(lambda a: a)(np.ones(2))


def test_mark_variables_and_backward_with_head_gradients():
    x = nd.ones((3, 2))
    dx = nd.zeros_like(x)
    cag.mark_variables([x], [dx])
    with cag.train_section():
        a, b, c = nd.split(x * 2, axis=0, num_outputs=3, squeeze_axis=True)
        cag.backward([a, b, c], [None, nd.array([1.0, 2.0]), nd.array([3.0, 4.0])])
    np.testing.assert_allclose(dx.asnumpy(), [[2, 2], [2, 4], [6, 8]])


def test_backward_twice_needs_retain_graph_and_add_accumulates():
    x = nd.ones((2,))
    dx = nd.zeros((2,))
    cag.mark_variables([x], [dx], grad_reqs="add")
    with cag.train_section():
        y = x * 3
        cag.backward(y, retain_graph=True)
        cag.compute_gradient([y])
    np.testing.assert_allclose(dx.asnumpy(), [6.0, 6.0])
    with pytest.raises(mx.MXNetError):
        with cag.train_section():
            y = x * 3
            cag.backward(y)
            cag.backward(y)
