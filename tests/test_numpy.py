"""Tests of ``ferrograd.np`` / ``ferrograd.npx`` (MXNet's ``mx.np`` / ``mx.npx``).

Values and dtypes are checked against official NumPy (``onp``); MXNet's deliberate differences
(float32 default dtype, float32 from integer division) are asserted explicitly.
"""

import pickle

import ferrograd as mx
import numpy as onp
import pytest
from ferrograd import autograd, np, npx
from ferrograd.base import MXNetError


@pytest.fixture(autouse=True)
def _np_semantics():
    """NumPy semantics on for each test; both flags off afterwards (other files use nd shapes)."""
    npx.set_np()
    yield
    npx.reset_np()


def check(x, expected, dtype=None, rtol=1e-5, atol=1e-6):
    """``x`` is an np array equal to ``expected`` (shape, values and, when given, dtype)."""
    assert isinstance(x, np.ndarray), type(x)
    want = onp.asarray(expected)
    got = x.asnumpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    if dtype is not None:
        assert x.dtype == onp.dtype(dtype), (x.dtype, dtype)
    onp.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


A = onp.array([[0.2, -1.5, 3.0], [4.25, 0.5, -2.0]], dtype=onp.float32)

# --- npx state -------------------------------------------------------------------------------


def test_set_np_reset_np_state():
    npx.reset_np()
    assert (npx.is_np_shape(), npx.is_np_array()) == (False, False)
    npx.set_np()
    assert (npx.is_np_shape(), npx.is_np_array()) == (True, True)
    npx.set_np(shape=True, array=False)
    assert (npx.is_np_shape(), npx.is_np_array()) == (True, False)
    npx.reset_np()
    assert (npx.is_np_shape(), npx.is_np_array()) == (False, False)


def test_set_np_array_needs_shape():
    npx.reset_np()
    with pytest.raises(ValueError) as e:
        npx.set_np(shape=False, array=True)
    assert str(e.value) == "NumPy Shape semantics is required in using NumPy array semantics."
    assert (npx.is_np_shape(), npx.is_np_array()) == (False, False)


def test_set_np_has_no_dtype_argument():
    with pytest.raises(TypeError):
        npx.set_np(dtype=True)


def test_np_shape_flag_drives_zero_dim_shapes():
    assert np.ones(()).shape == ()
    assert mx.nd.ones(()).shape == ()  # global: legacy nd sees it too (as in MXNet)
    npx.reset_np()
    with pytest.raises(MXNetError):
        np.ones(())
    assert mx.nd.ones((3,))[0].shape == (1,)


# --- creation and dtype rules ----------------------------------------------------------------


@pytest.mark.parametrize("src, dtype", [
    ([[1, 2], [3, 4]], "float32"),
    (3, "float32"),
    ([True, False], "float32"),
    (onp.array([1, 2], dtype=onp.int64), "int64"),
    (onp.array([1.5, 2], dtype=onp.float64), "float64"),
    (onp.array([1, 2], dtype=onp.int32), "int32"),
    (onp.array([True, False]), "bool"),
    (onp.array([1, 2], dtype=onp.uint8), "uint8"),
])
def test_array_dtype_rules(src, dtype):
    x = np.array(src)
    check(x, onp.asarray(src).astype(dtype), dtype=dtype)


def test_array_from_ferrograd_arrays_keeps_dtype_and_copies():
    nd_src = mx.nd.array([1, 2], dtype="int32")
    check(np.array(nd_src), [1, 2], dtype="int32")
    x = np.array(onp.array([1, 2, 3]))
    y = np.array(x)
    y[0] = 7
    check(x, [1, 2, 3], dtype="int64")
    check(np.array([1, 2], dtype="float64"), [1, 2], dtype="float64")
    check(np.array(x, dtype=np.float32), [1, 2, 3], dtype="float32")
    assert np.asarray(x) is x
    check(np.asarray([1, 2]), [1, 2], dtype="float32")


