"""ferrograd.autograd against spec §1 (MXNet 1.x semantics, with the reference's QUIRKs fixed):
recording state and scopes, variables and gradient buffers, backward, grad, error texts, dynamic
control flow and indexing."""

import contextlib
import json
import re
from concurrent.futures import ThreadPoolExecutor

import ferrograd as mx
import numpy as np
import pytest
from conftest import check, raises
from ferrograd import autograd, nd

NOT_IN_GRAPH = (
    "Cannot differentiate node because it is not in a computational graph. You need to set "
    "is_recording to true or use autograd.record() to save computational graphs for backward. "
    "If you want to differentiate the same graph twice, you need to pass retain_graph=True to "
    "backward.")
HEADS_MISMATCH = "heads and head_grads must be lists of the same length"
NO_INPUTS = "There are no inputs in computation graph that require gradients."
ASSIGN = (
    "Assigning to NDArrays that are already in a computational graph will cause undefined "
    "behavior when evaluating gradients. Please call backward first to clear the graph or do this "
    "out side of a record section. Also note that you cannot use inplace operations like +=, *=, "
    "relu(x, out=x), y[idx]=x, etc inside a record section.")


@pytest.fixture(autouse=True)
def _flags_off():
    """Every test starts and ends with recording and training off on this thread."""
    autograd.set_recording(False)
    autograd.set_training(False)
    yield
    autograd.set_recording(False)
    autograd.set_training(False)


