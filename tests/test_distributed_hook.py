"""The tape's grad-ready hook (the point where distributed training starts an allreduce before
backward ends): each gradient is delivered once, written, as soon as it is final."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import _ferrograd, autograd


@pytest.fixture
def hook_calls():
    calls = []
    _ferrograd._ag_set_grad_ready_hook(
        lambda grad, vid: calls.append((vid, grad.asnumpy().copy())))
    yield calls
    _ferrograd._ag_set_grad_ready_hook(None)


def test_each_gradient_is_delivered_when_final(hook_calls):
    w = mx.nd.array([1.0, 2.0])
    v = mx.nd.array([3.0, 4.0])
    w.attach_grad()
    v.attach_grad()
    with autograd.record():
        h = v * 2  # v is used once, early in backward's order
        y = (w * h).sum() + (w * w).sum()
    y.backward()
    ids = [vid for vid, _ in hook_calls]
    assert sorted(ids) == sorted([_ferrograd._ag_variable_id(w), _ferrograd._ag_variable_id(v)])
    got = dict(hook_calls)
    # dy/dw = h + 2w, dy/dv = 2w: the values the hook saw are the final ones
    np.testing.assert_allclose(got[_ferrograd._ag_variable_id(w)], [8.0, 12.0])
    np.testing.assert_allclose(got[_ferrograd._ag_variable_id(v)], [2.0, 4.0])
    np.testing.assert_allclose(w.grad.asnumpy(), [8.0, 12.0])
    np.testing.assert_allclose(v.grad.asnumpy(), [2.0, 4.0])


def test_null_grad_req_and_autograd_grad_do_not_call_the_hook(hook_calls):
    w = mx.nd.array([1.0, 2.0])
    w.attach_grad(grad_req="null")
    u = mx.nd.array([1.0])
    u.attach_grad()
    with autograd.record():
        y = (w * 3).sum() + u * 2
    y.backward()
    assert [vid for vid, _ in hook_calls] == [_ferrograd._ag_variable_id(u)]
    hook_calls.clear()
    with autograd.record():
        y = (u * 5).sum()
    (g,) = autograd.grad(y, [u])
    assert hook_calls == []
    np.testing.assert_allclose(g.asnumpy(), [5.0])


def test_a_raising_hook_aborts_backward_with_its_error():
    w = mx.nd.array([1.0])
    w.attach_grad()

    def bad(grad, vid):
        raise KeyError("no such parameter")

    _ferrograd._ag_set_grad_ready_hook(bad)
    try:
        with autograd.record():
            y = w * 2
        with pytest.raises(mx.MXNetError, match="grad-ready hook raised KeyError"):
            y.backward()
    finally:
        _ferrograd._ag_set_grad_ready_hook(None)


def test_variable_id_is_none_for_results():
    x = mx.nd.ones((2,))
    assert _ferrograd._ag_variable_id(x) is None
    x.attach_grad()
    assert isinstance(_ferrograd._ag_variable_id(x), int)
