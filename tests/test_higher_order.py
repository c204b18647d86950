"""First, second and third derivatives of the foundation ops, checked with the Chainer-style
checkers of ``ferrograd.gradient_check``.

Every case runs ``check_backward`` and ``check_double_backward`` in float64 with random, non-unit
output gradients. Sample points stay away from kinks, poles and ties. Third order is checked for
a few functions by running ``check_double_backward`` on their first derivative (itself computed
with ``autograd.grad(..., create_graph=True)``), and by comparing nested gradients with the known
closed forms.
"""

import numpy as np
import pytest
from ferrograd import autograd, nd
from ferrograd.gradient_check import check_backward, check_double_backward

F64 = np.float64


def uniform(shape, low=-1.0, high=1.0):
    return np.random.uniform(low, high, size=shape).astype(F64)


def away_from_zero(shape, low=0.4, high=1.5):
    """Random values with random signs and |v| in [low, high]."""
    sign = np.where(np.random.uniform(size=shape) < 0.5, -1.0, 1.0)
    return sign * uniform(shape, low, high)


def outputs_of(func, xs):
    ys = func(*[nd.array(x, dtype=x.dtype) for x in xs])
    return ys if isinstance(ys, (tuple, list)) else (ys,)


def check_first_and_second(func, *xs, **tols):
    """check_backward and check_double_backward of ``func`` at ``xs`` (NumPy arrays)."""
    gys = tuple(away_from_zero(y.shape, 0.5, 1.5) for y in outputs_of(func, xs))
    check_backward(func, xs, gys, **tols)
    ggxs = tuple(uniform(x.shape) for x in xs if x.dtype.kind == "f")
    check_double_backward(func, xs, gys, ggxs, **tols)


# ----------------------------------------------------------------------------------------------
# unary elementwise

UNARY = {
    "exp": (nd.exp, lambda s: uniform(s)),
    "expm1": (nd.expm1, lambda s: uniform(s)),
    "log": (nd.log, lambda s: uniform(s, 0.5, 2.0)),
    "log2": (nd.log2, lambda s: uniform(s, 0.5, 2.0)),
    "log10": (nd.log10, lambda s: uniform(s, 0.5, 2.0)),
    "log1p": (nd.log1p, lambda s: uniform(s, -0.5, 1.0)),
    "sqrt": (nd.sqrt, lambda s: uniform(s, 0.5, 2.0)),
    "rsqrt": (nd.rsqrt, lambda s: uniform(s, 0.5, 2.0)),
    "cbrt": (nd.cbrt, lambda s: uniform(s, 0.5, 2.0)),
    "square": (nd.square, lambda s: uniform(s, -2.0, 2.0)),
    "reciprocal": (nd.reciprocal, lambda s: away_from_zero(s, 0.6, 2.0)),
    "tanh": (nd.tanh, lambda s: uniform(s, -1.5, 1.5)),
    "sigmoid": (nd.sigmoid, lambda s: uniform(s, -2.0, 2.0)),
    "sin": (nd.sin, lambda s: uniform(s, -3.0, 3.0)),
    "cos": (nd.cos, lambda s: uniform(s, -3.0, 3.0)),
    "tan": (nd.tan, lambda s: uniform(s, -1.0, 1.0)),
    "sinh": (nd.sinh, lambda s: uniform(s)),
    "cosh": (nd.cosh, lambda s: uniform(s)),
    "arcsin": (nd.arcsin, lambda s: uniform(s, -0.6, 0.6)),
    "arccos": (nd.arccos, lambda s: uniform(s, -0.6, 0.6)),
    "arctan": (nd.arctan, lambda s: uniform(s, -2.0, 2.0)),
    "arcsinh": (nd.arcsinh, lambda s: uniform(s, -2.0, 2.0)),
    "arccosh": (nd.arccosh, lambda s: uniform(s, 1.5, 3.0)),
    "arctanh": (nd.arctanh, lambda s: uniform(s, -0.6, 0.6)),
    "abs": (nd.abs, lambda s: away_from_zero(s)),
    "relu": (nd.relu, lambda s: away_from_zero(s)),
    "softsign": (nd.softsign, lambda s: away_from_zero(s)),
    "negative": (nd.negative, lambda s: uniform(s)),
    "degrees": (nd.degrees, lambda s: uniform(s)),
    "radians": (nd.radians, lambda s: uniform(s)),
    "method_exp": (lambda a: a.exp(), lambda s: uniform(s)),
    "unary_minus": (lambda a: -a, lambda s: uniform(s)),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name):
    func, sample = UNARY[name]
    check_first_and_second(func, sample((3, 4)))