def test_array_bad_input():
    with pytest.raises(ValueError):
        np.array([[1, 2], [3]])
    with pytest.raises(TypeError):
        np.array(onp.array([1 + 2j]))


def test_creation_functions_match_numpy():
    check(np.zeros((2, 3)), onp.zeros((2, 3)), dtype="float32")
    check(np.zeros(4, dtype="int32"), onp.zeros(4), dtype="int32")
    check(np.ones((2, 1)), onp.ones((2, 1)), dtype="float32")
    check(np.empty((0, 3)), onp.empty((0, 3)), dtype="float32")
    check(np.full((2, 2), 7), onp.full((2, 2), 7.0), dtype="float32")
    check(np.full(3, 2, dtype="int64"), [2, 2, 2], dtype="int64")
    check(np.full((2, 3), np.array([1, 2, 3])), onp.full((2, 3), [1, 2, 3]), dtype="float32")
    check(np.arange(5), onp.arange(5), dtype="float32")
    check(np.arange(1, 2, 0.25), onp.arange(1, 2, 0.25), dtype="float32")
    check(np.arange(5, 0, -2, dtype="int32"), onp.arange(5, 0, -2), dtype="int32")
    check(np.arange(3, 3), onp.arange(3, 3), dtype="float32")  # empty range: empty, as in NumPy
    check(np.linspace(0, 1, 5), onp.linspace(0, 1, 5), dtype="float32")
    check(np.linspace(0, 1, 4, endpoint=False), onp.linspace(0, 1, 4, endpoint=False))
    vals, step = np.linspace(2, 3, 5, retstep=True)
    assert step == onp.linspace(2, 3, 5, retstep=True)[1]
    check(vals, onp.linspace(2, 3, 5))
    check(np.eye(3), onp.eye(3), dtype="float32")
    check(np.eye(2, 4, k=1), onp.eye(2, 4, k=1))
    check(np.eye(3, 0), onp.eye(3, 0))
    check(np.identity(2, dtype="int32"), onp.identity(2), dtype="int32")


def test_like_functions_match_numpy():
    x = np.array(onp.arange(6, dtype=onp.int32).reshape(2, 3))
    check(np.zeros_like(x), onp.zeros((2, 3)), dtype="int32")
    check(np.ones_like(x, dtype="float64"), onp.ones((2, 3)), dtype="float64")
    check(np.full_like(x, 4), onp.full((2, 3), 4), dtype="int32")
    check(np.empty_like(x), onp.zeros((2, 3)), dtype="int32")


def test_creation_bad_inputs():
    with pytest.raises(ValueError):
        np.zeros(-1)
    with pytest.raises(ValueError):
        np.arange(0, 3, 0)
    with pytest.raises(ValueError):
        np.linspace(0, 1, -2)


# --- ndarray behaviour -----------------------------------------------------------------------


def test_ndarray_is_nd_subclass_and_dtype_instance():
    x = np.array([1, 2])
    assert isinstance(x, mx.nd.NDArray) and type(x) is np.ndarray
    assert isinstance(x.dtype, onp.dtype) and x.dtype == onp.float32
    assert x.as_nd_ndarray().dtype is onp.float32  # legacy: a type class
    assert x.ctx == mx.cpu() and x.context == mx.cpu()


@pytest.mark.parametrize("x, text", [
    (lambda: np.array([1, 2]), "array([1., 2.])"),
    (lambda: np.array([[1, 2], [3, 4]]), "array([[1., 2.],\n       [3., 4.]])"),
    (lambda: np.array(3.5), "array(3.5)"),
    (lambda: np.array(onp.array([1, 2])), "array([1, 2], dtype=int64)"),
    (lambda: np.array([1, 2], dtype="int32"), "array([1, 2], dtype=int32)"),
    (lambda: np.array([1, 2], dtype="float64"), "array([1., 2.], dtype=float64)"),
    (lambda: np.array([1, 2]) > 1, "array([False,  True])"),
])
def test_repr_like_numpy(x, text):
    assert repr(x()) == text


