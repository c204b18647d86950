"""ferrograd.autograd.Function (spec §1.6): user-defined forward/backward recorded as one node,
with MXNet's QUIRKs fixed (write/add/null honoured, a wrong gradient count is a clear error)."""

import re

import numpy as np
import pytest
from conftest import check, raises
from ferrograd import autograd, nd

NOT_IN_GRAPH = "Cannot differentiate node because it is not in a computational graph."


@pytest.fixture(autouse=True)
def _flags_off():
    """Every test starts and ends with recording and training off on this thread."""
    autograd.set_recording(False)
    autograd.set_training(False)
    yield
    autograd.set_recording(False)
    autograd.set_training(False)


def variable(values, grad_req="write"):
    x = nd.array(values)
    x.attach_grad(grad_req=grad_req)
    return x


class Sigmoid(autograd.Function):
    """Logistic function; saves its output for backward."""

    def forward(self, x):
        y = 1 / (1 + nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        (y,) = self.saved_tensors
        return dy * y * (1 - y)


class MulAdd(autograd.Function):
    """Two inputs, two outputs: (x*y, x+y)."""

    def forward(self, x, y):
        self.save_for_backward(x, y)
        return x * y, x + y

    def backward(self, d1, d2):
        x, y = self.saved_tensors
        return d1 * y + d2, d1 * x + d2


class Product(autograd.Function):
    """x*w with a plain-NDArray (not tuple) forward output."""

    def forward(self, x, w):
        self.save_for_backward(x, w)
        return x * w

    def backward(self, dy):
        x, w = self.saved_tensors
        return dy * w, dy * x


class Cube(autograd.Function):
    """x**3 whose backward is written in ferrograd ops on the saved input (twice differentiable)."""

    def forward(self, x):
        self.save_for_backward(x)
        return x * x * x

    def backward(self, dy):
        (x,) = self.saved_tensors
        return dy * 3 * x * x


class Spy(autograd.Function):
    """Identity that records the autograd flags seen inside forward and backward."""

    def __init__(self):
        super().__init__()
        self.seen = {}

    def forward(self, x):
        self.seen["forward"] = (autograd.is_recording(), autograd.is_training())
        return x * 1

    def backward(self, dy):
        self.seen["backward"] = (autograd.is_recording(), autograd.is_training())
        return dy * 1


def test_sigmoid_example():
    x = variable([0.0, 1.0])
    with autograd.record():
        y = Sigmoid()(x)
    check(y, [0.5, 0.7310586])
    y.backward()
    check(x.grad, [0.25, 0.19661193])


def test_sigmoid_matches_builtin_op_gradient():
    xs = np.array([-2.0, -0.5, 0.0, 0.7, 3.0])
    x, ref = variable(xs), variable(xs)
    with autograd.record():
        y = (Sigmoid()(x) * nd.array([1, 2, 3, 4, 5])).sum()
        z = (nd.sigmoid(ref) * nd.array([1, 2, 3, 4, 5])).sum()
    y.backward()
    z.backward()
    check(x.grad, ref.grad.asnumpy(), rtol=1e-5)


def test_multiple_inputs_and_outputs():
    x, y = variable([1.0, 2.0]), variable([3.0, 5.0])
    with autograd.record():
        p, s = MulAdd()(x, y)
        loss = (p + 2 * s).sum()
    check(p, [3, 10])
    check(s, [4, 7])
    loss.backward()
    check(x.grad, [5, 7])
    check(y.grad, [3, 4])


def test_only_one_output_reaches_the_head():
    x, y = variable([1.0, 2.0]), variable([3.0, 5.0])
    with autograd.record():
        p, _ = MulAdd()(x, y)
    p.backward()
    check(x.grad, [3, 5])
    check(y.grad, [1, 2])


def test_explicit_head_gradients_for_each_output():
    x, y = variable([1.0, 2.0]), variable([3.0, 5.0])
    with autograd.record():
        p, s = MulAdd()(x, y)
    autograd.backward([p, s], [nd.array([1, 0]), nd.array([0, 2])])
    check(x.grad, [3, 2])
    check(y.grad, [1, 2])


def test_function_composes_with_ordinary_ops():
    xs = np.array([0.5, -1.0])
    x = variable(xs)
    with autograd.record():
        y = nd.exp(Sigmoid()(x * 2))
    y.backward()
    s = 1 / (1 + np.exp(-2 * xs))
    check(x.grad, np.exp(s) * s * (1 - s) * 2, rtol=1e-5)


def test_each_instance_is_called_once():
    f = Sigmoid()
    x = variable([0.0])
    with autograd.record():
        f(x)
        with pytest.raises(AssertionError, match=re.escape(
                "Each Function instance can only be called once. Please create another instance.")):
            f(x)


def test_forward_runs_with_recording_off():
    spy = Spy()
    x = variable([1.0, 2.0])
    with autograd.record():
        y = spy(x)
        assert autograd.is_recording() is True
    assert spy.seen["forward"][0] is False
    y.backward()
    assert spy.seen["backward"] == (False, True)
    check(x.grad, [1, 1])


def test_backward_train_mode_flag():
    spy = Spy()
    x = variable([1.0])
    with autograd.record():
        y = spy(x)
    y.backward(train_mode=False)
    assert spy.seen["backward"] == (False, False)
    assert autograd.is_training() is False


def test_backward_records_when_create_graph():
    spy = Spy()
    x = variable([1.0])
    with autograd.record():
        y = spy(x)
    (g,) = autograd.grad(y, [x], create_graph=True)
    assert spy.seen["backward"] == (True, True)
    check(g, [1])


class OneTuple(autograd.Function):
    """Forward and backward both return 1-tuples."""

    def forward(self, x):
        return (x * 4,)

    def backward(self, dy):
        return (dy * 4,)


def test_one_tuple_outputs_and_gradients():
    x = variable([1.0, 2.0])
    with autograd.record():
        out = OneTuple()(x)
    y = out[0] if isinstance(out, (tuple, list)) else out
    check(y, [4, 8])
    y.backward()
    check(x.grad, [4, 4])


def test_not_recording_records_no_node_but_saves():
    f = Sigmoid()
    x = variable([0.0, 1.0])
    y = f(x)
    check(y, [0.5, 0.7310586])
    assert isinstance(f.saved_tensors, tuple) and len(f.saved_tensors) == 1
    check(f.saved_tensors[0], [0.5, 0.7310586])
    raises(RuntimeError, y.backward, match=NOT_IN_GRAPH)


def test_saved_tensors_default_and_replacement():
    assert Sigmoid().saved_tensors == ()

    class Twice(autograd.Function):
        def forward(self, x):
            self.save_for_backward(x, x * 2, x * 3)
            self.save_for_backward(x * 10)
            return x * 1

        def backward(self, dy):
            return dy

    f = Twice()
    f(nd.array([1.0]))
    assert len(f.saved_tensors) == 1
    check(f.saved_tensors[0], [10])


def test_default_forward_is_not_implemented():
    with pytest.raises(NotImplementedError):
        autograd.Function()(nd.array([1.0]))


def test_grad_req_write_is_honoured():
    x = variable([0.0, 1.0])
    x.grad[:] = 9
    with autograd.record():
        y = Sigmoid()(x)
    y.backward(retain_graph=True)
    check(x.grad, [0.25, 0.19661193])
    y.backward()
    check(x.grad, [0.25, 0.19661193])


def test_grad_req_add_is_honoured():
    x = variable([0.0, 1.0], grad_req="add")
    for k in (1, 2, 3):
        with autograd.record():
            y = Sigmoid()(x)
        y.backward()
        check(x.grad, [0.25 * k, 0.19661193 * k])


@pytest.mark.parametrize("null_first", [True, False])
def test_grad_req_null_skips_only_that_input(null_first):
    a = variable([1.0, 2.0], grad_req="null")
    b = variable([3.0, 4.0])
    with autograd.record():
        y = Product()(a, b) if null_first else Product()(b, a)
    y.backward()
    assert a.grad is None
    check(b.grad, [1, 2])


def test_mixed_requests_in_one_call():
    a, b = variable([1.0, 2.0], grad_req="add"), variable([3.0, 5.0])
    a.grad[:] = 1
    b.grad[:] = 100
    with autograd.record():
        p, s = MulAdd()(a, b)
        loss = (p + s).sum()
    loss.backward()
    check(a.grad, [1 + 4, 1 + 6])
    check(b.grad, [2, 3])


def test_input_without_gradient_is_skipped():
    x, c = variable([1.0, 2.0]), nd.array([3.0, 4.0])
    with autograd.record():
        y = Product()(c, x)
    y.backward()
    check(x.grad, [3, 4])
    assert c.grad is None


class WrongCount(autograd.Function):
    def forward(self, x, w):
        return x * w

    def backward(self, dy):
        return dy


class TooMany(autograd.Function):
    def forward(self, x):
        return x * 2

    def backward(self, dy):
        return dy, dy


@pytest.mark.parametrize("cls,n_in,expected,got", [(WrongCount, 2, 2, 1), (TooMany, 1, 1, 2)])
def test_backward_returning_wrong_number_of_gradients(cls, n_in, expected, got):
    xs = [variable([1.0, 2.0]) for _ in range(n_in)]
    with autograd.record():
        y = cls()(*xs)
    with pytest.raises((RuntimeError, ValueError)) as info:
        y.backward()
    msg = str(info.value)
    assert "Function.backward" in msg, msg
    assert re.search(rf"\b{expected}\b", msg) and re.search(rf"\b{got}\b", msg), msg
    assert type(info.value).__name__ != "PanicException"


class WrongShape(autograd.Function):
    def forward(self, x):
        return x * 2

    def backward(self, dy):
        return nd.ones((3,))


def test_backward_returning_wrong_shape_is_a_clear_error():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = WrongShape()(x)
    with pytest.raises((RuntimeError, ValueError)) as info:
        y.backward()
    assert "(3,)" in str(info.value) and "(2,)" in str(info.value), str(info.value)
    check(x.grad, [0, 0])


class Boom(autograd.Function):
    def forward(self, x):
        return x * 2

    def backward(self, dy):
        raise ValueError("user backward exploded: 42")


def _chain_text(e):
    parts = []
    while e is not None and len(parts) < 10:
        parts.append(f"{type(e).__name__}: {e}")
        e = e.__cause__ or e.__context__
    return "\n".join(parts)


def test_backward_exception_text_surfaces():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = Boom()(x)
    with pytest.raises(Exception) as info:  # noqa: B017 - the text is what is checked
        y.backward()
    assert type(info.value).__name__ != "PanicException"
    assert "user backward exploded: 42" in _chain_text(info.value)
    check(x.grad, [0, 0])


def test_create_graph_through_function():
    xs = np.array([0.5, 1.0, -2.0])
    x = variable(xs)
    with autograd.record():
        y = Cube()(x)
        (g,) = autograd.grad(y, [x], create_graph=True)
    check(g, 3 * xs**2, rtol=1e-5)
    g.backward()
    check(x.grad, 6 * xs, rtol=1e-5)


def test_grad_through_function_leaves_dot_grad_alone():
    x = variable([0.0, 1.0])
    with autograd.record():
        y = Sigmoid()(x)
    (g,) = autograd.grad(y, [x])
    check(g, [0.25, 0.19661193])
    check(x.grad, [0, 0])
