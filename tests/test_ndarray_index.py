"""Basic and advanced indexing, and assignment through keys, against NumPy."""

import numpy as np
import pytest
from conftest import check
from ferrograd import nd

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


def legacy(v):
    """NumPy's result as MXNet 1.x returns it: a scalar result has shape (1,)."""
    v = np.asarray(v)
    return v.reshape(1) if v.ndim == 0 else v


BASIC_KEYS = [
    0, -1, 2, (1, 2), (1, 2, 3), (-1, -4, -5), slice(None), slice(1, 3), slice(None, None, 2),
    slice(None, None, -1), slice(3, 0, -2), slice(-2, None), slice(10, 20), (slice(None), 1),
    (Ellipsis, 1), (1, Ellipsis), (Ellipsis,), (None,), (None, 1), (1, None, slice(1, 3)),
    (slice(None), None, Ellipsis, None), (slice(None, None, -1), slice(1, None, 2), -1),
    (Ellipsis, slice(None, None, -3)), (0, slice(4, None, -1), 0), np.int64(1),
    (np.int32(2), slice(None), np.int64(-1)),
]


@pytest.mark.parametrize("key", BASIC_KEYS, ids=repr)
def test_basic_indexing(key):
    check(nd.array(A)[key], legacy(A[key]))


def test_basic_views_write_through():
    x = nd.array(A)
    x[1][2][:] = -1  # int indexing and contiguous slices are views (MXNet semantics)
    assert (x.asnumpy()[1, 2] == -1).all()
    v = x[0:2]
    v[:] = 7
    assert (x.asnumpy()[:2] == 7).all() and x[2, 0, 0].asscalar() == 40


ADV_KEYS = [
    [0, 2], [[0, 1], [2, 0]], [-1], [], (slice(None), [3, 0, 3]), (Ellipsis, [4, -5]),
    ([0, 2], [1, 3]), ([0, 2], slice(None), [1, 3]), (1, [0, 3], [4, 2]),
    (slice(1, None), [0, 3], [4, 2]), ([[2], [0]], slice(None, None, -1), [0, 4, 1]),
    ([0, 1], 2), (1, slice(None), [0, 0, 1]), ([[1, 0]], [[3], [2]]), (None, [1, 2]),
    (slice(None), None, [3, 1]), ([0, 1], None, [1, 2]), (np.array(1), np.array([2, 3])),
    (np.array([[0, 2]]), 0, Ellipsis), ([2, 2, 0], Ellipsis, np.array(-1)),
]


@pytest.mark.parametrize("key", ADV_KEYS, ids=repr)
def test_integer_array_indexing(key):
    np_key = tuple(np.array(k) if isinstance(k, list) else k for k in key) \
        if isinstance(key, tuple) else np.array(key, dtype=np.int64)
    check(nd.array(A)[key], legacy(A[np_key]))


def test_index_array_kinds():
    x = nd.array(A)
    want = A[[2, 0]]
    check(x[nd.array([2, 0])], want)  # float NDArray: MXNet converts to integers
    check(x[nd.array([2, 0], dtype="int32")], want)
    check(x[nd.array([2, 0], dtype="int64")], want)
    check(x[np.array([2, 0])], want)
    check(x[np.array([2, 0], dtype=np.uint8)], want)
    check(x[:, nd.array([[1, 2]], dtype="int32"), 0], A[:, [[1, 2]], 0])
    check(nd.array([1, 2, 3])[nd.array([-1.9, 1.9])], [3, 2])  # floats truncate toward zero
    r = x[[1]]
    r[:] = 0  # advanced indexing returns a copy
    check(x, A)