def test_str_like_numpy():
    assert str(np.array([1, 2])) == "[1. 2.]"


def test_comparisons_return_bool():
    a, b = np.array(A), np.array(A[::-1].copy())
    for got, want in [(a == b, A == A[::-1]), (a != b, A != A[::-1]), (a < b, A < A[::-1]),
                      (a <= b, A <= A[::-1]), (a > 0.5, A > 0.5), (a >= 0.5, A >= 0.5),
                      (0.5 < a, A > 0.5), (a == 0.5, A == 0.5)]:
        check(got, want, dtype="bool")
    xi = np.array([1, 2, 3], dtype="int32")
    check(xi > 1.5, [False, True, True], dtype="bool")


def test_integer_true_division_gives_float():
    xi = np.array([1, 2], dtype="int32")
    check(xi / 2, [0.5, 1.0], dtype="float32")
    check(xi / np.array([4, 4], dtype="int64"), [0.25, 0.5], dtype="float32")
    check(2 / xi, [2.0, 1.0], dtype="float32")
    check(np.divide(xi, 4), [0.25, 0.5], dtype="float32")
    check(xi // 2, [0, 1], dtype="int32")
    check(xi * 2, [2, 4], dtype="int32")
    check(xi + 0.5, [1.5, 2.5], dtype="float32")
    check(0.5 * xi, [0.5, 1.0], dtype="float32")


def test_arithmetic_returns_np_arrays():
    a = np.array(A)
    for got, want in [(a + 1, A + 1), (1 - a, 1 - A), (a * a, A * A), (a / 2, A / 2),
                      (a ** 2, A ** 2), (2 ** a, 2 ** A), (-a, -A), (abs(a), abs(A)),
                      (a % 2, A % 2), (a // 2, A // 2), (+a, A), (a @ a.T, A @ A.T),
                      (a + np.array([1, 2, 3]), A + [1, 2, 3])]:
        check(got, want, dtype="float32")


def test_mixing_np_and_nd_raises_type_error():
    a, b = np.array([1, 2]), mx.nd.array([1, 2])
    msg = "type <class 'ferrograd.ndarray.NDArray'> not supported"
    for fn in [lambda: a + b, lambda: b + a, lambda: a * b, lambda: b - a, lambda: a < b,
               lambda: np.add(a, b), lambda: np.maximum(b, a), lambda: np.exp(b),
               lambda: np.dot(a, b), lambda: npx.relu(b), lambda: a.__iadd__(b)]:
        with pytest.raises(TypeError) as e:
            fn()
        assert str(e.value) == msg
    with pytest.raises(TypeError):
        a[0] = b[0]


def test_scalar_indexing_gives_zero_dim():
    x = np.array([1, 2, 3])
    assert x[0].shape == () and type(x[0]) is np.ndarray
    assert x[0].item() == 1.0
    m = np.array(A)
    check(m[1], A[1])
    check(m[:, 1:], A[:, 1:])
    check(m[m > 0.4], A[A > 0.4])
    check(m[None, ..., 0], A[None, ..., 0])


def test_reduction_and_item_shapes():
    x = np.array([[1, 2], [3, 4]])
    assert x.sum().shape == () and x.sum().item() == 10.0
    assert np.sum(x).shape == onp.sum(onp.ones((2, 2))).shape == ()
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert isinstance(x.asnumpy(), onp.ndarray)


def test_methods_return_np_arrays():
    x = np.array(A)
    for y, want in [(x.T, A.T), (x.transpose(), A.T), (x.astype("float64"), A),
                    (x.copy(), A), (x.flatten(), A.ravel()), (x.ravel(), A.ravel()),
                    (x.reshape(3, 2), A.reshape(3, 2)), (x.reshape((-1,)), A.reshape(-1)),
                    (x.exp(), onp.exp(A)), (x.expand_dims(0), A[None]),
                    (x.sum(axis=1), A.sum(axis=1)), (x.max(axis=0), A.max(axis=0)),
                    (x.mean(), A.mean()), (x.dot(x.T), A @ A.T)]:
        check(y, want)
    check(x.argmax(axis=1), A.argmax(axis=1), dtype="int64")
    assert x.astype("float64").dtype == onp.float64


def test_conversions_share_memory():
    x = np.array([1, 2, 3])
    y = x.as_nd_ndarray()
    assert type(y) is mx.nd.NDArray
    y[0] = 10
    assert x[0].item() == 10.0
    z = y.as_np_ndarray()
    assert type(z) is np.ndarray
    z[1] = 20
    assert y.asnumpy().tolist() == [10.0, 20.0, 3.0]
    assert x.as_np_ndarray() is x


def test_context_and_copyto():
    x = np.array([1, 2])
    assert x.as_in_ctx(mx.cpu()) is x and x.as_in_context(mx.cpu()) is x
    c = x.copyto(mx.cpu())
    assert type(c) is np.ndarray and c.asnumpy().tolist() == [1.0, 2.0]
    c[0] = 5
    assert x[0].item() == 1.0
    t = np.zeros(2)
    assert x.copyto(t) is t
    check(t, [1, 2])
    with pytest.raises(TypeError):
        x.copyto(mx.nd.zeros(2))


def test_pickle_round_trip():
    x = np.array(onp.arange(4).reshape(2, 2))
    y = pickle.loads(pickle.dumps(x))
    assert type(y) is np.ndarray
    check(y, onp.arange(4).reshape(2, 2), dtype="int64")


# --- functions vs NumPy ----------------------------------------------------------------------

UNARY_DOMAIN = {"arccosh": 1.5 + onp.abs(A), "arcsin": A / 5, "arccos": A / 5,
                "arctanh": A / 5, "log": onp.abs(A) + 0.1, "log2": onp.abs(A) + 0.1,
                "log10": onp.abs(A) + 0.1, "log1p": onp.abs(A), "sqrt": onp.abs(A),
                "reciprocal": A + 0.05}
NUMPY_NAME = {"fix": "fix", "reciprocal": "reciprocal"}
FLOAT_UNARY = ["exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "sin", "cos",
               "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
               "arctanh", "degrees", "radians"]
SAME_UNARY = ["abs", "absolute", "negative", "sign", "square", "floor", "ceil", "trunc", "rint",
              "fix", "reciprocal"]


@pytest.mark.parametrize("name", FLOAT_UNARY + SAME_UNARY)
def test_unary_matches_numpy(name):
    x = UNARY_DOMAIN.get(name, A)
    check(getattr(np, name)(np.array(x)), getattr(onp, name)(x), dtype="float32")


@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_float_unary_of_ints_is_float32(name):
    vals = {"arcsin": [0, 1, -1], "arccos": [0, 1, -1], "arctanh": [0, 0, 0]}
    x = onp.array(vals.get(name, [1, 2, 3]), dtype=onp.int32)
    check(getattr(np, name)(np.array(x)), getattr(onp, name)(x).astype(onp.float32),
          dtype="float32")


@pytest.mark.parametrize("name", ["abs", "negative", "sign", "square"])
def test_int_preserving_unary(name):
    x = onp.array([-2, 0, 3], dtype=onp.int32)
    check(getattr(np, name)(np.array(x)), getattr(onp, name)(x), dtype="int32")


def test_unary_out_and_array_like():
    out = np.zeros((2, 3))
    assert np.exp(np.array(A), out=out) is out
    check(out, onp.exp(A))
    check(np.sqrt([4.0, 9.0]), [2.0, 3.0], dtype="float32")


BINARY = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "mod",
          "remainder", "power", "maximum", "minimum"]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize("name", BINARY + COMPARE)
def test_binary_matches_numpy(name):
    a = onp.abs(A) + 0.5
    b = onp.array([1.5, 0.5, 3.0], dtype=onp.float32)
    dtype = "bool" if name in COMPARE else "float32"
    f, g = getattr(np, name), getattr(onp, name)
    check(f(np.array(a), np.array(b)), g(a, b), dtype=dtype)
    check(f(np.array(a), 1.5), g(a, onp.float32(1.5)), dtype=dtype)
    check(f(2.0, np.array(a)), g(onp.float32(2.0), a), dtype=dtype)


def test_maximum_minimum_with_int_arrays():
    xi = np.array([1, 5, 3], dtype="int32")
    check(np.maximum(xi, 2), [2, 5, 3], dtype="int32")
    check(np.minimum(xi, 2.5), [1, 2.5, 2.5], dtype="float32")


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "amax", "amin"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(name, axis, keepdims):
    x = onp.random.uniform(0.5, 1.5, (2, 3, 4)).astype(onp.float32)
    got = getattr(np, name)(np.array(x), axis=axis, keepdims=keepdims)
    check(got, getattr(onp, name)(x, axis=axis, keepdims=keepdims), dtype="float32")


def test_reduction_dtypes_and_edge_cases():
    xi = onp.array([[1, 2], [3, 4]], dtype=onp.int32)
    check(np.mean(np.array(xi)), 2.5, dtype="float32")
    check(np.mean(np.array(xi), axis=0), [2.0, 3.0], dtype="float32")
    check(np.sum(np.array(xi), axis=1), [3, 7], dtype="int32")
    check(np.sum(np.array(A), dtype="float64"), A.sum(dtype=onp.float64), dtype="float64")
    check(np.sum(np.array(A), axis=()), onp.sum(A, axis=()))
    out = np.zeros(3)
    assert np.sum(np.array(A), axis=0, out=out) is out
    check(out, A.sum(axis=0))
    check(np.sum([[1, 2], [3, 4]]), 10.0, dtype="float32")


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_argmax_argmin_match_numpy(name, axis):
    got = getattr(np, name)(np.array(A), axis=axis)
    check(got, getattr(onp, name)(A, axis=axis), dtype="int64")


@pytest.mark.parametrize("sa, sb", [((), (3,)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                    ((2, 3), (3, 4)), ((2, 3, 4), (4,)), ((2, 3, 4), (4, 5)),
                                    ((2, 3), (5, 3, 4)), ((2, 3, 4), (5, 4, 6))])
def test_dot_matches_numpy(sa, sb):
    a = onp.random.uniform(-1, 1, sa).astype(onp.float32)
    b = onp.random.uniform(-1, 1, sb).astype(onp.float32)
    check(np.dot(np.array(a), np.array(b)), onp.dot(a, b), dtype="float32", rtol=1e-4)


@pytest.mark.parametrize("sa, sb", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                    ((2, 3), (3, 4)), ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)),
                                    ((4,), (2, 4, 5)), ((2, 3, 4), (4,)),
                                    ((1, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2))])
