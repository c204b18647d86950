"""MXNet's symbolic checkers in ferrograd.test_utils (spec §4.4): each passes on a correct
symbol, fails with MXNet's message on a wrong expectation, and honours its argument forms."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import test_utils as tu

sym = mx.sym


@pytest.fixture
def sin_mul():
    x, y = sym.var("x"), sym.var("y")
    rng = np.random.default_rng(3)
    return sym.sin(x) * y, {"x": rng.random((3, 4)), "y": rng.random((3, 4))}


def test_simple_forward():
    x = sym.var("x")
    out = tu.simple_forward(sym.exp(x), x=np.array([0.0, 1.0]))
    np.testing.assert_allclose(out, [1.0, np.e], rtol=1e-6)
    both = tu.simple_forward(sym.Group([x * 2, x + 1]), x=np.array([1.0]))
    assert [o.tolist() for o in both] == [[2.0], [2.0]]


def test_check_symbolic_forward_list_dict_and_failure(sin_mul):
    s, loc = sin_mul
    want = np.sin(loc["x"]) * loc["y"]
    outs = tu.check_symbolic_forward(s, loc, [want])
    np.testing.assert_allclose(outs[0].asnumpy(), want, rtol=1e-6)
    tu.check_symbolic_forward(s, [loc["x"], loc["y"]], {s.list_outputs()[0]: want})
    with pytest.raises(AssertionError, match="EXPECTED__mul0_output|FORWARD_"):
        tu.check_symbolic_forward(s, loc, [want + 1])
    with pytest.raises(ValueError, match="Symbol arguments and keys of the given location"):
        tu.check_symbolic_forward(s, {"x": loc["x"]}, [want])


def test_check_symbolic_backward_grad_reqs(sin_mul):
    s, loc = sin_mul
    og = np.random.default_rng(0).random((3, 4)) + 0.5
    gx, gy = np.cos(loc["x"]) * loc["y"] * og, np.sin(loc["x"]) * og
    grads = tu.check_symbolic_backward(s, loc, [og], [gx, gy], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grads["x"].asnumpy(), gx, rtol=1e-4)
    tu.check_symbolic_backward(s, loc, [og], {"x": gx}, rtol=1e-4, atol=1e-6)  # partial dict
    tu.check_symbolic_backward(s, loc, [og], {"x": gx, "y": gy}, grad_req="add", rtol=1e-4,
                               atol=1e-6)
    tu.check_symbolic_backward(s, loc, [og], {"x": gx, "y": gy},
                               grad_req={"x": "write", "y": "null"}, rtol=1e-4, atol=1e-6)
    with pytest.raises(AssertionError, match="BACKWARD_x"):
        tu.check_symbolic_backward(s, loc, [og], {"x": gx * 2}, rtol=1e-4, atol=1e-6)


def test_numeric_grad_matches_the_spec_example():
    x = sym.var("x")
    exe = sym.square(x).simple_bind(mx.cpu(), x=(3,))
    fd = tu.numeric_grad(exe, {"x": np.array([1.0, 2.0, 3.0])}, eps=1e-2)
    np.testing.assert_allclose(fd["x"], [2.0, 4.0, 6.0], rtol=1e-4)
    # The executor's own arrays hold the location, unperturbed.
    np.testing.assert_array_equal(exe.arg_dict["x"].asnumpy(), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("dtype,tol", [(np.float32, {}), (np.float64, {"rtol": 1e-6,
                                                                      "atol": 1e-8})])
def test_check_numeric_gradient_passes(sin_mul, dtype, tol):
    s, loc = sin_mul
    tu.check_numeric_gradient(s, loc, dtype=dtype, **tol)
    tu.check_numeric_gradient(s, loc, grad_nodes=["x"], dtype=dtype, **tol)
    tu.check_numeric_gradient(s, loc, grad_nodes={"x": "add", "y": "null"}, dtype=dtype, **tol)


def test_check_numeric_gradient_with_aux_states():
    x = sym.var("x")
    bn = sym.BatchNorm(x, fix_gamma=False, name="bn")
    rng = np.random.default_rng(5)
    loc = {"x": rng.random((4, 3)), "bn_gamma": rng.random(3) + 0.5, "bn_beta": rng.random(3)}
    tu.check_numeric_gradient(bn, loc, aux_states=[np.zeros(3), np.ones(3)], dtype=np.float64,
                              numeric_eps=1e-4, rtol=1e-4, atol=1e-6)


def test_check_numeric_gradient_catches_a_wrong_gradient():
    x = sym.var("x")
    with pytest.raises(AssertionError, match=r"NUMERICAL_x=.*BACKWARD_x=0\.0"):
        tu.check_numeric_gradient(sym.BlockGrad(sym.exp(x)), {"x": np.random.rand(3)})


def test_check_numeric_gradient_argument_errors(sin_mul):
    s, loc = sin_mul
    with pytest.raises(AssertionError):
        tu.check_numeric_gradient(s, loc, numeric_eps=1e-6)  # too small for float32
    with pytest.raises(AssertionError):
        tu.check_numeric_gradient(sym.Group([s, s]), loc)
    with pytest.raises(ValueError, match="grad node nope"):
        tu.check_numeric_gradient(s, loc, grad_nodes=["nope"])


def test_check_consistency_float32_vs_float64():
    fc = sym.FullyConnected(sym.var("data"), num_hidden=3, name="fc")
    ctx = [{"ctx": mx.cpu(), "data": (2, 4), "type_dict": {"data": np.float32}},
           {"ctx": mx.cpu(), "data": (2, 4), "type_dict": {"data": np.float64}}]
    gt = tu.check_consistency(fc, ctx)
    assert sorted(gt) == ["data", "fc_bias", "fc_output", "fc_weight"]
    assert gt["fc_output"].dtype == np.float64
    with pytest.raises(AssertionError):
        tu.check_consistency(fc, ctx[:1])


def _central_differences(f, arrays, name, eps):
    """Finite differences of ``f(arrays)`` (a float) w.r.t. ``arrays[name]``, in NumPy."""
    base = arrays[name]
    out = np.zeros_like(base)
    for i in range(base.size):
        plus, minus = base.copy(), base.copy()
        plus.flat[i] += eps / 2
        minus.flat[i] -= eps / 2
        out.flat[i] = (f({**arrays, name: plus}) - f({**arrays, name: minus})) / eps
    return out


_LINEAR_CASES = {
    # Products whose perturbed operand is updated by its linear contribution, not recomputed.
    "dot": (lambda a, b: sym.dot(a, b), lambda v: v["a"] @ v["b"], (3, 4), (4, 5)),
    "dot_ta": (lambda a, b: sym.dot(a, b, transpose_a=True), lambda v: v["a"].T @ v["b"],
               (4, 3), (4, 5)),
    "dot_tb": (lambda a, b: sym.dot(a, b, transpose_b=True), lambda v: v["a"] @ v["b"].T,
               (3, 4), (5, 4)),
    "dot_vec": (lambda a, b: sym.dot(a, b), lambda v: v["a"] @ v["b"], (3, 4), (4,)),
    "batch_dot": (lambda a, b: sym.batch_dot(a, b, transpose_b=True),
                  lambda v: v["a"] @ np.swapaxes(v["b"], 1, 2), (2, 3, 4), (2, 5, 4)),
    "fc": (lambda a, b: sym.FullyConnected(a, b, sym.var("c"), num_hidden=5),
           lambda v: v["a"].reshape(3, -1) @ v["b"].T + v["c"], (3, 2, 2), (5, 4)),
}


@pytest.mark.parametrize("case", sorted(_LINEAR_CASES))
def test_numeric_grad_through_linear_ops_matches_numpy(case):
    """numeric_grad updates a linear layer's output by the perturbation's contribution; the
    result must equal finite differences recomputed from scratch (here in NumPy)."""
    build, ref, sa, sb = _LINEAR_CASES[case]
    a, b = sym.var("a"), sym.var("b")
    s = sym.tanh(build(a, b)) * 2
    rng = np.random.default_rng(1)
    loc = {"a": rng.standard_normal(sa), "b": rng.standard_normal(sb)}
    if case == "fc":
        loc["c"] = rng.standard_normal(5)
    exe = s.simple_bind(mx.cpu(), type_dict=dict.fromkeys(loc, np.float64),
                        **{k: v.shape for k, v in loc.items()})
    fd = tu.numeric_grad(exe, loc, eps=1e-6, dtype=np.float64)
    for name in loc:
        want = _central_differences(lambda v: float((np.tanh(ref(v)) * 2).sum()), loc, name, 1e-6)
        np.testing.assert_allclose(fd[name], want, rtol=1e-6, atol=1e-8, err_msg=name)
    tu.check_numeric_gradient(s, loc, dtype=np.float64, rtol=1e-5, atol=1e-7)


def test_numeric_grad_keeps_a_float64_location_exact():
    x = sym.var("x")
    exe = (x * 1).simple_bind(mx.cpu(), type_dict={"x": np.float64}, x=(2,))
    v = np.array([1 + 1e-12, 0.1])
    tu.numeric_grad(exe, {"x": v}, dtype=np.float64)
    np.testing.assert_array_equal(exe.arg_dict["x"].asnumpy(), v)


def test_numeric_grad_of_an_argument_read_twice_and_through_a_reshape():
    """The perturbed argument feeds a product twice (not linear) and through a reshape (not a
    direct input): both re-run the product."""
    a = sym.var("a")
    s = sym.dot(a, a) + sym.dot(sym.reshape(a, shape=(3, 3)), a)
    x = np.random.default_rng(2).standard_normal((3, 3))
    exe = s.simple_bind(mx.cpu(), type_dict={"a": np.float64}, a=(3, 3))
    fd = tu.numeric_grad(exe, {"a": x}, eps=1e-6, dtype=np.float64)
    want = _central_differences(lambda v: float((2 * v["a"] @ v["a"]).sum()), {"a": x}, "a",
                                1e-6)
    np.testing.assert_allclose(fd["a"], want, rtol=1e-6, atol=1e-8)
