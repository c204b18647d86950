"""Arithmetic, comparisons, in-place operators, reductions, dot and fluent methods vs NumPy."""

import inspect
import operator

import numpy as np
import pytest
from conftest import check
from ferrograd import nd

DTYPES = ["float32", "float64", "int32"]


def _int_semantics(op, a, b):
    """NumPy's result with MXNet's integer rules: ``/`` truncates, x/0 and x%0 give 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if op is operator.truediv:
            q = np.trunc(np.true_divide(a, b))
        elif op is operator.floordiv:
            q = np.floor_divide(a, b)
        else:
            q = op(a, b)
    return np.where(np.broadcast_to(b, np.broadcast(a, b).shape) == 0, 0, q) \
        if op in (operator.truediv, operator.floordiv, operator.mod) else q


ARITH = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
         operator.mod, operator.pow]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ARITH, ids=lambda o: o.__name__)
def test_array_array_broadcasting(op, dtype):
    a = np.array([[1, -2, 3], [4, 5, -6]], dtype=dtype)
    b = np.array([2, 3, -1], dtype=dtype) if op is not operator.pow else np.array([2, 1, 3],
                                                                                   dtype=dtype)
    want = _int_semantics(op, a, b) if dtype == "int32" else op(a, b)
    check(op(nd.array(a, dtype=dtype), nd.array(b, dtype=dtype)), want, dtype, rtol=1e-5)
    # Broadcasting both ways: (2,1) against (3,).
    c = a[:, :1]
    want = _int_semantics(op, c, b) if dtype == "int32" else op(c, b)
    check(op(nd.array(c, dtype=dtype), nd.array(b, dtype=dtype)), want, dtype, rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ARITH, ids=lambda o: o.__name__)
def test_array_scalar_both_sides(op, dtype):
    a = np.array([1, 2, 3, 7], dtype=dtype)
    x = nd.array(a, dtype=dtype)
    s = 2
    fwd = _int_semantics(op, a, np.array(s, dtype)) if dtype == "int32" else op(a, np.array(s,
                                                                                         dtype))
    check(op(x, s), fwd, dtype, rtol=1e-5)
    rev = _int_semantics(op, np.array(s, dtype), a) if dtype == "int32" else op(np.array(s, dtype),
                                                                                 a)
    check(op(s, x), rev, dtype, rtol=1e-5)


def test_scalar_ops_keep_array_dtype_and_int_division_truncates():
    check(nd.array([1, 2], dtype="int32") / 2, [0, 1], "int32")
    check(nd.array([-7, 7], dtype="int32") / 2, [-3, 3], "int32")
    check(nd.array([-7, 7], dtype="int32") // 2, [-4, 3], "int32")
    check(nd.array([-7, 7], dtype="int32") % 3, [2, 1], "int32")
    check(nd.array([-7.0, 7.0]) % -3, [-1, -2], "float32")
    check(nd.array([5, 3], dtype="int32") / nd.array([0, 2], dtype="int32"), [0, 1], "int32")
    check(nd.array([5, 3], dtype="int32") % 0, [0, 0], "int32")
    check(nd.array([1.0], dtype="float64") + 0.1, [1.1], "float64", rtol=1e-15)


def test_mixed_dtype_promotion():
    i = nd.array([1, 2], dtype="int32")
    f = nd.array([0.5, 0.5])
    check(i + f, [1.5, 2.5], "float32")
    check(i + nd.array([1, 1], dtype="int64"), [2, 3], "int64")
    check(f * nd.array([2, 2], dtype="float64"), [1, 1], "float64")


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_minus_abs_pos(dtype):
    a = np.array([[-1, 2], [0, -3]], dtype=dtype)
    x = nd.array(a, dtype=dtype)
    check(-x, -a, dtype)
    check(abs(x), np.abs(a), dtype)
    check(+x, a, dtype)


CMP = [operator.eq, operator.ne, operator.gt, operator.ge, operator.lt, operator.le]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", CMP, ids=lambda o: o.__name__)
def test_comparisons_give_0_1_in_the_input_dtype(op, dtype):
    a = np.array([[1, 2, 3], [3, 2, 1]], dtype=dtype)
    b = np.array([2, 2, 2], dtype=dtype)
    x, y = nd.array(a, dtype=dtype), nd.array(b, dtype=dtype)
    check(op(x, y), op(a, b).astype(dtype), dtype)
    check(op(x, 2), op(a, 2).astype(dtype), dtype)
    check(op(2, x), op(2, a).astype(dtype), dtype)  # reflected: 2 > x is x < 2


INPLACE = [(operator.iadd, operator.add), (operator.isub, operator.sub),
           (operator.imul, operator.mul), (operator.itruediv, operator.truediv),
           (operator.ifloordiv, operator.floordiv), (operator.imod, operator.mod),
           (operator.ipow, operator.pow)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("iop,op", INPLACE, ids=lambda o: o.__name__)
def test_inplace_operators(iop, op, dtype):
    a = np.array([[4, 8, 12], [16, 20, 24]], dtype=dtype)
    for other in (3, np.array([1, 2, 3], dtype=dtype)):
        x = nd.array(a, dtype=dtype)
        alias = x
        rhs = nd.array(other, dtype=dtype) if isinstance(other, np.ndarray) else other
        x = iop(x, rhs)
        assert x is alias  # updated in place, same object
        o = np.asarray(other, dtype)
        want = _int_semantics(op, a, o) if dtype == "int32" else op(a, o)
        check(alias, want, dtype, rtol=1e-5)


def test_inplace_writes_through_views():
    x = nd.arange(12).reshape((3, 4))
    row = x[1]
    row += 100
    check(x[1], [104, 105, 106, 107])
    v = x[1:3]
    v *= 2
    check(x, [[0, 1, 2, 3], [208, 210, 212, 214], [16, 18, 20, 22]])
    r = x.reshape((12,))
    r -= 1
    assert x[0, 0].asscalar() == -1
    x[0] += 5  # getitem, iadd on the view, setitem back
    check(x[0], [4, 5, 6, 7])


@pytest.mark.parametrize("name,npf", [("sum", np.sum), ("mean", np.mean), ("prod", np.prod),
                                      ("max", np.max), ("min", np.min), ("nansum", np.nansum),
                                      ("nanprod", np.nanprod)])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, npf, axis, keepdims):
    a = np.random.uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    x = nd.array(a)
    got = getattr(nd, name)(x, axis=axis, keepdims=keepdims)
    want = npf(a, axis=axis, keepdims=keepdims)
    if axis is None and not keepdims:
        want = np.reshape(want, (1,))  # legacy full reduction: shape (1,)
    check(got, want, "float32", rtol=1e-5)
    check(getattr(x, name)(axis=axis, keepdims=keepdims), want, rtol=1e-5)


def test_reduction_exclude_and_int_and_norm():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = nd.array(a)
    check(x.sum(axis=1, exclude=True), a.sum(axis=(0, 2)))
    check(nd.mean(x, axis=(0, 2), exclude=True, keepdims=True), a.mean(axis=1, keepdims=True))
    check(nd.array(a, dtype="int32").sum(axis=0), a.sum(axis=0), "int32")
    check(x.norm(), [np.linalg.norm(a)], rtol=1e-5)
    check(x.norm(axis=1), np.linalg.norm(a, axis=1), rtol=1e-5)
    check(x.norm(ord=1, axis=2, keepdims=True), np.abs(a).sum(axis=2, keepdims=True))
    check(x.argmax(axis=1), a.argmax(axis=1), "float32")
    check(x.argmin(axis=-1), a.argmin(axis=-1), "float32")
    check(nd.argmax(x), [a.argmax()], "float32")


def test_nan_and_inf_propagate_like_numpy():
    a = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], dtype=np.float32)
    x = nd.array(a)
    with np.errstate(all="ignore"):
        check(x + 1, a + 1)
        check(x * 0, a * 0)
        check(x / 0, a / np.float32(0))
        check(x.exp(), np.exp(a))
        check(nd.array([0.0, -1.0]).log(), np.log(np.array([0.0, -1.0], np.float32)))
        check(nd.maximum(x, nd.ones(5)), np.maximum(a, 1))
        check(nd.minimum(nd.ones(5), x), np.minimum(1, a))
        check(x.nansum(), [np.nansum(a)])
        check(nd.array([1.0, np.inf]).sum(), [np.inf])
        check(nd.array([np.inf, -np.inf]).sum(), [np.nan])
    assert np.isnan(x.sum().asscalar()) and np.isnan(x.max().asscalar())
    assert np.isnan(x.min().asscalar()) and np.isnan(x.mean().asscalar())


def test_dot_and_batch_dot_transpose_flags():
    a = np.random.randn(3, 4).astype(np.float32)
    b = np.random.randn(4, 5).astype(np.float32)
    x, y = nd.array(a), nd.array(b)
    check(nd.dot(x, y), a @ b, rtol=1e-5, atol=1e-5)
    check(x @ y, a @ b, rtol=1e-5, atol=1e-5)
    check(nd.dot(nd.array(a.T), y, transpose_a=True), a @ b, rtol=1e-5, atol=1e-5)
    check(nd.dot(x, nd.array(b.T), transpose_b=True), a @ b, rtol=1e-5, atol=1e-5)
    check(nd.dot(nd.array(a.T), nd.array(b.T), transpose_a=True, transpose_b=True), a @ b,
          rtol=1e-5, atol=1e-5)
    check(nd.dot(x, nd.array(b[:, 0])), a @ b[:, 0], rtol=1e-5, atol=1e-5)
    p = np.random.randn(2, 3, 4)
    q = np.random.randn(2, 4, 5)
    check(nd.batch_dot(nd.array(p, dtype="float64"), nd.array(q, dtype="float64")), p @ q,
          "float64", rtol=1e-12)
    pt, qt = p.transpose(0, 2, 1), q.transpose(0, 2, 1)
    check(nd.batch_dot(nd.array(pt), nd.array(qt), transpose_a=True, transpose_b=True), p @ q,
          rtol=1e-4, atol=1e-5)


UNARY = {
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v), "cbrt": np.cbrt,
    "square": np.square, "reciprocal": np.reciprocal, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "arcsin": lambda v: np.arcsin(v / 3), "arccos": lambda v: np.arccos(v / 3),
    "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "arcsinh": np.arcsinh, "arccosh": lambda v: np.arccosh(v + 1),
    "arctanh": lambda v: np.arctanh(v / 3), "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    "relu": lambda v: np.maximum(v, 0), "softsign": lambda v: v / (1 + np.abs(v)),
    "sign": np.sign, "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "rint": np.rint,
    "fix": np.fix, "trunc": np.trunc, "degrees": np.degrees, "radians": np.radians,
}
_SHIFTED = {"arcsin": lambda v: v / 3, "arccos": lambda v: v / 3, "arctanh": lambda v: v / 3,
            "arccosh": lambda v: v + 1}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_fluent_unary_methods(name):
    a = np.array([0.3, 0.5, 1.2, 2.5], dtype=np.float64)
    x = nd.array(_SHIFTED.get(name, lambda v: v)(a), dtype="float64")
    check(getattr(x, name)(), UNARY[name](a), "float64", rtol=1e-12, atol=1e-12)
    check(getattr(nd, name)(x), UNARY[name](a), "float64", rtol=1e-12, atol=1e-12)


def test_round_is_half_away_from_zero():
    x = nd.array([-2.5, -0.5, 0.5, 1.5, 2.5])
    check(x.round(), [-3, -1, 1, 2, 3])
    # MXNet's rint sends halves down (its documentation: 1.5 -> 1), unlike NumPy's.
    check(x.rint(), [-3, -1, 0, 1, 2])


def test_fluent_shape_methods_and_signatures():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = nd.array(a)
    check(x.take(nd.array([2, 0])), a[[2, 0]])
    check(x.take(nd.array([[1, 5]], dtype="int32"), axis=1, mode="wrap"), a[:, [[1, 1]]])
    check(x.slice(begin=(1, None), end=(None, 3)), a[1:, :3])
    check(x.slice((0, 1), (3, 4), (2, 2)), a[0:3:2, 1:4:2])
    check(x.slice_axis(axis=1, begin=1, end=3), a[:, 1:3])
    check(x.slice_axis(0, -2, None), a[-2:])
    check(nd.array([[1], [2]]).broadcast_to((2, 3)), [[1, 1, 1], [2, 2, 2]])
    assert x.as_nd_ndarray() is x
    sig = inspect.signature(nd.NDArray.sum)
    assert [(p.name, p.default) for p in sig.parameters.values()] == [
        ("self", inspect.Parameter.empty), ("axis", None), ("keepdims", False),
        ("exclude", False)]
    take = inspect.signature(nd.NDArray.take).parameters
    assert list(take) == ["self", "indices", "axis", "mode"] and take["mode"].default == "clip"
    check(x.sum(1, True), a.sum(1, keepdims=True))  # positional, in the op's order


def test_nd_binary_helpers_accept_scalars():
    x = nd.array([1, 5])
    check(nd.add(x, 1), [2, 6])
    check(nd.subtract(10, x), [9, 5])
    check(nd.multiply(x, x), [1, 25])
    check(nd.divide(x, 2), [0.5, 2.5])
    check(nd.modulo(x, 3), [1, 2])
    check(nd.power(2, x), [2, 32])
    check(nd.maximum(x, 3), [3, 5])
    check(nd.minimum(3, x), [1, 3])
    check(nd.greater(x, 2), [0, 1])
    check(nd.lesser_equal(x, nd.array([1, 1])), [1, 0])
    assert nd.add(1, 2) == 3


def test_elemwise_and_broadcast_ops_and_out():
    a, b = np.arange(6.0).reshape(2, 3), np.ones(3)
    check(nd.elemwise_add(nd.array(a), nd.array(a)), 2 * a)
    check(nd.broadcast_mul(nd.array(a), nd.array(b) * 3), a * 3)
    out = nd.zeros((2, 3))
    r = nd.broadcast_add(nd.array(a), nd.array(b), out=out)
    assert r is out
    check(out, a + 1)


def test_gather_scatter_ops():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[1, 0, -1], [2, 0, 1]])
    check(nd.gather_nd(nd.array(a), nd.array(idx)), a[idx[0], idx[1]])
    data = nd.array([1.0, 2.0, 3.0])
    i = nd.array([[0, 3, 0]], dtype="int64")
    check(nd.scatter_nd(data, i, shape=(5,)), [3, 0, 0, 2, 0])
    check(nd._backward_gather_nd(data, i, shape=(5,)), [4, 0, 0, 2, 0])