def test_boolean_masks():
    x = nd.array(A)
    m = A > 30
    check(x[m], A[m])
    check(x[nd.array(m, dtype="bool")], A[m])
    check(x[nd.array(A, dtype="bool")], A[A.astype(bool)])
    rows = np.array([True, False, True])
    check(x[rows], A[rows])
    check(x[rows.tolist()], A[rows])
    check(x[rows, 1:3], A[rows, 1:3])
    check(x[:, np.array([False, True, True, False])], A[:, [1, 2]])
    check(x[1, A[1] % 2 == 0], A[1, A[1] % 2 == 0])
    check(x[rows, :, [0, 4]], A[rows, :, [0, 4]])
    assert x[np.zeros(3, dtype=bool)].shape == (0, 4, 5)
    m2 = A[0] % 3 == 1  # a 2-d mask over the trailing axes, after slices and new axes
    check(x[:, m2], A[:, m2])
    check(x[::-2, m2], A[::-2, m2])
    check(x[None, 1:, m2], A[None, 1:, m2])
    check(x[..., np.array([True, False, False, True, True])], A[..., [0, 3, 4]])
    check(x[A[:, :, 0] > 20, None], A[A[:, :, 0] > 20, None])
    v = nd.array([1.0, -2.0, 3.0])
    check(v[(v > 0).astype("bool")], [1, 3])


def test_random_keys_match_numpy():
    rng = np.random.default_rng(7)
    x = nd.array(A)
    for _ in range(60):
        key = []
        for d in A.shape:
            r = rng.integers(5)
            if r == 0:
                key.append(slice(None))
            elif r == 1:
                key.append(int(rng.integers(-d, d)))
            elif r == 2:
                key.append(slice(int(rng.integers(-d, d)), None, int(rng.choice([-2, -1, 1, 3]))))
            else:
                key.append(rng.integers(-d, d, size=(2,)))
        key = tuple(key)
        check(x[key], legacy(A[key]))


def test_setitem_basic():
    x = nd.zeros((3, 4))
    x[:] = 1
    x[1] = 2
    x[2, 1:3] = nd.array([5, 6])
    x[0, ::-2] = [7, 8]
    x[-1, -1] = 9.5
    x[1:, :1] = nd.array([[3], [4]])
    x[...] += 0
    check(x, [[1, 8, 1, 7], [3, 2, 2, 2], [4, 5, 6, 9.5]])
    y = nd.zeros((2, 3), dtype="int32")
    y[:] = np.array([1.9, 2.2, -3.7])  # broadcast (3,) over rows, converted to int32
    check(y, [[1, 2, -3]] * 2, "int32")
    y[0] = nd.array([7, 8, 9], dtype="float64")
    check(y[0], [7, 8, 9], "int32")


def test_setitem_through_views_and_aliasing():
    x = nd.arange(6).reshape((2, 3))
    v = x[1]
    v[1:] = 0
    check(x, [[0, 1, 2], [3, 0, 0]])
    x[0] = x[1]  # value read before the write
    check(x, [[3, 0, 0], [3, 0, 0]])
    w = x.reshape((6,))
    w[[0, 5]] = -1  # advanced assignment on a view reaches the base
    check(x, [[-1, 0, 0], [3, 0, -1]])


def test_setitem_advanced():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for key, val in [([0, 2], 0.0), ((slice(None), [1, 3]), np.array([[10], [20], [30]])),
                     (([0, 2], [1, 3]), np.array([-1, -2])), (a > 5, -5.0),
                     ((np.array([True, False, True]), 0), np.array([8, 9])),
                     ((1, [0, 0, 2]), np.array([1, 2, 3]))]:
        x = nd.array(a)
        want = a.copy()
        want[key] = val
        x[key] = val if np.isscalar(val) else nd.array(val)
        check(x, want)
    x = nd.array(a)
    x[[0, 0]] = nd.array([[1, 1, 1, 1], [2, 2, 2, 2]])  # repeated index: the last write wins
    check(x[0], [2, 2, 2, 2])
    x[[1, 2]] += 100  # getitem, add, setitem
    check(x[1:], a[1:] + 100)
    mask = nd.array(a > 6, dtype="bool")
    x[mask] = nd.array([0.5])
    assert x.asnumpy()[a > 6].tolist() == [0.5] * 5


def test_iteration_uses_getitem():
    x = nd.array(A)
    for i, row in enumerate(x):
        check(row, A[i])
    assert sum(1 for _ in x) == 3
