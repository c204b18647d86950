"""Bad input raises an MXNetError that is also the matching built-in exception, with a message
that names the op, the argument and the shapes; never a panic."""

import ferrograd as mx
import numpy as np
import pytest
from conftest import raises
from ferrograd import nd


def x23():
    return nd.arange(6).reshape((2, 3))


def test_broadcasting_mismatch():
    a, b = x23(), nd.ones((4,))
    raises(ValueError, lambda: a + b, match=["(2, 3)", "(4,)"])
    raises(ValueError, nd.broadcast_add, a, b, match=["broadcast_add", "(2, 3)", "(4,)"])
    raises(ValueError, nd.elemwise_mul, a, nd.ones((3,)), match=["elemwise_mul", "(2, 3)", "(3,)"])
    raises(ValueError, lambda: a.__iadd__(nd.ones((2, 2, 3))), match="(2, 3)")
    raises(ValueError, nd.dot, a, nd.ones((2, 3)), match="dot")


def test_bad_dtype_names():
    raises(TypeError, nd.zeros, (2,), dtype="float7", match="float7")
    raises(TypeError, nd.array, [1, 2], dtype="complex64", match="complex64")
    raises(TypeError, x23().astype, "int3", match="int3")
    raises(TypeError, nd.Cast, x23(), dtype="bogus", match="bogus")
    raises(TypeError, mx.random.uniform, shape=(2,), dtype="int32", match="float")


@pytest.mark.parametrize("key,parts", [
    (5, ["index 5", "axis 0", "size 2"]),
    (-3, ["index -3", "axis 0", "size 2"]),
    ((0, 3), ["index 3", "axis 1", "size 3"]),
    ([0, 2], ["index 2", "axis 0", "size 2"]),
    ((slice(None), [1, -4]), ["index -4", "axis 1", "size 3"]),
    ((1, 1, 1), ["too many indices"]),
    (np.array([True, False, True]), ["boolean index", "axis 0"]),
    (([0, 1], [0, 1, 2]), ["could not be broadcast", "(2,) (3,)"]),
    ("a", ["valid indices"]),
    (1.5, ["valid indices"]),
    ([0.5, 1.0], ["integer or boolean"]),
    ((Ellipsis, Ellipsis), ["single ellipsis"]),
    ([[0, 1], [1]], ["ragged"]),
    (True, ["boolean scalar"]),
])
def test_bad_indices(key, parts):
    x = x23()
    raises(IndexError, lambda: x[key], match=parts)
    raises(IndexError, x.__setitem__, key, 0.0, match=parts)


def test_bad_slices_and_assignment_values():
    x = x23()
    raises(ValueError, lambda: x[::0], match="step")
    raises(IndexError, lambda: x[nd.array([0]):], match="slice")
    raises(ValueError, x.__setitem__, 0, nd.ones((4,)), match=["(4,)", "(3,)"])
    raises(ValueError, x.__setitem__, [0, 1], nd.ones((3, 3)), match="(2, 3)")


@pytest.mark.parametrize("call", [
    lambda: nd.zeros(-1), lambda: nd.ones((2, -3)), lambda: nd.full((-1,), 1.0),
    lambda: nd.empty((3, -1)), lambda: nd.arange(5, 0), lambda: nd.arange(0, 5, 0),
    lambda: nd.arange(0, 5, -1), lambda: nd.arange(0, 3, repeat=0), lambda: nd.linspace(0, 1, -2),
    lambda: nd.eye(-1), lambda: mx.random.uniform(shape=(-2,)),
])
def test_negative_sizes_and_empty_ranges(call):
    raises(ValueError, call)


def test_ragged_and_non_array_sources():
    raises(ValueError, nd.array, [[1, 2], [3]], match="array")
    raises(ValueError, nd.array, [1, [2, 3]])
    raises(ValueError, nd.array, "abc")
    raises(TypeError, nd.zeros, "abc", match="shape")


def test_reshape_and_axes_errors():
    x = x23()
    raises(ValueError, x.reshape, (4, 4), match=["(2, 3)", "(4, 4)"])
    raises(ValueError, x.reshape, (-1, -1), match="-1")
    raises(ValueError, x.reshape, (-5,), match="Reshape")
    raises(ValueError, nd.reshape, x, shape=(7,), match="Reshape")
    raises(IndexError, x.sum, axis=2, match=["axis 2", "2 dimensions"])
    raises(IndexError, nd.mean, x, axis=(0, -3), match="axis -3")
    raises(ValueError, x.sum, axis=(1, 1), match="duplicate")
    raises(ValueError, x.transpose, (0, 0), match="repeated")
    raises(ValueError, x.transpose, (0,), match="axes")
    raises(IndexError, x.expand_dims, 3, match="axis 3")
    raises(ValueError, x.squeeze, axis=0, match="size is not 1")
    raises(IndexError, x.argmax, axis=5, match="axis 5")
    raises(IndexError, nd.take, x, nd.array([0]), axis=2, match="axis 2")
    raises(ValueError, nd.take, x, nd.array([0]), mode="bogus", match="mode")
    raises(IndexError, nd.take, x, nd.array([4]), mode="raise", match=["index 4", "size 2"])
    raises(ValueError, x.copyto, nd.zeros((3, 2)), match=["(2, 3)", "(3, 2)"])


def test_wrong_inputs_to_ops():
    x = x23()
    raises(TypeError, nd.exp, x, x, match="exp")
    raises(TypeError, nd.exp, match=["exp", "data"])
    raises(TypeError, nd.broadcast_add, x, match=["broadcast_add", "rhs"])
    raises(TypeError, nd.exp, [1.0, 2.0], match=["exp", "data", "list"])
    raises(TypeError, nd.broadcast_add, x, 2.0, match=["rhs", "float"])
    raises(TypeError, x.take, match=["take", "indices"])
    raises(TypeError, x.sum, 0, False, False, 1, match="positional")


def test_unknown_keyword_arguments():
    x = x23()
    raises(TypeError, nd.sum, x, axsi=1, match=["sum", "axsi"])
    raises(TypeError, x.sum, axsi=1, match=["sum", "axsi"])
    raises(TypeError, nd.exp, x, scalar=2, match="scalar")
    raises(ValueError, nd.sum, x, axis="zero", match=["sum", "axis"])


def test_errors_leave_arrays_usable():
    x = x23()
    with pytest.raises(IndexError):
        x[[0, 9]] = 1.0
    assert x.asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(mx.MXNetError):
        x += nd.ones((5,))
    assert x.sum().asscalar() == 15