def in_new_thread(fn):
    """Runs ``fn`` on a fresh thread and returns its result (exceptions propagate)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn).result()


def state():
    return autograd.is_recording(), autograd.is_training()


def variable(values, dtype=None, grad_req="write"):
    """An array with a gradient buffer attached."""
    x = nd.array(values, dtype=dtype)
    x.attach_grad(grad_req=grad_req)
    return x


# ---------------------------------------------------------------- §1.1 state and scopes

def test_package_exposes_autograd():
    assert mx.autograd is autograd


def test_defaults_on_a_fresh_thread():
    assert in_new_thread(state) == (False, False)
    assert isinstance(autograd.is_recording(), bool)
    assert isinstance(autograd.is_training(), bool)


def test_set_recording_and_training_return_previous_value():
    assert autograd.set_recording(True) is False
    assert autograd.set_recording(True) is True
    assert autograd.set_recording(False) is True
    assert autograd.is_recording() is False
    assert autograd.set_training(True) is False
    assert autograd.is_training() is True
    assert autograd.set_training(False) is True
    assert autograd.is_training() is False


@pytest.mark.parametrize("outer,scope,want", [
    (None, autograd.record, (True, True)),
    (None, lambda: autograd.record(train_mode=False), (True, False)),
    (autograd.record, autograd.pause, (False, False)),
    (autograd.record, autograd.predict_mode, (True, False)),
    (None, autograd.train_mode, (False, True)),
    (None, autograd.pause, (False, False)),
    (None, lambda: autograd.pause(train_mode=True), (False, True)),
    (autograd.record, autograd.train_mode, (True, True)),
])
def test_state_table(outer, scope, want):
    with (outer or contextlib.nullcontext)():
        before = state()
        with scope() as entered:
            assert entered is None
            assert state() == want
        assert state() == before
    assert state() == (False, False)


def test_nested_record_restores_nothing():
    with autograd.record():
        with autograd.record():
            autograd.set_recording(False)
        # The inner scope found recording already on, so it restores nothing on exit.
        assert autograd.is_recording() is False
        autograd.set_recording(True)
        with autograd.pause():
            assert autograd.is_recording() is False
        assert autograd.is_recording() is True
    assert state() == (False, False)


def test_scope_restores_state_when_an_exception_propagates():
    with pytest.raises(ZeroDivisionError):
        with autograd.record():
            assert autograd.is_recording()
            _ = 1 / 0
    assert state() == (False, False)


def test_state_is_per_thread():
    with autograd.record():
        assert in_new_thread(state) == (False, False)

        def flip():
            autograd.set_recording(False)
            autograd.set_training(False)
            return state()

        assert in_new_thread(flip) == (False, False)
        assert state() == (True, True)

    def record_on_thread():
        autograd.set_recording(True)
        return autograd.is_recording()

    assert in_new_thread(record_on_thread) is True
    assert autograd.is_recording() is False


# ---------------------------------------------------------------- §1.2 variables

def test_mark_variables_stores_gradient_buffer_by_reference():
    x, g = nd.array([1, 2, 3]), nd.zeros((3,))
    autograd.mark_variables(x, g)
    check(x.grad, [0, 0, 0])
    with autograd.record():
        y = x * x
    y.backward()
    check(g, [2, 4, 6])
    check(x.grad, [2, 4, 6])
    assert x.grad is not g
    g[:] = 5
    check(x.grad, [5, 5, 5])
    x.grad[:] = 1
    check(g, [1, 1, 1])


def test_mark_variables_lists_with_per_variable_requests():
    a, b = nd.array([1, 2]), nd.array([3, 4])
    ga, gb = nd.full((2,), 9.0), nd.full((2,), 10.0)
    autograd.mark_variables([a, b], [ga, gb], ["write", "add"])
    with autograd.record():
        y = a * b
    y.backward()
    check(ga, [3, 4])
    check(gb, [11, 12])


def test_mark_variables_cuts_history():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = 2 * x
        gy = nd.zeros((2,))
        autograd.mark_variables(y, gy)
        z = (y * y).sum()
    z.backward()
    check(x.grad, [0, 0])
    check(gy, [4, 8])


def test_mark_variables_bad_arguments():
    x = nd.array([1.0])
    with pytest.raises(AssertionError):
        autograd.mark_variables(x, [nd.zeros((1,))])
    with pytest.raises(KeyError, match="bogus"):
        autograd.mark_variables(x, nd.zeros((1,)), "bogus")
    with pytest.raises(KeyError, match="bogus"):
        autograd.mark_variables([x], [nd.zeros((1,))], ["bogus"])
    with pytest.raises((AssertionError, ValueError)):
        autograd.mark_variables([x, nd.array([2.0])], [nd.zeros((1,))])


def test_attach_grad_allocates_zeros_of_same_shape_and_dtype():
    x = nd.array([[1, 2], [3, 4]], dtype="float64")
    assert x.grad is None
    x.attach_grad()
    check(x.grad, np.zeros((2, 2)), dtype="float64")
    assert x._fresh_grad == 0


def test_attach_grad_inside_record_makes_a_fresh_leaf():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = 2 * x
        y.attach_grad()
        z = (y * y).sum()
    z.backward()
    check(x.grad, [0, 0])
    check(y.grad, [4, 8])


def test_attach_grad_tutorial_case():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = 3 * x
        y.attach_grad()
        z = 4 * y + 2 * x
    z.backward()
    check(x.grad, [2, 2])
    check(y.grad, [4, 4])


def test_attach_grad_again_resets_and_cuts_old_graph():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = x * x
    y.backward(retain_graph=True)
    check(x.grad, [2, 4])
    old = x.grad
    x.attach_grad()
    check(x.grad, [0, 0])
    assert x._fresh_grad == 0
    y.backward()  # the graph recorded before the re-attach writes into the old buffer
    check(x.grad, [0, 0])
    check(old, [2, 4])


def test_attach_grad_on_int_arrays_gives_int_gradients():
    x = variable([1, 2], dtype="int32")
    check(x.grad, [0, 0], dtype="int32")
    with autograd.record():
        y = x * x
    y.backward()
    check(x.grad, [2, 4], dtype="int32")


def test_attach_grad_requests_and_stype():
    x = variable([1.0], grad_req="null")
    assert x.grad is None
    with pytest.raises(KeyError, match="bogus"):
        nd.array([1.0]).attach_grad(grad_req="bogus")
    y = nd.array([1.0, 2.0])
    y.attach_grad(stype="default")
    check(y.grad, [0, 0])
    z = nd.array([1.0])
    z.attach_grad(stype="row_sparse")
    assert z.grad.stype == "row_sparse"
    raises(Exception, nd.array([1.0]).attach_grad, stype="bogus", match="bogus")


def test_grad_is_none_for_non_leaves_and_detached():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = x * 2
    assert y.grad is None
    assert x.detach().grad is None
    assert nd.ones((2,)).grad is None


def test_detach_shares_memory_and_is_a_constant():
    x = variable([1.0, 2.0, 3.0])
    d = x.detach()
    x[:] = 5
    check(d, [5, 5, 5])
    x[:] = nd.array([1.0, 2.0, 3.0])
    with autograd.record():
        y = x * x.detach()
        z = (x * 2).detach() * x
    y.backward()
    check(x.grad, [1, 2, 3])
    z.backward()
    check(x.grad, [2, 4, 6])


def test_fresh_grad_flag():
    x, w = variable([1.0, 2.0]), variable([1.0])
    assert x._fresh_grad == 0
    with autograd.record():
        y = x * x
    y.backward()
    assert x._fresh_grad == 1
    assert w._fresh_grad == 0  # unreachable: not written
    x._fresh_grad = False
    assert x._fresh_grad == 0
    x._fresh_grad = True
    assert x._fresh_grad == 1


# ---------------------------------------------------------------- grad_req table

def test_grad_req_write_overwrites():
    x = variable([1.0, 2.0, 3.0])
    with autograd.record():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    check(x.grad, [2, 4, 6])


def test_grad_req_add_accumulates_until_reset():
    x = variable([1.0, 2.0, 3.0], grad_req="add")
    with autograd.record():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    check(x.grad, [2, 4, 6])
    y.backward(retain_graph=True)
    check(x.grad, [4, 8, 12])
    x.grad[:] = 0
    y.backward()
    check(x.grad, [2, 4, 6])


def test_grad_req_null_leaf_gets_nothing():
    x, w = variable([1.0, 2.0], grad_req="null"), variable([3.0, 4.0])
    with autograd.record():
        y = x * w
    y.backward()
    assert x.grad is None
    check(w.grad, [1, 2])


def test_only_null_leaves_reachable():
    x = variable([1.0, 2.0], grad_req="null")
    with autograd.record():
        y = x * x + nd.ones((2,))
    raises(RuntimeError, y.backward, match=NO_INPUTS)


# ---------------------------------------------------------------- §1.3 backward

def test_non_scalar_head_is_an_implicit_sum():
    x = variable([[1.0, 2.0], [3.0, 4.0]])
    with autograd.record():
        y = 3 * x
    y.backward()
    check(x.grad, [[3, 3], [3, 3]])


def test_explicit_head_gradient():
    x = variable([[1.0, 2.0], [3.0, 4.0]])
    with autograd.record():
        y = 3 * x
    y.backward(nd.array([[1, 0], [0, 2]]))
    check(x.grad, [[3, 0], [0, 6]])
    with autograd.record():
        y = 3 * x
    y.backward(out_grad=nd.array([[2, 0], [0, 0]]))
    check(x.grad, [[6, 0], [0, 0]])
    with autograd.record():
        y = 3 * x
    autograd.backward(y, nd.array([[0, 1], [1, 0]]))
    check(x.grad, [[0, 3], [3, 0]])


def test_multiple_heads_accumulate():
    x = variable([1.0, 2.0, 3.0])
    with autograd.record():
        a, b = 3 * x, x * x
    autograd.backward([a, b], [nd.ones((3,)), None])
    check(x.grad, [5, 7, 9])
    with autograd.record():
        a, b = 3 * x, x * x
    autograd.backward([a, b])
    check(x.grad, [5, 7, 9])
    with autograd.record():
        a, b = 3 * x, x * x
    autograd.backward([a, b], [nd.array([1, 0, 2]), nd.array([0, 1, 1])])
    check(x.grad, [3, 4, 12])


def test_heads_and_head_grads_length_mismatch():
    x = variable([1.0])
    with autograd.record():
        y = x * 2
    with pytest.raises(AssertionError, match=HEADS_MISMATCH):
        autograd.backward([y], [nd.ones((1,)), nd.ones((1,))])


def test_unreachable_leaves_are_untouched():
    x, w = variable([1.0, 2.0]), variable([5.0])
    w.grad[:] = 7
    with autograd.record():
        y = x * x
    y.backward()
    check(x.grad, [2, 4])
    check(w.grad, [7])


def test_history_spans_record_blocks():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = 2 * x
    with autograd.record():
        z = 3 * y
    z.backward()
    check(x.grad, [6, 6])
    with autograd.record():
        y = x * x
    y.backward(retain_graph=True)
    with autograd.record():
        z = y * 3
    z.backward()
    check(x.grad, [6, 12])


def test_pause_gives_constants():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = 2 * x
        with autograd.pause():
            z = 3 * y
            assert z.grad is None
        w = (z * x).sum()
    w.backward()
    check(x.grad, [6, 12])


def test_backward_inside_record_keeps_recording_on():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = x * x
        y.backward()
        assert autograd.is_recording() is True
        assert autograd.is_training() is True
    check(x.grad, [2, 4])


def test_variables_stay_marked_after_backward():
    x = variable([1.0, 2.0])
    for k in (1.0, 2.0, 3.0):
        with autograd.record():
            y = x * k
        y.backward()
        check(x.grad, [k, k])


def test_backward_on_the_variable_itself():
    x = variable([[1.0, 2.0], [3.0, 4.0]])
    x.backward()
    check(x.grad, np.ones((2, 2)))


def test_ndarray_backward_rejects_a_list():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = x * 2
    with pytest.raises((AttributeError, TypeError)):
        y.backward([nd.ones((2,))])


# ---------------------------------------------------------------- error rows

def test_second_backward_without_retain_graph():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = x * x
    y.backward()
    raises(RuntimeError, y.backward, match=NOT_IN_GRAPH)
    check(x.grad, [2, 4])


def test_backward_on_unrecorded_array():
    x = variable([1.0, 2.0])
    y = x * 2
    raises(RuntimeError, y.backward, match=NOT_IN_GRAPH)
    raises(RuntimeError, nd.ones((2,)).backward, match=NOT_IN_GRAPH)


def test_backward_when_nothing_is_attached():
    x = nd.array([1.0, 2.0])
    with autograd.record():
        y = x * 2
    raises(RuntimeError, y.backward, match=NOT_IN_GRAPH)


def test_backward_on_freed_intermediate():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = x * 2
        z = y * y
    z.backward()
    check(x.grad, [8, 16])
    raises(RuntimeError, y.backward, match=NOT_IN_GRAPH)


INPLACE = {"iadd": lambda a: a.__iadd__(1), "imul": lambda a: a.__imul__(2),
           "setall": lambda a: a.__setitem__(slice(None), 1),
           "setone": lambda a: a.__setitem__(0, 5), "relu_out": lambda a: nd.relu(a, out=a)}


@pytest.mark.parametrize("mutate", INPLACE.values(), ids=INPLACE.keys())
def test_inplace_on_recorded_array_inside_record(mutate):
    x = variable([1.0, 2.0])
    with autograd.record():
        y = x * 2
        raises(RuntimeError, mutate, y, match=ASSIGN)
        raises(RuntimeError, mutate, x, match=ASSIGN)


@pytest.mark.parametrize("mutate", INPLACE.values(), ids=INPLACE.keys())
def test_inplace_allowed_on_constants_and_outside_record(mutate):
    x = variable([1.0, 2.0])
    c = nd.array([1.0, 2.0])
    with autograd.record():
        y = x * 2
        mutate(c)
    mutate(y)
    mutate(x)
    y.backward()
    check(x.grad, [2, 2])


def test_inplace_allowed_after_backward_cleared_the_graph():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = x * 2
        y.backward()
        y += 1
    check(y, [3, 5])
    check(x.grad, [2, 2])


@pytest.mark.parametrize("head,bad", [
    (lambda x: 3 * x, (2,)),
    (lambda x: 3 * x, (3, 3)),
    (lambda x: x * x, (2, 1)),
    (nd.exp, (3, 3)),
    (nd.exp, (4,)),
])
def test_wrong_head_gradient_shape_is_a_shape_error(head, bad):
    x = variable([[1.0, 2.0], [3.0, 4.0]])
    with autograd.record():
        y = head(x)
    e = raises(ValueError, y.backward, nd.ones(bad), match=[str(bad), "(2, 2)"])
    assert isinstance(e, mx.base.ShapeError)
    e = raises(ValueError, autograd.backward, [y], [nd.ones(bad)], match=[str(bad), "(2, 2)"])
    assert isinstance(e, mx.base.ShapeError)
    check(x.grad, np.zeros((2, 2)))


def test_gradient_buffer_of_the_wrong_shape_is_a_shape_error():
    x, g = nd.array([1.0, 2.0]), nd.zeros((3,))
    try:
        autograd.mark_variables(x, g)
        with autograd.record():
            y = x * x
        y.backward()
    except ValueError as e:
        assert isinstance(e, mx.base.ShapeError), repr(e)
        assert "(2,)" in str(e) and "(3,)" in str(e), str(e)
    else:
        raise AssertionError("a (3,) gradient buffer for a (2,) variable was accepted")
    check(g, [0, 0, 0])


def test_bad_argument_types_are_type_errors():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = x * x
    with pytest.raises(TypeError):
        autograd.backward(3.0)
    with pytest.raises(TypeError):
        autograd.backward([y], [np.ones(2)])
    with pytest.raises(TypeError):
        autograd.grad(y, [3.0])
    with pytest.raises(TypeError):
        nd.array([1.0]).attach_grad(grad_req=None)
    y.backward()
    check(x.grad, [2, 4])


# ---------------------------------------------------------------- §1.4 grad

def test_grad_returns_a_list_and_leaves_dot_grad_alone():
    x = variable([1.0, 2.0, 3.0])
    with autograd.record():
        y = x * x
    gs = autograd.grad(y, x)
    assert isinstance(gs, list) and len(gs) == 1
    check(gs[0], [2, 4, 6])
    check(x.grad, [0, 0, 0])
    assert x._fresh_grad == 0


def test_grad_several_variables_and_head_grads():
    a, b = variable([1.0, 2.0]), variable([3.0, 4.0])
    with autograd.record():
        y = a * b
    ga, gb = autograd.grad([y], [a, b], head_grads=[nd.array([1, 2])], retain_graph=True)
    check(ga, [3, 8])
    check(gb, [1, 4])
    (ga,) = autograd.grad(y, [a], head_grads=nd.array([2, 0]))
    check(ga, [6, 0])
    check(a.grad, [0, 0])
    check(b.grad, [0, 0])


def test_grad_always_writes_fresh_gradients():
    x = variable([1.0, 2.0], grad_req="add")
    with autograd.record():
        y = x * x
    check(autograd.grad(y, [x], retain_graph=True)[0], [2, 4])
    check(autograd.grad(y, [x])[0], [2, 4])
    check(x.grad, [0, 0])


def test_grad_wrong_arity_head_grads():
    x = variable([1.0])
    with autograd.record():
        y = x * 2
    with pytest.raises(AssertionError, match=HEADS_MISMATCH):
        autograd.grad([y], [x], head_grads=[nd.ones((1,)), nd.ones((1,))])


def test_grad_retain_graph_defaults_to_create_graph():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = x * x
    check(autograd.grad(y, [x])[0], [2, 4])
    raises(RuntimeError, autograd.grad, y, [x], match=NOT_IN_GRAPH)

    with autograd.record():
        y = x * x
    check(autograd.grad(y, [x], retain_graph=True)[0], [2, 4])
    check(autograd.grad(y, [x])[0], [2, 4])

    with autograd.record():
        y = x * x
    autograd.grad(y, [x], create_graph=True)
    y.backward()
    check(x.grad, [2, 4])


def test_grad_empty_variables():
    x = variable([1.0])
    with autograd.record():
        y = x * 2
    with pytest.raises(AssertionError, match="variables cannot be an empty list."):
        autograd.grad(y, [])


def test_grad_variable_that_does_not_require_gradient():
    x, w = variable([1.0, 2.0]), variable([3.0, 4.0], grad_req="null")
    with autograd.record():
        y = x * w
    raises(RuntimeError, autograd.grad, y, [x, w], retain_graph=True,
           match="Cannot differentiate with respect to the 2-th variable because it does not "
                 "require gradient.")
    raises(RuntimeError, autograd.grad, y, [w], retain_graph=True,
           match="Cannot differentiate with respect to the 1-th variable because it does not "
                 "require gradient.")
    raises(RuntimeError, autograd.grad, y, [nd.array([1.0, 2.0])], match=NOT_IN_GRAPH)


def test_grad_unreachable_variable():
    x, w = variable([1.0, 2.0]), variable([3.0])
    with autograd.record():
        y = x * x
    raises(RuntimeError, autograd.grad, y, [x, w], retain_graph=True,
           match="Cannot differentiate with respect to the 2-th variable because it is "
                 "unreachable from the outputs.")
    raises(RuntimeError, autograd.grad, y, [w], retain_graph=True,
           match="Cannot differentiate with respect to the 1-th variable because it is "
                 "unreachable from the outputs.")
    check(autograd.grad(y, [x])[0], [2, 4])


@pytest.mark.parametrize("inside_record", [True, False])
def test_create_graph_exp(inside_record):
    x = variable([1.0, 2.0])
    with autograd.record():
        y = nd.exp(x)
        if inside_record:
            (dx,) = autograd.grad(y, [x], create_graph=True)
    if not inside_record:
        (dx,) = autograd.grad(y, [x], create_graph=True)
    check(dx, [2.7182817, 7.389056])
    dx.backward()
    check(x.grad, [2.7182817, 7.389056])


def test_create_graph_sin_third_derivative():
    xs = np.array([0.5, 1.0, 2.0, -1.5])
    x = variable(xs)
    with autograd.record():
        y = nd.sin(x)
        (d1,) = autograd.grad(y, [x], create_graph=True)
        (d2,) = autograd.grad(d1, [x], create_graph=True)
    check(d1, np.cos(xs), rtol=1e-5)
    check(d2, -np.sin(xs), rtol=1e-5)
    d2.backward()
    check(x.grad, -np.cos(xs), rtol=1e-5)


def test_create_graph_through_product_ops():
    xs = np.array([0.5, 1.0, 2.0])
    x = variable(xs)
    with autograd.record():
        y = (x * x * x).sum()
        (d1,) = autograd.grad(y, [x], create_graph=True)
        (d2,) = autograd.grad(d1, [x], create_graph=True)
    check(d1, 3 * xs**2, rtol=1e-5)
    check(d2, 6 * xs, rtol=1e-5)
    d2.backward()
    check(x.grad, [6, 6, 6])


def test_create_graph_without_retain_graph_then_backward_fails():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = nd.exp(x)
    (g,) = autograd.grad(y, [x], create_graph=True, retain_graph=False)
    check(g, [2.7182817, 7.389056])
    e = raises(RuntimeError, g.backward)
    assert NO_INPUTS in str(e) or NOT_IN_GRAPH in str(e), str(e)


def test_grad_is_recording_flag_restored():
    x = variable([1.0])
    with autograd.record():
        y = x * x
    autograd.grad(y, [x], create_graph=True)
    assert autograd.is_recording() is False
    with autograd.record():
        autograd.grad(y, [x])
        assert autograd.is_recording() is True


# ---------------------------------------------------------------- dynamic control flow, indexing

def test_while_loop_on_norm():
    xs = np.array([0.3, -0.2, 0.1], dtype=np.float32)
    k, v = 1, xs * 2
    while np.linalg.norm(v) < 100:
        v, k = v * 2, k + 1
    x = variable(xs)
    with autograd.record():
        y = x * 2
        while y.norm().asscalar() < 100:
            y = y * 2
    y.backward()
    assert k == 9
    check(y, xs * 2**k)
    check(x.grad, np.full(3, 2.0**k))


@pytest.mark.parametrize("xs,branch", [([1.0, 2.0], "else"), ([2.0, 3.0], "then")])
def test_if_on_sum(xs, branch):
    x = variable(xs)
    with autograd.record():
        y = x * x
        if y.sum().asscalar() > 5:
            z, taken = y * 3, "then"
        else:
            z, taken = nd.sin(x) - y, "else"
    z.backward()
    assert taken == branch
    xn = np.array(xs)
    want = 6 * xn if branch == "then" else np.cos(xn) - 2 * xn
    check(x.grad, want, rtol=1e-5)


@pytest.mark.parametrize("values,key,want", [
    ([1.0, 2.0], 0, [1, 0]),
    ([1.0, 2.0], slice(0, 1), [1, 0]),
    ([1.0, 2.0, 3.0], [0, 2], [1, 0, 1]),
    ([1.0, 2.0, 3.0], [0, 0, 2], [2, 0, 1]),
    ([1.0, 2.0, 3.0], np.array([True, False, True]), [1, 0, 1]),
    ([1.0, 2.0, 3.0], -1, [0, 0, 1]),
    ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], 1, [[0, 0, 0], [1, 1, 1]]),
    ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], (slice(None), 1), [[0, 1, 0], [0, 1, 0]]),
    ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], (1, 2), [[0, 0, 0], [0, 0, 1]]),
])
def test_indexing_is_differentiable(values, key, want):
    x = variable(values)
    with autograd.record():
        y = x[key]
    y.backward()
    check(x.grad, want)


def test_index_by_ndarray_and_weighted_picks():
    x = variable([1.0, 2.0, 3.0])
    with autograd.record():
        y = x[nd.array([0, 2])]
    y.backward()
    check(x.grad, [1, 0, 1])
    with autograd.record():
        z = (x[[0, 0, 2]] * nd.array([1, 2, 3])).sum() + (x[0:2] * x[0:2]).sum()
    z.backward()
    check(x.grad, [3 + 2, 4, 3])
    with autograd.record():
        m = x[np.array([False, True, True])] * nd.array([5, 7])
    m.backward()
    check(x.grad, [0, 5, 7])


# ---------------------------------------------------------------- §1.5 get_symbol

def test_get_symbol_of_recorded_history():
    x = variable([1.0, 2.0])
    with autograd.record():
        y = nd.exp(x) * 2
    s = autograd.get_symbol(y)
    (out,) = s.list_outputs()
    assert re.fullmatch(r"node_\d+_output", out), out
    (arg,) = s.list_arguments()
    assert re.fullmatch(r"var\d+", arg), arg
    nodes = json.loads(s.tojson())["nodes"]
    assert [n["op"] for n in nodes] == ["null", "exp", "_mul_scalar"]
    assert all(re.fullmatch(r"node_\d+", n["name"]) for n in nodes[1:])
    assert nodes[2]["attrs"] == {"scalar": "2.0"}


def test_get_symbol_rejects_non_ndarray():
    # MXNet formats the expected class and the received type with %s.
    want = (r"get_symbol: Invalid argument type, "
            r"expecting <(class '[\w.]+)?NDArray'?>, got <class 'list'>")
    with pytest.raises(AssertionError, match=want):
        autograd.get_symbol([1.0])


def test_written_gradient_reaches_every_handle_and_view_but_not_earlier_copies():
    """grad_req 'write' may hand x.grad the computed buffer instead of copying it: the grad array,
    its views and later writes must behave exactly as with a copy."""
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    g, tail = x.grad, x.grad[1:]
    before = x.grad.asnumpy()
    for scale in (1.0, 3.0):
        with mx.autograd.record():
            y = (x * x * scale).sum()
        y.backward()
        np.testing.assert_array_equal(g.asnumpy(), [2 * scale, 4 * scale, 6 * scale])
        np.testing.assert_array_equal(tail.asnumpy(), [4 * scale, 6 * scale])
    np.testing.assert_array_equal(before, [0.0, 0.0, 0.0])
    g[:] = 0  # writing into the gradient leaves the next backward's result intact
    with mx.autograd.record():
        y = (x * 2).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [2.0, 2.0, 2.0])


def test_gradient_written_into_imported_numpy_memory():
    buf = np.zeros(3, dtype=np.float32)
    x = mx.nd.array([1.0, 2.0, 3.0])
    mx.autograd.mark_variables([x], [mx.nd.from_numpy(buf)])
    with mx.autograd.record():
        y = (x * x).sum()
    y.backward()
    np.testing.assert_array_equal(buf, [2.0, 4.0, 6.0])


def test_variable_reached_only_through_a_zero_gradient_op_gets_zeros():
    # MXNet 1.9.1: grad_req='write' leaves zeros (not the previous gradient), 'add' keeps it.
    x = mx.nd.array([1.0, -2.0, 3.0])
    z = mx.nd.array([1.0, 1.0, 1.0])
    x.attach_grad()
    z.attach_grad()
    x.grad[:] = 7
    with mx.autograd.record():
        y = x > 0
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [0, 0, 0])
    x.grad[:] = 7
    z.grad[:] = 5
    with mx.autograd.record():
        y = (x > 0) + z * 2
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [0, 0, 0])
    np.testing.assert_array_equal(z.grad.asnumpy(), [2, 2, 2])
    x.attach_grad(grad_req="add")
    x.grad[:] = 7
    with mx.autograd.record():
        y = x > 0
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [7, 7, 7])