# ----------------------------------------------------------------------------------------------
# binary elementwise with broadcasting


def _distinct(n):
    """``n`` values in random order, any two at least 0.3 apart (no ties for max/min)."""
    return np.random.permutation(n) * 0.4 - 0.2 * n + uniform((n,), 0.0, 0.1)


BINARY = {
    "add": (lambda a, b: a + b, "any"),
    "sub": (lambda a, b: a - b, "any"),
    "mul": (lambda a, b: a * b, "any"),
    "div": (lambda a, b: a / b, "nonzero_b"),
    "pow": (lambda a, b: a ** b, "positive_a"),
    "power": (nd.power, "positive_a"),
    "maximum": (nd.maximum, "tie_free"),
    "minimum": (nd.minimum, "tie_free"),
    "hypot": (nd.broadcast_hypot, "nonzero_b"),
    "broadcast_mul": (nd.broadcast_mul, "any"),
}
SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1), (1, 3)), ((3,), (2, 3))]


def _binary_inputs(kind, shape_a, shape_b):
    if kind == "tie_free":
        size_a = int(np.prod(shape_a))
        values = _distinct(size_a + int(np.prod(shape_b)))
        return values[:size_a].reshape(shape_a), values[size_a:].reshape(shape_b)
    a = uniform(shape_a, 0.5, 2.0) if kind == "positive_a" else uniform(shape_a, -1.5, 1.5)
    b = away_from_zero(shape_b, 0.5, 1.5) if kind == "nonzero_b" else uniform(shape_b, -1.5, 1.5)
    return a, b


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_broadcasting(name, shapes):
    func, kind = BINARY[name]
    a, b = _binary_inputs(kind, *shapes)
    check_first_and_second(func, a, b)


def test_tie_free_inputs_have_no_ties():
    for shapes in SHAPES:
        a, b = _binary_inputs("tie_free", *shapes)
        assert np.abs(a[..., None] - b.reshape(-1)).min() >= 0.3 - 1e-12


# ----------------------------------------------------------------------------------------------
# scalar forms

SCALAR = {
    "x*2": (lambda a: a * 2, uniform),
    "2*x": (lambda a: 2 * a, uniform),
    "x+1": (lambda a: a + 1, uniform),
    "1-x": (lambda a: 1 - a, uniform),
    "x-2": (lambda a: a - 2, uniform),
    "x/4": (lambda a: a / 4, uniform),
    "2/x": (lambda a: 2 / a, lambda s: away_from_zero(s, 0.6, 2.0)),
    "x**3": (lambda a: a ** 3, lambda s: uniform(s, -1.5, 1.5)),
    "x**0.5": (lambda a: a ** 0.5, lambda s: uniform(s, 0.5, 2.0)),
    "x**-2": (lambda a: a ** -2, lambda s: away_from_zero(s, 0.6, 2.0)),
    "3**x": (lambda a: 3 ** a, uniform),
    "maximum(x,0.2)": (lambda a: nd.maximum(a, 0.2), lambda s: 0.2 + away_from_zero(s)),
    "minimum(x,0.2)": (lambda a: nd.minimum(a, 0.2), lambda s: 0.2 + away_from_zero(s)),
}


@pytest.mark.parametrize("name", list(SCALAR))
def test_scalar_forms(name):
    func, sample = SCALAR[name]
    check_first_and_second(func, sample((2, 3)))


# ----------------------------------------------------------------------------------------------
# reductions

