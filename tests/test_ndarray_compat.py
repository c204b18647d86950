"""MXNet 1.x NDArray behaviours old code relies on: copy-or-view methods (`inplace=`), the legacy
helpers (`concatenate`, `moveaxis`, `onehot_encode`, ...), `nd._internal`, `nd.contrib`'s class
tests, `out=` on creation functions, NumPy shapes as parameters, storage types, DLPack and
`from_numpy`'s zero-copy contract."""

import itertools

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.base import MXNetError


def _arange(*shape):
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape)


# --- copy or view ----------------------------------------------------------------------------

@pytest.mark.parametrize("method, args, expected_shape", [
    ("flatten", (), (2, 12)),
    ("squeeze", (), (2, 3, 4)),
    ("expand_dims", (1,), (2, 1, 1, 3, 4)),
])
def test_shape_methods_copy_by_default_and_view_with_inplace(method, args, expected_shape):
    base = _arange(2, 1, 3, 4)
    x = mx.nd.array(base)
    copy = getattr(x, method)(*args)
    view = getattr(x, method)(*args, inplace=True)
    assert copy.shape == view.shape == expected_shape
    x[:] = -1
    np.testing.assert_array_equal(copy.asnumpy(), base.reshape(expected_shape))
    np.testing.assert_array_equal(view.asnumpy(), -np.ones(expected_shape))


def test_squeeze_axis_with_inplace():
    x = mx.nd.array(_arange(1, 3, 1))
    v = x.squeeze(axis=(0, 2), inplace=True)
    assert v.shape == (3,)
    v[1] = 50
    assert x.asnumpy()[0, 1, 0] == 50


# --- legacy helpers --------------------------------------------------------------------------

def test_concatenate_matches_numpy_on_any_axis():
    parts = [_arange(2, k, 3) + 10 * k for k in (1, 2, 3)]
    got = mx.nd.concatenate([mx.nd.array(p) for p in parts], axis=1)
    np.testing.assert_array_equal(got.asnumpy(), np.concatenate(parts, axis=1))
    got0 = mx.nd.concatenate([mx.nd.array(parts[0]), mx.nd.array(parts[0])])
    np.testing.assert_array_equal(got0.asnumpy(), np.concatenate([parts[0]] * 2))


def test_concatenate_always_copy():
    a = mx.nd.ones((2, 2))
    assert mx.nd.concatenate([a], always_copy=False) is a
    c = mx.nd.concatenate([a])
    assert c is not a
    a[:] = 5
    np.testing.assert_array_equal(c.asnumpy(), np.ones((2, 2)))


def test_concatenate_rejects_mismatched_shapes():
    with pytest.raises(mx.base.ShapeError, match="concatenate"):
        mx.nd.concatenate([mx.nd.ones((2, 3)), mx.nd.ones((3, 3))], axis=1)


@pytest.mark.parametrize("src, dst", [(0, 2), (2, 0), (-1, 0), (1, -1), ((0, 1), (2, 0))])
def test_moveaxis_matches_numpy(src, dst):
    x = _arange(2, 3, 4)
    np.testing.assert_array_equal(mx.nd.moveaxis(mx.nd.array(x), src, dst).asnumpy(),
                                  np.moveaxis(x, src, dst))


def test_moveaxis_errors():
    x = mx.nd.ones((2, 3))
    with pytest.raises(ValueError, match="moveaxis: source 2 is out of range"):
        mx.nd.moveaxis(x, 2, 0)
    with pytest.raises(ValueError, match="same number"):
        mx.nd.moveaxis(x, (0, 1), 0)


def test_choose_element_0index_is_pick():
    x = _arange(4, 5)
    idx = np.array([4, 0, 2, 1])
    got = mx.nd.choose_element_0index(mx.nd.array(x), mx.nd.array(idx))
    np.testing.assert_array_equal(got.asnumpy(), x[np.arange(4), idx])