def test_matmul_matches_numpy(sa, sb):
    a = onp.random.uniform(-1, 1, sa).astype(onp.float32)
    b = onp.random.uniform(-1, 1, sb).astype(onp.float32)
    check(np.matmul(np.array(a), np.array(b)), onp.matmul(a, b), dtype="float32", rtol=1e-4)


def test_matmul_bad_shapes():
    with pytest.raises(ValueError):
        np.matmul(np.array(2.0), np.ones(3))
    with pytest.raises(MXNetError):
        np.matmul(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError):
        np.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2)))


def test_shape_functions_match_numpy():
    x = onp.arange(24, dtype=onp.float32).reshape(2, 3, 4)
    a = np.array(x)
    check(np.reshape(a, (4, -1)), x.reshape(4, -1))
    check(np.reshape(a, 24), x.reshape(24))
    check(np.reshape(np.zeros((0, 3)), (3, 0)), onp.zeros((3, 0)))
    check(np.ravel(a), x.ravel())
    check(np.transpose(a), x.transpose())
    check(np.transpose(a, (1, 0, 2)), x.transpose(1, 0, 2))
    check(np.expand_dims(a, -1), onp.expand_dims(x, -1))
    check(np.squeeze(np.ones((1, 3, 1))), onp.ones(3))
    check(np.squeeze(np.ones((1, 3, 1)), axis=0), onp.ones((3, 1)))
    check(np.broadcast_to(np.array([1, 2, 3]), (2, 3)), onp.broadcast_to([1, 2, 3], (2, 3)))
    with pytest.raises(ValueError):
        np.reshape(a, (5, -1))
    with pytest.raises(ValueError):
        np.reshape(a, (-1, -1))