REDUCTIONS = [
    ("sum", {}), ("sum", {"axis": 0}), ("sum", {"axis": (0, 2), "keepdims": True}),
    ("mean", {}), ("mean", {"axis": 1}), ("mean", {"axis": -1, "keepdims": True}),
    ("prod", {}), ("prod", {"axis": 1}), ("prod", {"axis": 0, "keepdims": True}),
    ("max", {}), ("max", {"axis": 2}), ("max", {"axis": (0, 1), "keepdims": True}),
    ("min", {}), ("min", {"axis": 0}), ("min", {"axis": 1, "keepdims": True}),
]


@pytest.mark.parametrize(("name", "kwargs"), REDUCTIONS, ids=lambda v: str(v))
def test_reductions(name, kwargs):
    op = getattr(nd, name)
    if name == "prod":
        x = away_from_zero((2, 3, 2), 0.6, 1.4)
    else:  # distinct values: max/min have no ties
        x = _distinct(12).reshape(2, 3, 2)
    check_first_and_second(lambda a: op(a, **kwargs), x)


def test_squared_norm_and_reduction_composition():
    check_first_and_second(lambda a: nd.sum(a * a, axis=1) / nd.mean(nd.exp(a)),
                           uniform((3, 4)))


# ----------------------------------------------------------------------------------------------
# dot and batch_dot

DOTS = [
    ("dot", (3, 4), (4, 2), {}),
    ("dot", (4, 3), (4, 2), {"transpose_a": True}),
    ("dot", (3, 4), (2, 4), {"transpose_b": True}),
    ("dot", (4, 3), (2, 4), {"transpose_a": True, "transpose_b": True}),
    ("dot", (4,), (4,), {}),
    ("dot", (3, 4), (4,), {}),
    ("batch_dot", (2, 3, 4), (2, 4, 5), {}),
    ("batch_dot", (2, 4, 3), (2, 4, 5), {"transpose_a": True}),
    ("batch_dot", (2, 3, 4), (2, 5, 4), {"transpose_b": True}),
]


@pytest.mark.parametrize(("name", "sa", "sb", "kwargs"), DOTS, ids=lambda v: str(v))
def test_dot(name, sa, sb, kwargs):
    op = getattr(nd, name)
    check_first_and_second(lambda a, b: op(a, b, **kwargs), uniform(sa), uniform(sb))


def test_dot_inside_a_nonlinear_function():
    w = nd.array(uniform((4, 3)), dtype=F64)
    check_first_and_second(lambda a: nd.sigmoid(nd.dot(a, w)) * a.sum(axis=1, keepdims=True),
                           uniform((2, 4)))
    check_double_backward(lambda a: nd.tanh(nd.dot(a, w)), uniform((2, 4)), uniform((2, 3)),
                          uniform((2, 4)), params=w, params_grad_grad=uniform((4, 3)))


# ----------------------------------------------------------------------------------------------
# shape ops and indexing

SHAPE_OPS = {
    "reshape": lambda a: nd.reshape(a, shape=(6, 4)),
    "reshape_method": lambda a: a.reshape((4, -1)),
    "transpose": lambda a: nd.transpose(a),
    "transpose_axes": lambda a: nd.transpose(a, axes=(1, 2, 0)),
    "T": lambda a: a.reshape((6, 4)).T,
    "expand_dims": lambda a: nd.expand_dims(a, axis=1),
    "broadcast_to": lambda a: nd.broadcast_to(a[0:1], shape=(5, 3, 4)),
    "flatten": lambda a: nd.flatten(a),
    "squeeze": lambda a: nd.squeeze(nd.expand_dims(a, axis=0)),
}


@pytest.mark.parametrize("name", list(SHAPE_OPS))
def test_shape_ops(name):
    func = SHAPE_OPS[name]
    check_first_and_second(lambda a: func(a) * func(a), uniform((2, 3, 4)))
    check_first_and_second(func, uniform((2, 3, 4)))