def test_fill_element_0index_returns_filled_copy():
    x = _arange(3, 4)
    vals, idx = np.array([-1.0, -2.0, -3.0]), np.array([3, 0, 2])
    a = mx.nd.array(x)
    got = mx.nd.fill_element_0index(a, mx.nd.array(vals), mx.nd.array(idx))
    want = x.copy()
    want[np.arange(3), idx] = vals
    np.testing.assert_array_equal(got.asnumpy(), want)
    np.testing.assert_array_equal(a.asnumpy(), x)  # lhs is not modified


def test_onehot_encode_writes_out():
    out = mx.nd.ones((3, 4))
    res = mx.nd.onehot_encode(mx.nd.array([2, 0, 3]), out)
    assert res is out
    np.testing.assert_array_equal(out.asnumpy(), np.eye(4)[[2, 0, 3]])


def test_internal_crop_assign():
    x = mx.nd.ones((2, 3, 4))
    mx.nd._internal._crop_assign(x, mx.nd.zeros((2, 1, 3)), begin=(0, 1, 0), end=(2, 2, 3),
                                 out=x)
    want = np.ones((2, 3, 4), np.float32)
    want[:, 1:2, 0:3] = 0
    np.testing.assert_array_equal(x.asnumpy(), want)
    y = mx.nd.ones((2, 3))
    z = mx.nd._internal._crop_assign_scalar(y, scalar=7, begin=(1, 0), end=(2, 2))
    np.testing.assert_array_equal(z.asnumpy(), [[1, 1, 1], [7, 7, 1]])
    np.testing.assert_array_equal(y.asnumpy(), np.ones((2, 3)))  # without out: a copy


def test_contrib_class_tests():
    v = np.array([np.inf, -np.inf, np.nan, 1.5, 0.0], dtype=np.float32)
    x = mx.nd.array(v)
    np.testing.assert_array_equal(mx.nd.contrib.isinf(x).asnumpy(), np.isinf(v))
    np.testing.assert_array_equal(mx.nd.contrib.isnan(x).asnumpy(), np.isnan(v))
    np.testing.assert_array_equal(mx.nd.contrib.isfinite(x).asnumpy(), np.isfinite(v))
    i = mx.nd.array([2147483647, -1], dtype="int32")
    np.testing.assert_array_equal(mx.nd.contrib.isinf(i).asnumpy(), [0, 0])
    np.testing.assert_array_equal(mx.nd.contrib.isfinite(i).asnumpy(), [1, 1])


# --- creation, parameters, storage -----------------------------------------------------------

@pytest.mark.parametrize("make, value", [
    (lambda out: mx.nd.ones((2, 2), out=out), 1.0),
    (lambda out: mx.nd.zeros((2, 2), out=out), 0.0),
    (lambda out: mx.nd.full((2, 2), 3, out=out), 3.0),
])
def test_creation_out_is_written(make, value):
    out = mx.nd.array([[7.0, 7.0], [7.0, 7.0]])
    assert make(out) is out
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 2), value))


def test_broadcast_to_accepts_numpy_shape():
    x = mx.nd.array(_arange(1, 3))
    y = x.broadcast_to(shape=np.array([4, 3]))
    np.testing.assert_array_equal(y.asnumpy(), np.broadcast_to(_arange(1, 3), (4, 3)))


def test_op_functions_accept_a_context():
    y = mx.nd.exp(mx.nd.zeros((2,)), ctx=mx.cpu(0))
    np.testing.assert_array_equal(y.asnumpy(), [1.0, 1.0])


def test_tostype():
    x = mx.nd.array([[1.0, 2.0]])
    d = x.tostype("default")
    assert d is not x
    np.testing.assert_array_equal(d.asnumpy(), x.asnumpy())
    for st in ("csr", "row_sparse"):
        s = x.tostype(st)
        assert s.stype == st
        np.testing.assert_array_equal(s.asnumpy(), x.asnumpy())


# --- basic indexing contiguity ---------------------------------------------------------------

def test_basic_indexing_slice_is_contiguous_matches_numpy():
    shape = (3, 4, 5)
    x = np.zeros(shape)
    keys = [slice(None), slice(1), slice(1, 3), slice(None, None, 2), slice(None, None, -1),
            slice(2, None, -2), 1]
    pred = mx.nd.NDArray._basic_indexing_slice_is_contiguous
    for key in itertools.product(keys, repeat=3):
        assert pred(key, shape) == x[key].flags.contiguous, key


