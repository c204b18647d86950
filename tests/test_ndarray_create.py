"""Array creation, conversion and the NDArray methods that are not arithmetic."""

import inspect
import pickle

import ferrograd as mx
import numpy as np
import pytest
from conftest import check, raises
from ferrograd import nd
from ferrograd.base import ShapeError


def test_array_from_lists_scalars_and_numpy_defaults_to_float32():
    check(nd.array([1, 2, 3]), [1, 2, 3], "float32")
    check(nd.array([[1, 2], [3, 4]]), [[1, 2], [3, 4]], "float32")
    check(nd.array([True, False]), [1, 0], "float32")
    # MXNet 1.x: NumPy sources become float32 too unless dtype is given.
    check(nd.array(np.arange(4, dtype=np.int64)), [0, 1, 2, 3], "float32")
    check(nd.array(np.array([0.1, 0.2], dtype=np.float64)), [0.1, 0.2], "float32")
    s = nd.array(3.0)
    assert s.shape == () and s.dtype is np.float32 and s.asscalar() == 3.0
    check(nd.array((1.5, 2.5)), [1.5, 2.5], "float32")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "uint8",
                                   np.int32, np.dtype("float64")])
def test_array_with_dtype(dtype):
    x = nd.array([[0, 1], [2, 3]], dtype=dtype)
    check(x, [[0, 1], [2, 3]], dtype)
    assert x.dtype is np.dtype(dtype).type


def test_array_from_ndarray_keeps_dtype_and_copies():
    a = nd.array([1, 2, 3], dtype="int32")
    b = nd.array(a)
    check(b, [1, 2, 3], "int32")
    check(nd.array(a, dtype="float64"), [1, 2, 3], "float64")
    a[0] = 10
    check(b, [1, 2, 3])  # a copy, never a view
    src = np.array([1.0, 2.0], dtype=np.float32)
    c = nd.array(src)
    src[0] = 5
    check(c, [1, 2])


def test_array_accepts_ctx():
    check(nd.array([1], ctx=mx.cpu()), [1])


@pytest.mark.parametrize("fn,val", [(nd.zeros, 0), (nd.ones, 1), (nd.empty, 0)])
def test_zeros_ones_empty(fn, val):
    check(fn((2, 3)), np.full((2, 3), val), "float32")
    check(fn(4), np.full(4, val), "float32")
    if fn is nd.empty:
        check(fn((2, 0)), np.zeros((2, 0)))
    else:  # MXNet 1.x semantics: a 0 dimension is unknown, zeros/ones cannot infer the shape
        with pytest.raises(ShapeError, match=r"shape \(2, 0\) has a 0 dimension"):
            fn((2, 0))
        with mx.util.np_shape(True):
            check(fn((2, 0)), np.zeros((2, 0)))
    check(fn((3,), dtype="int64"), np.full(3, val), "int64")
    check(fn([2, 2], ctx=mx.cpu(), dtype=np.float64), np.full((2, 2), val), "float64")


def test_zero_dim_creation_raises_in_legacy_mode():
    # MXNet 1.x (without set_np): nd.ones(()) raises MXNetError.
    for fn in (nd.zeros, nd.ones, nd.empty):
        raises(ValueError, fn, (), match="()")
    raises(ValueError, nd.full, (), 2.0)
    from ferrograd import _ferrograd

    _ferrograd._set_np_shape(True)
    check(nd.ones(()), np.ones(()))


def test_full():
    check(nd.full((2, 2), 7), np.full((2, 2), 7), "float32")
    check(nd.full(3, -1.5, dtype="float64"), [-1.5] * 3, "float64")
    out = nd.zeros((2,), dtype="int32")
    r = nd.full((2,), 4, out=out)
    assert r is out
    check(out, [4, 4], "int32")


@pytest.mark.parametrize("args,kwargs,want", [
    ((5,), {}, np.arange(5)),
    ((2, 8, 2), {}, np.arange(2, 8, 2)),
    ((0, 1, 0.25), {}, np.arange(0, 1, 0.25)),
    ((5, 0, -1.5), {}, np.arange(5, 0, -1.5)),
    ((0, 3), {"repeat": 2}, [0, 0, 1, 1, 2, 2]),
    ((1, 4), {"dtype": "int32"}, [1, 2, 3]),
    ((3,), {"step": 1, "dtype": np.float64}, [0, 1, 2]),
])
def test_arange(args, kwargs, want):
    x = nd.arange(*args, **kwargs)
    check(x, want, kwargs.get("dtype", "float32"))