INDEXING = {
    "x[1:3]": lambda a: a[1:3],
    "x[:, 0]": lambda a: a[:, 0],
    "x[[0, 2]]": lambda a: a[[0, 2]],
    "x[[0, 0, 3]] (repeats)": lambda a: a[[0, 0, 3]],
    "x[1]": lambda a: a[1],
    "x[2, 1]": lambda a: a[2, 1],
    "take": lambda a: nd.take(a, nd.array([3, 1, 1], dtype="int32")),
    "slice_axis": lambda a: nd.slice_axis(a, axis=1, begin=1, end=3),
}


@pytest.mark.parametrize("name", list(INDEXING))
def test_indexing(name):
    func = INDEXING[name]
    check_first_and_second(lambda a: func(a) * func(a), uniform((4, 3)))
    check_first_and_second(func, uniform((4, 3)))


def test_take_with_integer_index_input():
    idx = np.array([[0, 2], [2, 2]], dtype=np.int32)
    check_first_and_second(lambda a, i: nd.take(nd.sin(a), i), uniform((3, 2)), idx)


# ----------------------------------------------------------------------------------------------
# third order


def first_derivative(func, n_inputs):
    """``g(*xs, gy) = autograd.grad(func(*xs), xs, head_grads=gy, create_graph=True)``.

    Checking ``g`` to second order checks ``func`` to third order. The checkers pass ``g``
    arrays that are already variables (when recording the analytic pass: they must stay the
    same leaves) or fresh constants (numeric passes), which ``g`` marks itself.
    """

    def g(*args):
        xs, gy = list(args[:n_inputs]), args[n_inputs]
        for x in xs:
            if x.grad is None:
                x.attach_grad()
        with autograd.record():
            y = func(*xs)
        return tuple(autograd.grad(y, xs, head_grads=gy, create_graph=True))

    return g


THIRD_ORDER = {
    "exp": (nd.exp, [(3,)]),
    "sin": (nd.sin, [(3,)]),
    "tanh": (nd.tanh, [(2, 2)]),
    "x*y*y": (lambda x, y: x * y * y, [(3,), (3,)]),
    "dot": (nd.dot, [(2, 3), (3, 2)]),
    "tanh(dot)": (lambda a, b: nd.tanh(nd.dot(a, b)), [(2, 3), (3, 2)]),
    "sum of squares": (lambda x: (x * x).sum(), [(4,)]),
    "sum of cubes": (lambda x: (x * x * x).sum(), [(4,)]),
}


@pytest.mark.parametrize("name", list(THIRD_ORDER))
def test_third_order(name):
    func, shapes = THIRD_ORDER[name]
    xs = [uniform(s) for s in shapes]
    y = outputs_of(func, xs)[0]
    gy = away_from_zero(y.shape, 0.5, 1.5)
    g = first_derivative(func, len(xs))
    # g's inputs are xs and gy, its outputs the gradients w.r.t. xs.
    check_first_and_second(g, *xs, gy)


def _nested_grads(func, x, order):
    """The ``order``-th derivative of the elementwise ``func`` at ``x`` (nested autograd.grad)."""
    v = nd.array(x, dtype=F64)
    v.attach_grad()
    with autograd.record():
        d = func(v)
        for _ in range(order):
            (d,) = autograd.grad(d, [v], create_graph=True)
    return d.asnumpy()


@pytest.mark.parametrize(("name", "func", "third"), [
    ("exp", nd.exp, np.exp),
    ("sin", nd.sin, lambda x: -np.cos(x)),
    ("cos", nd.cos, np.sin),
    ("tanh", nd.tanh, lambda x: (1 - np.tanh(x) ** 2) * (6 * np.tanh(x) ** 2 - 2)),
    ("log", nd.log, lambda x: 2 / x ** 3),
    ("x**4", lambda a: a ** 4, lambda x: 24 * x),
    ("sigmoid", nd.sigmoid,
     lambda x: (lambda s: s * (1 - s) * (1 - 6 * s + 6 * s * s))(1 / (1 + np.exp(-x)))),
])
def test_third_derivative_closed_forms(name, func, third):
    x = uniform((5,), 0.5, 1.5)
    np.testing.assert_allclose(_nested_grads(func, x, 3), third(x), rtol=1e-9, atol=1e-12)