@pytest.mark.skipif(not hasattr(mx.nd, "concat"), reason="nd.concat not registered yet")
def test_concatenate_matches_numpy():
    x, y = A, A * 2
    check(np.concatenate([np.array(x), np.array(y)]), onp.concatenate([x, y]))
    check(np.concatenate([np.array(x), np.array(y)], axis=1), onp.concatenate([x, y], axis=1))
    check(np.concatenate([np.array(x), np.array(y)], axis=None),
          onp.concatenate([x, y], axis=None))


@pytest.mark.skipif(not hasattr(mx.nd, "stack"), reason="nd.stack not registered yet")
def test_stack_matches_numpy():
    check(np.stack([np.array(A), np.array(A * 2)], axis=1), onp.stack([A, A * 2], axis=1))


@pytest.mark.skipif(not hasattr(mx.nd, "where"), reason="nd.where not registered yet")
def test_where_matches_numpy():
    a = np.array(A)
    check(np.where(a > 0, a, np.zeros((2, 3))), onp.where(A > 0, A, 0))


@pytest.mark.skipif(not hasattr(mx.nd, "clip"), reason="nd.clip not registered yet")
def test_clip_matches_numpy():
    check(np.clip(np.array(A), -1, 1), onp.clip(A, -1, 1))
    check(np.clip(np.array(A), None, 1), onp.clip(A, None, 1))