def test_linspace():
    check(nd.linspace(0, 1, 5), np.linspace(0, 1, 5), "float32")
    check(nd.linspace(-1, 1, 4, endpoint=False), np.linspace(-1, 1, 4, endpoint=False))
    check(nd.linspace(2, 3, 1, dtype="float64"), [2.0], "float64")
    assert nd.linspace(0, 1, 0).shape == (0,)


def test_eye():
    check(nd.eye(3), np.eye(3), "float32")
    check(nd.eye(3, 4, k=1), np.eye(3, 4, 1))
    check(nd.eye(4, 2, k=-1, dtype="int32"), np.eye(4, 2, -1), "int32")
    check(nd.eye(2, M=0), np.eye(2))


def test_zeros_like_ones_like():
    x = nd.array([[1, 2]], dtype="int64")
    check(nd.zeros_like(x), [[0, 0]], "int64")
    check(nd.ones_like(x), [[1, 1]], "int64")
    check(x.zeros_like(), [[0, 0]], "int64")
    check(x.ones_like(), [[1, 1]], "int64")


def test_dtype_is_numpy_type_class_and_properties():
    x = nd.zeros((2, 3, 4))
    assert x.dtype is np.float32 and isinstance(x.dtype, type)
    assert (x.shape, x.size, x.ndim, x.stype) == ((2, 3, 4), 24, 3, "default")
    assert repr(x.context) == "cpu(0)" and str(x.ctx) == "cpu(0)"
    assert x.context == mx.cpu() == mx.cpu(0) and x.context != mx.cpu(1)
    assert mx.current_context() == mx.cpu()


def test_astype_copy_copyto_as_in_context():
    x = nd.array([1.7, -2.5, 3.2])
    y = x.astype("int32")
    check(y, [1, -2, 3], "int32")
    check(x.astype(np.float64), [1.7, -2.5, 3.2], "float64", rtol=1e-6)
    assert x.astype("float32", copy=False) is x
    z = x.astype("float32")
    z[0] = 0
    check(x, [1.7, -2.5, 3.2])  # astype copies
    c = x.copy()
    c[:] = 9
    check(x, [1.7, -2.5, 3.2])
    target = nd.zeros(3, dtype="int32")
    assert x.copyto(target) is target
    check(target, [1, -2, 3], "int32")
    on_cpu = x.copyto(mx.cpu())
    assert on_cpu is not x
    on_cpu[:] = 0
    check(x, [1.7, -2.5, 3.2])
    assert x.as_in_context(mx.cpu()) is x


def test_asnumpy_is_a_private_writable_copy():
    x = nd.array([[1, 2], [3, 4]])
    a = x.asnumpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32 and a.flags.writeable
    a[0, 0] = 100
    check(x, [[1, 2], [3, 4]])
    assert x.T.asnumpy().flags.c_contiguous


