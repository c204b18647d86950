"""gluon.utils: split_data, split_and_load, clip_global_norm, shape_is_known (download and
check_sha1 are tested with the model store in test_model_store.py)."""

import warnings

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.gluon import utils


@pytest.mark.parametrize("num_slice,axis,even,sizes", [
    (4, 0, True, [2, 2, 2, 2]),
    (3, 1, True, [3, 3, 3]),
    (4, 1, False, [3, 2, 2, 2]),
    (5, 0, False, [2, 2, 2, 1, 1]),
    (1, 2, True, [4]),
])
def test_split_data_sizes_and_values(num_slice, axis, even, sizes):
    x = np.arange(8 * 9 * 4, dtype=np.float32).reshape(8, 9, 4)
    parts = utils.split_data(mx.nd.array(x), num_slice, batch_axis=axis, even_split=even)
    assert isinstance(parts, list)
    assert [p.shape[axis] for p in parts] == sizes
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts], axis=axis), x)


def test_split_data_uneven_without_permission():
    with pytest.raises(ValueError, match=r"cannot be evenly split into 4 slices along axis 1"):
        utils.split_data(mx.nd.zeros((8, 9)), 4, batch_axis=1)


def test_split_and_load():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    parts = utils.split_and_load(x, [mx.cpu(0), mx.cpu(1), mx.cpu(2)])  # NumPy input accepted
    # (ferrograd has one CPU device: every cpu(i) array lives on cpu(0), see mxnet-users.md)
    assert len(parts) == 3 and all(p.context.device_type == "cpu" for p in parts)
    for i, part in enumerate(parts):
        np.testing.assert_array_equal(part.asnumpy(), x[2 * i:2 * i + 2])
    one = utils.split_and_load(mx.nd.array(x), [mx.cpu(1)])
    assert len(one) == 1
    np.testing.assert_array_equal(one[0].asnumpy(), x)


def test_clip_global_norm_scales_when_above():
    a, b = np.array([3.0, 0.0], np.float32), np.array([[4.0]], np.float32)
    x1, x2 = mx.nd.array(a), mx.nd.array(b)
    norm = utils.clip_global_norm([x1, x2], 1.0)
    assert isinstance(norm, np.float32) and norm == pytest.approx(5.0)  # as MXNet: asscalar()
    np.testing.assert_allclose(x1.asnumpy(), a / 5, rtol=1e-6)
    np.testing.assert_allclose(x2.asnumpy(), b / 5, rtol=1e-6)


def test_clip_global_norm_leaves_small_arrays_and_returns_ndarray():
    x = mx.nd.array([0.3, 0.4])
    norm = utils.clip_global_norm([x], 2.0, check_isfinite=False)
    assert isinstance(norm, mx.nd.NDArray) and norm.shape == (1,)
    assert norm.asscalar() == pytest.approx(0.5)
    np.testing.assert_allclose(x.asnumpy(), [0.3, 0.4], rtol=1e-6)


def test_clip_global_norm_warns_on_nan():
    x = mx.nd.array([np.nan, 1.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        norm = utils.clip_global_norm([x], 1.0)
    assert np.isnan(norm)
    assert any("nan or inf is detected" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="at least one"):
        utils.clip_global_norm([], 1.0)


def test_shape_is_known():
    assert utils.shape_is_known((2, 3))
    assert not utils.shape_is_known((2, 0))
    assert not utils.shape_is_known(None)
    assert not utils.shape_is_known(())


def test_split_data_keeps_numpy_arrays():
    x = np.arange(2 * 7 * 3, dtype=np.float32).reshape(2, 7, 3)
    parts = utils.split_data(mx.np.array(x), 3, batch_axis=1, even_split=False)
    assert all(isinstance(p, mx.np.ndarray) for p in parts)
    for part, expected in zip(parts, np.array_split(x, 3, axis=1), strict=True):
        np.testing.assert_array_equal(part.asnumpy(), expected)