def test_array_equiv_falls_back_to_numpy():
    a = np.array([1, 2])
    r = np.array_equiv(a, np.array([[1, 2], [1, 2]]))
    assert isinstance(r, bool | onp.bool_) and r
    assert bool(np.array_equiv(a, [1, 2])) and bool(np.array_equiv(a.asnumpy(), [1.0, 2.0]))
    assert not np.array_equiv(a, np.array([1, 3]))
    assert np.array_equal(a, [1, 2]) and not np.array_equal(a, [[1, 2], [1, 2]])


@pytest.mark.parametrize("fn, exc", [
    (lambda x: np.exp("a"), ValueError),
    (lambda x: np.reshape(x, "a"), TypeError),
    (lambda x: npx.reshape(x, (1.5,)), TypeError),
    (lambda x: np.sum(x, axis=5), IndexError),
    (lambda x: np.random.uniform(size="a"), TypeError),
    (lambda x: np.array([1, 2], dtype="int16"), TypeError),
    (lambda x: np.dot(x, x), ValueError),
    (lambda x: x.reshape(7), ValueError),
    (lambda x: np.linspace(0, 1, 3, axis=1), NotImplementedError),
])
def test_bad_inputs_raise_clear_errors(fn, exc):
    with pytest.raises(exc):
        fn(np.ones((2, 3)))


def test_dtype_aliases():
    assert np.float32 is onp.float32 and np.int64 is onp.int64 and np.pi == onp.pi
    check(np.zeros(2, dtype=np.int32), [0, 0], dtype="int32")


# --- np.random -------------------------------------------------------------------------------