def test_contiguous_basic_slice_is_a_view():
    x = mx.nd.array(_arange(4, 3))
    v = x[1:3]
    v[:] = 0
    assert (x.asnumpy()[1:3] == 0).all()


# --- DLPack and from_numpy -------------------------------------------------------------------

def test_dlpack_read_and_write_round_trip():
    x = mx.nd.array(_arange(2, 3))
    for pack in (x.to_dlpack_for_read(), x.to_dlpack_for_write(),
                 mx.nd.to_dlpack_for_read(x), mx.nd.to_dlpack_for_write(x)):
        np.testing.assert_array_equal(mx.nd.from_dlpack(pack).asnumpy(), _arange(2, 3))


def test_from_numpy_zero_copy_locks_the_source_and_shares_writes():
    src = _arange(3, 2)
    x = mx.nd.from_numpy(src)
    assert not src.flags.writeable
    with pytest.raises(ValueError):
        src[0, 0] = 1
    x[2, 1] = 100
    assert src[2, 1] == 100


def test_from_numpy_zero_copy_rejects_non_contiguous():
    src = _arange(2, 3).T
    with pytest.raises(ValueError, match="C-contiguous"):
        mx.nd.from_numpy(src)
    np.testing.assert_array_equal(mx.nd.from_numpy(src, zero_copy=False).asnumpy(), src)
    assert src.flags.writeable


def test_from_numpy_zero_dim_and_empty():
    for src in (np.array(5.0).reshape(()), np.zeros((1, 0, 2))):
        for zc in (False, True):
            got = mx.nd.from_numpy(src.copy(), zero_copy=zc)
            assert got.shape == src.shape
            np.testing.assert_array_equal(got.asnumpy(), src)


# --- assignment, diag ------------------------------------------------------------------------

def test_assign_value_with_leading_unit_axes():
    b = mx.nd.zeros(1)
    b[0] = np.array([47.844944], dtype=np.float32)
    assert b.asnumpy()[0] == np.float32(47.844944)
    c = mx.nd.zeros((2, 3))
    c[0] = np.ones((1, 1, 3)) * 2
    c[:] = c + np.zeros((1, 2, 3))
    c[0, 0] = np.full((1, 1), 5.0)
    np.testing.assert_array_equal(c.asnumpy(), [[5, 2, 2], [0, 0, 0]])
    with pytest.raises(mx.base.ShapeError, match="assignment"):
        c[0] = np.ones((2, 3))


def test_diag_out_of_range_k_raises_like_mxnet():
    m = mx.nd.ones((3, 4))
    assert mx.nd.diag(m, k=4).shape == (0,)  # just past the edge: empty
    assert mx.nd.diag(m, k=-3).shape == (0,)
    for k in (5, -4):
        with pytest.raises(MXNetError, match="does not exist"):
            mx.nd.diag(m, k=k)


def test_creation_keeps_a_cpu_shared_context():
    ctx = mx.Context("cpu_shared", 0)
    for x in (mx.nd.zeros((1, 2), ctx=ctx), mx.nd.ones((2,), ctx=ctx),
              mx.nd.array([1.0], ctx=ctx), mx.nd.full((1,), 2.0, ctx=ctx)):
        assert x.context == ctx
    assert mx.nd.zeros((2,), ctx=mx.cpu(0)).context == mx.cpu(0)
    assert mx.nd.zeros((2,)).context == mx.cpu(0)


def test_from_numpy_twice_still_shares_writes():
    src = _arange(3, 2)
    mx.nd.from_numpy(src)
    x = mx.nd.from_numpy(src)  # src is locked now; the second import shares it too
    x[2, 1] = 100
    assert src[2, 1] == 100 and not src.flags.writeable


