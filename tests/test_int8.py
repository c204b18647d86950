"""int8 arrays: creation, NumPy interop, casting, arithmetic and reductions (MXNet 1.x has int8)."""

import ferrograd as mx
import numpy as np
import pytest

VALUES = [-128, -7, -1, 0, 1, 5, 127]


def test_create_from_list_and_numpy_keeps_values():
    a = mx.nd.array(VALUES, dtype="int8")
    assert a.dtype == np.int8
    np.testing.assert_array_equal(a.asnumpy(), np.array(VALUES, dtype=np.int8))
    b = mx.nd.array(np.array(VALUES, dtype=np.int8), dtype=np.int8)
    assert b.asnumpy().dtype == np.int8
    np.testing.assert_array_equal(b.asnumpy(), VALUES)


def test_zeros_ones_full_int8():
    assert mx.nd.zeros((2, 3), dtype="int8").asnumpy().dtype == np.int8
    np.testing.assert_array_equal(mx.nd.full((2,), -3, dtype="int8").asnumpy(), [-3, -3])
    np.testing.assert_array_equal(mx.nd.ones((3,), dtype=np.int8).asnumpy(), [1, 1, 1])


def test_arithmetic_wraps_like_numpy():
    x = np.array([100, -100, 3, -3], dtype=np.int8)
    y = np.array([100, -100, 2, 5], dtype=np.int8)
    a, b = mx.nd.array(x, dtype="int8"), mx.nd.array(y, dtype="int8")
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal((a + b).asnumpy(), x + y)
        np.testing.assert_array_equal((a - b).asnumpy(), x - y)
        np.testing.assert_array_equal((a * b).asnumpy(), x * y)
    assert (a + b).dtype == np.int8
    np.testing.assert_array_equal((a > b).asnumpy(), (x > y).astype(np.int8))
    np.testing.assert_array_equal((-a).asnumpy(), [-100, 100, -3, 3])


def test_division_truncates_toward_zero():
    a = mx.nd.array([7, -7, 9], dtype="int8")
    b = mx.nd.array([2, 2, -4], dtype="int8")
    np.testing.assert_array_equal((a / b).asnumpy(), [3, -3, -2])


def test_casting_to_and_from_int8():
    f = mx.nd.array([1.9, -1.9, 127.0, -128.0])
    np.testing.assert_array_equal(f.astype("int8").asnumpy(), [1, -1, 127, -128])
    i = mx.nd.array([-128, 127], dtype="int8")
    np.testing.assert_array_equal(i.astype("float32").asnumpy(), [-128.0, 127.0])
    np.testing.assert_array_equal(i.astype("int32").asnumpy(), [-128, 127])
    assert mx.nd.Cast(f, dtype="int8").dtype == np.int8


def test_reductions():
    x = np.array([[-5, 3, 7], [2, -8, 1]], dtype=np.int8)
    a = mx.nd.array(x, dtype="int8")
    np.testing.assert_array_equal(a.max(axis=1).asnumpy(), x.max(axis=1))
    np.testing.assert_array_equal(a.min(axis=0).asnumpy(), x.min(axis=0))
    np.testing.assert_array_equal(a.sum(axis=1).asnumpy(), x.sum(axis=1).astype(np.int8))


def test_promotion_with_other_types():
    i8 = mx.nd.array([-1, 2], dtype="int8")
    assert (i8 + mx.nd.array([1, 1], dtype="int32")).dtype == np.int32
    assert (i8 + mx.nd.array([1, 1])).dtype == np.float32
    # int8 with uint8: int32 holds both (NumPy would give int16, which MXNet lacks).
    r = i8 + mx.nd.array([255, 1], dtype="uint8")
    assert r.dtype == np.int32
    np.testing.assert_array_equal(r.asnumpy(), [254, 3])


def test_from_numpy_zero_copy_and_dlpack():
    src = np.array([[1, -2], [3, -4]], dtype=np.int8)
    a = mx.nd.from_numpy(src)
    assert a.dtype == np.int8
    np.testing.assert_array_equal(a.asnumpy(), src)
    b = mx.nd.from_dlpack(a.to_dlpack_for_read())
    np.testing.assert_array_equal(b.asnumpy(), src)
    np.testing.assert_array_equal(np.asarray(a), src)


def test_unknown_dtype_names_int8_in_the_message():
    with pytest.raises(mx.base.DTypeError, match="int8"):
        mx.nd.zeros((2,), dtype="int16")