def test_random_uniform_and_normal():
    np.random.seed(3)
    u = np.random.uniform(-1, 1, (2, 3))
    assert type(u) is np.ndarray and u.shape == (2, 3) and u.dtype == onp.float32
    assert onp.all(u.asnumpy() >= -1) and onp.all(u.asnumpy() < 1)
    np.random.seed(3)
    check(np.random.uniform(-1, 1, (2, 3)), u.asnumpy(), rtol=0, atol=0)
    assert np.random.uniform().shape == ()
    assert np.random.uniform(size=4, dtype="float64").dtype == onp.float64
    z = np.random.normal(2.0, 3.0, size=(20000,)).asnumpy()
    assert abs(z.mean() - 2.0) < 0.1 and abs(z.std() - 3.0) < 0.1
    v = np.random.uniform(np.array([0.0, 10.0]), np.array([1.0, 20.0]), size=(1000, 2))
    v = v.asnumpy()
    assert v.shape == (1000, 2) and v[:, 0].max() < 1 and v[:, 1].min() >= 10
    assert np.random.normal(np.zeros((2, 1)), 1.0).shape == (2, 1)
    r = np.random.randint(3, 7, size=(500,))
    assert r.dtype == onp.int64 and set(r.asnumpy().tolist()) == {3, 4, 5, 6}
    with pytest.raises(TypeError):
        np.random.uniform(mx.nd.zeros(2), 1.0)


# --- npx -------------------------------------------------------------------------------------


def test_npx_ops_match_numpy():
    a = np.array(A)
    check(npx.relu(a), onp.maximum(A, 0), dtype="float32")
    check(npx.sigmoid(a), 1 / (1 + onp.exp(-A)), dtype="float32")
    x = onp.random.uniform(-1, 1, (2, 3, 4)).astype(onp.float32)
    y = onp.random.uniform(-1, 1, (2, 4, 5)).astype(onp.float32)
    check(npx.batch_dot(np.array(x), np.array(y)), x @ y, rtol=1e-4)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_npx_softmax_family(name):
    if not hasattr(npx, name):
        pytest.skip(f"nd.{name} not registered yet")
    e = onp.exp(A - A.max(axis=-1, keepdims=True))
    sm = e / e.sum(axis=-1, keepdims=True)
    check(getattr(npx, name)(np.array(A)), sm if name == "softmax" else onp.log(sm), rtol=1e-4)


@pytest.mark.parametrize("src, spec, want", [
    ((2, 3, 4), (-2, -1), (2, 12)),
    ((2, 3, 4), (-5, -4), (6, 4)),
    ((2, 3, 4), (-6, 1, 2, -4), (1, 2, 3, 4)),
    ((2, 3, 4), (-6, -1, 2, 3, 4), (1, 2, 3, 4)),
    ((1, 3, 4), (-3, -2, -2), (3, 4)),
    ((2, 3, 4), (4, 6), (4, 6)),
    ((2, 3, 4), (-1,), (24,)),
])
def test_npx_reshape_codes(src, spec, want):
    x = onp.arange(onp.prod(src), dtype=onp.float32).reshape(src)
    check(npx.reshape(np.array(x), spec), x.reshape(want))


def test_npx_reshape_reverse_and_errors():
    x = onp.arange(24, dtype=onp.float32).reshape(2, 3, 4)
    check(npx.reshape(np.array(x), (-1, -2), reverse=True), x.reshape(6, 4))
    for spec in [(-3, -1), (5, -1), (-1, -1), (-7,), (-6, 5, -1, -4)]:
        with pytest.raises(ValueError):
            npx.reshape(np.array(x), spec)


# --- autograd with np arrays (spec §6) -------------------------------------------------------


def test_autograd_tutorial_basic():
    x = np.array([[1, 2], [3, 4]])
    x.attach_grad()
    with autograd.record():
        y = 2 * x * x
    assert type(y) is np.ndarray
    y.backward()
    check(x.grad, [[4, 8], [12, 16]], dtype="float32")


def test_retain_graph_then_third_backward_raises():
    x = np.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    check(x.grad, [2, 4])
    y.backward()
    with pytest.raises(MXNetError, match="retain_graph=True"):
        y.backward()


def test_attach_grad_cuts_history_and_detach():
    x = np.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = 3 * x
        y.attach_grad()
        z = 4 * y + 2 * x
    z.backward()
    check(x.grad, [2, 2, 2])
    check(y.grad, [4, 4, 4])
    with autograd.record():
        y = x * x
        u = y.detach()
        z = u * x
    assert type(u) is np.ndarray and u.grad is None
    z.backward()
    check(x.grad, [1, 4, 9])