def test_asscalar_item_tolist():
    assert nd.array([2.5]).asscalar() == 2.5
    assert isinstance(nd.array([2.5]).asscalar(), np.float32)
    assert nd.array([[7]], dtype="int32").asscalar() == 7
    with pytest.raises(ValueError, match="The current array is not a scalar"):
        nd.array([1, 2]).asscalar()
    v = nd.array([3], dtype="int64").item()
    assert v == 3 and isinstance(v, int)
    with pytest.raises(ValueError):
        nd.array([1, 2]).item()
    assert nd.array([[1, 2], [3, 4]]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert float(nd.array([1.5])) == 1.5 and int(nd.array([2.9])) == 2


def test_transpose_property_and_method():
    a = np.arange(6).reshape(2, 3)
    x = nd.array(a)
    check(x.T, a.T)
    v = nd.array([1, 2])
    assert v.T is v  # MXNet returns self below 2-D
    b = np.arange(24).reshape(2, 3, 4)
    y = nd.array(b)
    check(y.T, b.T)
    check(y.transpose(), b.transpose())
    check(y.transpose(1, 0, 2), b.transpose(1, 0, 2))
    check(y.transpose((2, 0, 1)), b.transpose(2, 0, 1))
    check(y.transpose(axes=(0, 2, 1)), b.transpose(0, 2, 1))
    t = x.T
    t[0, 0] = 50  # MXNet's transpose is a copy
    check(x, a)


def test_reshape_call_forms_and_codes():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = nd.array(a)
    check(x.reshape((6, 4)), a.reshape(6, 4))
    check(x.reshape(6, 4), a.reshape(6, 4))
    check(x.reshape(shape=(4, 6)), a.reshape(4, 6))
    check(x.reshape(-1), a.reshape(-1))
    check(x.reshape([3, -1]), a.reshape(3, 8))
    assert x.reshape((0, -1)).shape == (2, 12)  # 0 copies the input dim
    assert x.reshape((-2,)).shape == (2, 3, 4)  # -2 copies the rest
    assert x.reshape((-3, 4)).shape == (6, 4)  # -3 merges two dims
    assert x.reshape((-4, 1, 2, -2)).shape == (1, 2, 3, 4)  # -4 splits one dim
    assert x.reshape((-4, -1, 1, 3, 4)).shape == (2, 1, 3, 4)
    assert x.reshape((0, 0, -1), reverse=True).shape == (2, 3, 4)
    assert nd.zeros((10, 5, 4)).reshape((-1, 0), reverse=True).shape == (50, 4)
    r = x.reshape((6, 4))
    r[0, 0] = -1  # a view: the write reaches x
    assert x[0, 0, 0].asscalar() == -1
    with pytest.raises(TypeError, match="unknown keywords"):
        x.reshape((6, 4), bogus=1)


def test_expand_dims_squeeze_flatten():
    x = nd.zeros((2, 1, 3))
    assert x.expand_dims(0).shape == (1, 2, 1, 3)
    assert x.expand_dims(-1).shape == (2, 1, 3, 1)
    assert x.squeeze().shape == (2, 3)
    assert x.squeeze(axis=1).shape == (2, 3)
    assert x.squeeze(axis=(1,)).shape == (2, 3)
    assert nd.zeros((1, 1)).squeeze().shape == (1,)  # legacy: never 0-d
    a = np.arange(24).reshape(2, 3, 4)
    check(nd.array(a).flatten(), a.reshape(2, 12))
    assert nd.zeros(5).flatten().shape == (5, 1)


def test_len_bool_iter():
    x = nd.array([[1, 2], [3, 4], [5, 6]])
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3
    check(rows[2], [5, 6])
    items = list(nd.array([4, 5]))
    assert [r.shape for r in items] == [(1,), (1,)] and items[1].asscalar() == 5
    assert not nd.empty((0,))
    assert nd.array([2]) and not nd.array([0])
    with pytest.raises(ValueError, match="ambiguous"):
        bool(nd.array([1, 2]))
    with pytest.raises(TypeError):
        len(nd.array(1.0))


def test_repr_matches_mxnet():
    assert repr(nd.array([1, 2])) == "\n[1. 2.]\n<NDArray 2 @cpu(0)>"
    assert repr(nd.array([[1, 2], [3, 4]], dtype="int32")) == (
        "\n[[1 2]\n [3 4]]\n<NDArray 2x2 @cpu(0)>")
    assert str(nd.zeros((1, 2, 1))) == "\n[[[0.]\n  [0.]]]\n<NDArray 1x2x1 @cpu(0)>"


def test_context_gpu_waits_and_pickle():
    with pytest.raises(mx.MXNetError, match="CPU only"):
        nd.zeros((1,), ctx=mx.gpu())
    assert mx.num_gpus() == 0
    x = nd.array([[1, 2]], dtype="int64")
    assert nd.waitall() is None and x.wait_to_read() is None
    y = pickle.loads(pickle.dumps(x))
    check(y, [[1, 2]], "int64")
    with mx.cpu(0) as c:
        assert mx.current_context() == c


def test_nd_functions_have_real_signatures_and_docs():
    sig = inspect.signature(nd.sum)
    assert list(sig.parameters)[:4] == ["data", "axis", "keepdims", "exclude"]
    assert "Sum" in nd.sum.__doc__
    assert list(inspect.signature(nd.take).parameters)[:4] == ["a", "indices", "axis", "mode"]