def test_from_numpy_of_a_user_locked_array_copies_on_write():
    src = _arange(2)
    src.flags.writeable = False
    x = mx.nd.from_numpy(src)
    x[0] = 9
    np.testing.assert_array_equal(src, [0, 1])
    assert x.asnumpy()[0] == 9


def test_argmax_channel_is_argmax_over_axis_1():
    x = np.array([[[1, 5], [2, 7], [0, 9]]], dtype=np.float32)
    for got in (mx.nd.argmax_channel(mx.nd.array(x)), mx.nd.array(x).argmax_channel()):
        np.testing.assert_array_equal(got.asnumpy(), x.argmax(axis=1))
    with pytest.raises(ValueError, match="argmax_channel"):
        mx.nd.argmax_channel(mx.nd.array([1.0, 2.0]))


def test_broadcast_like_rejects_empty_axes():
    lhs, rhs = mx.nd.ones((1, 3)), mx.nd.ones((4, 3))
    with pytest.raises(MXNetError, match="empty"):
        mx.nd.broadcast_like(lhs, rhs, lhs_axes=(), rhs_axes=())
    got = mx.nd.broadcast_like(lhs, rhs, lhs_axes=(0,), rhs_axes=(0,))
    np.testing.assert_array_equal(got.asnumpy(), np.ones((4, 3)))


def test_assigning_a_recorded_value_raises_mxnet_message():
    x = mx.nd.zeros((2, 3))
    y = mx.nd.ones((3,))
    y.attach_grad()
    with pytest.raises(MXNetError, match=r"Inplace operations \(\+=, -=, x\[:\]=, etc\) are not "
                                          "supported when recording with autograd"):
        with mx.autograd.record():
            x[0] = y


def test_shape_and_size_arrays():
    x = mx.nd.zeros((2, 5, 3))
    for got in (mx.nd.shape_array(x), x.shape_array()):
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got.asnumpy(), [2, 5, 3])
    np.testing.assert_array_equal(x.size_array().asnumpy(), [30])


def test_reshape_like_whole_and_partial():
    x = mx.nd.array(_arange(2, 6))
    np.testing.assert_array_equal(mx.nd.reshape_like(x, mx.nd.ones((3, 4))).asnumpy(),
                                  _arange(2, 6).reshape(3, 4))
    y = x.reshape_like(mx.nd.ones((9, 2, 3)), lhs_begin=1, lhs_end=2, rhs_begin=1, rhs_end=3)
    assert y.shape == (2, 2, 3)
    with pytest.raises(mx.base.ShapeError, match="reshape_like"):
        mx.nd.reshape_like(x, mx.nd.ones((5,)))


def test_reshape_like_gradient_flows():
    x = mx.nd.array(_arange(2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.reshape_like(x, mx.nd.ones((3, 2))) * 3
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full((2, 3), 3.0))


@pytest.mark.parametrize("spec", [3, (1, 3, 5), (2,)])
def test_split_v2_matches_numpy_split(spec):
    x = _arange(2, 6)
    got = mx.nd.split_v2(mx.nd.array(x), spec, axis=1)
    for g, w in zip(got, np.split(x, spec, axis=1), strict=True):
        np.testing.assert_array_equal(g.asnumpy(), w)
    with pytest.raises(ValueError, match="split_v2"):
        mx.nd.split_v2(mx.nd.array(x), 4, axis=1)


def test_split_v2_squeeze_axis_and_single_piece():
    x = mx.nd.array(_arange(3, 2))
    parts = x.split_v2(3, axis=0, squeeze_axis=True)
    assert [p.shape for p in parts] == [(2,)] * 3
    assert mx.nd.split_v2(x, 1).shape == (3, 2)


def test_storage_type_codes_match_mxnet_files():
    from ferrograd.ndarray.ndarray import _STORAGE_TYPE_ID_TO_STR, _STORAGE_TYPE_STR_TO_ID
    # The codes MXNet writes into .params records (default 0, row_sparse 1, csr 2).
    assert _STORAGE_TYPE_STR_TO_ID == {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
    assert _STORAGE_TYPE_ID_TO_STR[2] == "csr"
    assert mx.nd.zeros((2,)).stype == "default"