def test_control_flow_gradient():
    def f(a):
        b = a * 2
        while np.abs(b).sum() < 1000:
            b = b * 2
        c = b[0] if b.sum() >= 0 else b[1]
        return c

    np.random.seed(7)
    a = np.random.uniform(size=2)
    a.attach_grad()
    with autograd.record():
        c = f(a)
    c.backward()
    assert (a.grad == c / a).tolist() == [True, False]


def test_second_order_with_np_exp():
    x = np.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = np.exp(x)
        dx = autograd.grad(y, [x], create_graph=True)[0]
    dx.backward()
    check(x.grad, onp.exp([1.0, 2.0]), rtol=1e-6)


def test_autograd_grad_returns_np_arrays():
    x = np.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = (x * x).sum()
    (g,) = autograd.grad(y, [x])
    assert type(g) is np.ndarray
    check(g, [2, 4])
    check(x.grad, [0, 0])


def test_np_functions_are_differentiable():
    v = onp.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], dtype=onp.float32)
    w = onp.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]], dtype=onp.float32)
    cases = [
        (lambda x: np.sum(np.exp(x) * x), (onp.exp(v) * (1 + v))),
        (lambda x: np.mean(np.tanh(x)), (1 - onp.tanh(v) ** 2) / v.size),
        (lambda x: np.sum(np.matmul(x, np.array(w))), onp.ones((2, 2)) @ w.T),
        (lambda x: np.sum(np.maximum(x, 0.3) * x), (v > 0.3) * v + onp.maximum(v, 0.3)),
        (lambda x: np.sum(np.reshape(x, (3, 2)) * np.array(w)), w.reshape(2, 3)),
        (lambda x: np.sum(np.transpose(x) ** 2), 2 * v),
        (lambda x: np.max(x, axis=1).sum(), (v == v.max(axis=1, keepdims=True)) * 1.0),
        (lambda x: np.sum(np.dot(x, np.array(w)) / 2), onp.ones((2, 2)) @ w.T / 2),
    ]
    for fn, want in cases:
        x = np.array(v)
        x.attach_grad()
        with autograd.record():
            y = fn(x)
        y.backward()
        check(x.grad, want, rtol=1e-5, atol=1e-5)


def test_grad_req_and_grad_views():
    x = np.array([1.0, 2.0, 3.0])
    assert x.grad is None
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with autograd.record():
            y = (x * x).sum()
        y.backward()
    check(x.grad, [4, 8, 12])
    x.grad[:] = 0
    check(x.grad, [0, 0, 0])
    x.attach_grad(grad_req="null")
    assert x.grad is None
    with pytest.raises(TypeError):
        x.attach_grad(stype="row_sparse")


def test_views_share_autograd_entry():
    x = np.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        z = (x.as_nd_ndarray() * 3).sum()
    z.backward()
    check(x.grad, [3, 3])
    legacy = mx.nd.array([1.0, 2.0])
    legacy.attach_grad()
    with autograd.record():
        z = (legacy.as_np_ndarray() ** 2).sum()
    z.backward()
    assert type(legacy.grad) is mx.nd.NDArray
    assert legacy.grad.asnumpy().tolist() == [2.0, 4.0]


@pytest.mark.skipif(not hasattr(autograd, "Function"), reason="autograd.Function not there yet")
def test_custom_function_with_np_arrays():
    class Sigmoid(autograd.Function):
        def forward(self, x):
            y = 1 / (1 + np.exp(-x))
            self.save_for_backward(y)
            return y

        def backward(self, dy):
            (y,) = self.saved_tensors
            return dy * y * (1 - y)

    x = np.array([0.0, 1.0])
    x.attach_grad()
    with autograd.record():
        y = Sigmoid()(x)
    assert type(y) is np.ndarray
    y.backward()
    check(x.grad, [0.25, 0.19661193], rtol=1e-6)
