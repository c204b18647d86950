"""Zero-copy interop: nd.from_numpy / nd.from_dlpack (shared memory), and the read-only snapshot
exports x.to_numpy(), np.asarray(x), memoryview(x), x.__dlpack__()."""

import array
import ctypes
import gc
import io
import time
import weakref

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.base import DTypeError, MXNetError

nd = mx.nd
# The native importer under nd.from_numpy: shares any layout and leaves the source writable.
# nd.from_numpy adds MXNet's contract on top (C-contiguous only, source made read-only), tested
# in test_ndarray_compat.py.
share = mx._ferrograd._from_numpy

DTYPES = [np.float32, np.float64, np.float16, np.int32, np.int64, np.int8, np.uint8, np.bool_]


def sample(dtype, shape=(3, 4)):
    n = int(np.prod(shape))
    if dtype == np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(n) % 7 + 1).astype(dtype).reshape(shape)


def has_buffer_protocol():
    try:
        memoryview(nd.ones((1,)))
    except TypeError:
        return False
    return True


needs_buffer = pytest.mark.skipif(
    not has_buffer_protocol(),
    reason="buffer protocol needs Py_buffer (stable ABI >= 3.11; this build targets abi3-py39)",
)


# --- nd.from_numpy -------------------------------------------------------------------------------


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = nd.from_numpy(a)
    assert not a.flags.writeable  # locked by from_numpy, as in MXNet; the owner may unlock it
    a.flags.writeable = True
    assert isinstance(x, nd.NDArray) and x.shape == (2, 3) and x.dtype == np.float32
    a[1, 2] = 50.0  # NumPy write, seen by ferrograd
    assert x.asnumpy()[1, 2] == 50.0
    x[0, 0] = -1.0  # ferrograd write, seen by NumPy
    x += 1
    np.testing.assert_array_equal(a, [[0, 2, 3], [4, 5, 51]])
    np.testing.assert_array_equal(x.asnumpy(), a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_numpy_dtypes_shared(dtype):
    a = sample(dtype)
    x = share(a, True)
    assert x.dtype == dtype
    np.testing.assert_array_equal(x.asnumpy(), a)
    a[0, 0] = 0 if dtype != np.bool_ else True  # visible: memory is shared
    assert x.asnumpy()[0, 0] == a[0, 0]


def test_from_numpy_strided_sources_are_shared():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    for view in (base.T, base[::2, 1::3], base[::-1, ::-2], base[2]):
        x = share(view, True)
        np.testing.assert_array_equal(x.asnumpy(), view)
    t = share(base.T, True)
    base[0, 5] = -3.0
    assert t.asnumpy()[5, 0] == -3.0
    t[1, 2] = 99.0  # written through the transposed layout
    assert base[2, 1] == 99.0
    rev = share(base[::-1, ::-2], True)
    base[3, 5] = 7.5
    assert rev.asnumpy()[0, 0] == 7.5


def test_from_numpy_readonly_source_copy_on_write():
    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False
    x = nd.from_numpy(a)
    np.testing.assert_array_equal(x.asnumpy(), [0, 1, 2, 3])
    x[1] = 10
    x += 1
    np.testing.assert_array_equal(x.asnumpy(), [1, 11, 3, 4])
    np.testing.assert_array_equal(a, [0, 1, 2, 3])  # the NumPy array never changes


def test_from_numpy_unrepresentable_sources_are_copied():
    vals = np.arange(5, dtype=np.float32)
    # Byte-swapped.
    swapped = vals.astype(">f4")
    x = share(swapped, True)
    assert x.dtype == np.float32
    np.testing.assert_array_equal(x.asnumpy(), vals)
    swapped[0] = 42
    assert x.asnumpy()[0] == 0
    # Misaligned.
    raw = bytearray(4 * 5 + 1)
    unaligned = np.frombuffer(raw, dtype=np.float32, count=5, offset=1)
    unaligned[:] = vals
    assert not unaligned.flags.aligned
    x = share(unaligned, True)
    np.testing.assert_array_equal(x.asnumpy(), vals)
    unaligned[2] = -1
    assert x.asnumpy()[2] == 2
    # Strides that are not a multiple of the item size.
    rec = np.zeros(4, dtype=[("a", "u1"), ("b", "<i4")])
    rec["b"] = [1, 2, 3, 4]
    x = share(rec["b"], True)
    np.testing.assert_array_equal(x.asnumpy(), [1, 2, 3, 4])
    # Writable, overlapping (stride 0): a copy, so writes cannot fan out.
    src = np.array([3.0, 4.0])
    over = np.lib.stride_tricks.as_strided(src, shape=(3,), strides=(0,))
    x = share(over, True)
    np.testing.assert_array_equal(x.asnumpy(), [3, 3, 3])
    src[0] = 9
    np.testing.assert_array_equal(x.asnumpy(), [3, 3, 3])


def test_from_numpy_readonly_broadcast_is_shared():
    src = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    b = np.broadcast_to(src, (2, 3))  # read-only, stride 0
    x = share(b, True)
    np.testing.assert_array_equal(x.asnumpy(), [[1, 2, 3], [1, 2, 3]])
    src[1] = 20
    np.testing.assert_array_equal(x.asnumpy(), [[1, 20, 3], [1, 20, 3]])
    e = x.to_numpy()
    assert e.strides == (0, 4) and np.shares_memory(e, src)


def test_from_numpy_bool_with_invalid_bytes_is_normalised():
    raw = np.array([0, 2, 1, 255], dtype=np.uint8)
    b = raw.view(np.bool_)
    x = nd.from_numpy(b)
    assert x.dtype == np.bool_
    np.testing.assert_array_equal(x.asnumpy(), [False, True, True, True])
    assert x.asnumpy().view(np.uint8).tolist() == [0, 1, 1, 1]


def test_from_numpy_zero_copy_false_copies_and_keeps_dtype():
    a = np.arange(3, dtype=np.int64)
    x = nd.from_numpy(a, zero_copy=False)
    assert x.dtype == np.int64
    a[0] = 7
    np.testing.assert_array_equal(x.asnumpy(), [0, 1, 2])


def test_from_numpy_empty_and_scalar():
    e = nd.from_numpy(np.zeros((0, 3), dtype=np.float32))
    assert e.shape == (0, 3) and e.asnumpy().shape == (0, 3)
    s = nd.from_numpy(np.array(2.5))
    assert s.shape == () and s.dtype == np.float64 and float(s.asnumpy()) == 2.5


def test_from_numpy_keeps_source_alive():
    a = np.arange(1000, dtype=np.float32)
    ref = weakref.ref(a)
    x = nd.from_numpy(a)
    del a
    gc.collect()
    assert ref() is not None
    assert x.asnumpy()[999] == 999
    del x
    gc.collect()
    assert ref() is None


def test_from_numpy_bad_inputs():
    with pytest.raises(TypeError, match="expected a numpy.ndarray, got list"):
        nd.from_numpy([1, 2, 3])
    for dt in (np.int16, np.complex64, np.uint16):
        with pytest.raises(DTypeError, match="not supported"):
            nd.from_numpy(np.zeros(3, dtype=dt))
    with pytest.raises(DTypeError):
        nd.from_numpy(np.zeros(3, dtype=np.int16), zero_copy=False)


# --- exports: to_numpy / np.asarray / memoryview -------------------------------------------------


def exporters():
    ex = [("to_numpy", lambda x: x.to_numpy()), ("asarray", np.asarray)]
    if has_buffer_protocol():
        ex.append(("memoryview", lambda x: np.asarray(memoryview(x))))
    return ex


@pytest.mark.parametrize("name,export", exporters())
def test_exports_are_readonly_views(name, export):
    x = nd.array([[1, 2, 3], [4, 5, 6]])
    e = export(x)
    np.testing.assert_array_equal(e, [[1, 2, 3], [4, 5, 6]])
    assert e.dtype == np.float32
    assert not e.flags.writeable
    with pytest.raises(ValueError):
        e[0, 0] = 10
    # Zero-copy: two exports of the same snapshot share memory.
    assert np.shares_memory(e, x.to_numpy())


@pytest.mark.parametrize("name,export", exporters())
@pytest.mark.parametrize("write", ["iadd", "setall", "setitem"])
def test_export_is_a_snapshot(name, export, write):
    x = nd.array([1, 2, 3, 4])
    e = export(x)
    if write == "iadd":
        x += 1
        expect = [2, 3, 4, 5]
    elif write == "setall":
        x[:] = 0
        expect = [0, 0, 0, 0]
    else:
        x[1] = 5
        expect = [1, 5, 3, 4]
    np.testing.assert_array_equal(x.asnumpy(), expect)
    np.testing.assert_array_equal(e, [1, 2, 3, 4])  # the export never changes


def test_export_of_a_view_is_a_snapshot_too():
    x = nd.array([[1, 2], [3, 4]])
    row = x[1]
    e = row.to_numpy()
    x[1] = 9  # written through the array that shares row's cell
    np.testing.assert_array_equal(row.asnumpy(), [9, 9])
    np.testing.assert_array_equal(e, [3, 4])


@pytest.mark.parametrize("dtype", DTYPES)
def test_export_dtypes(dtype):
    a = sample(dtype)
    x = nd.array(a, dtype=dtype)
    for e in (x.to_numpy(), np.asarray(x)):
        assert e.dtype == dtype
        np.testing.assert_array_equal(e, a)


def test_export_strided_layouts():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = nd.array(a)
    t = x.T.to_numpy()
    np.testing.assert_array_equal(t, a.T)
    assert t.strides == (4, 12)
    s = nd.slice_axis(x, axis=1, begin=1, end=3).to_numpy()
    np.testing.assert_array_equal(s, a[:, 1:])
    assert s.strides == (12, 4)
    r = x[::-1].to_numpy()
    np.testing.assert_array_equal(r, a[::-1])
    assert r.strides == (-12, 4)
    b = nd.broadcast_to(nd.array([1, 2, 3]), shape=(4, 3)).to_numpy()
    np.testing.assert_array_equal(b, np.broadcast_to([1, 2, 3], (4, 3)))
    assert b.strides == (0, 4)
    # All views of the same snapshot buffer: no copies.
    assert np.shares_memory(t, x.to_numpy()) and np.shares_memory(r, x.to_numpy())


def test_array_protocol_dtype_and_copy():
    x = nd.array([1.5, 2.5])
    c = np.array(x)  # NumPy asks for a copy: writable
    c[0] = 0
    np.testing.assert_array_equal(x.asnumpy(), [1.5, 2.5])
    d = np.asarray(x, dtype=np.float64)
    assert d.dtype == np.float64 and d.flags.writeable
    np.testing.assert_array_equal(d, [1.5, 2.5])
    i = x.__array__(np.int32)
    assert i.dtype == np.int32 and i.tolist() == [1, 2]
    c2 = x.__array__(copy=True)
    assert c2.flags.writeable and not np.shares_memory(c2, x.to_numpy())
    with pytest.raises(ValueError, match="copy=False"):
        x.__array__(np.float64, copy=False)
    v = x.__array__(copy=False)
    assert not v.flags.writeable
    assert x.asnumpy().flags.writeable  # asnumpy stays a private writable copy


def test_export_keeps_memory_alive_after_del():
    n = 5_000_000
    x = nd.arange(0, n)
    e = x.to_numpy()
    cap = x.__dlpack__(max_version=(1, 0))
    del x
    gc.collect()
    filler = nd.ones((n,))  # reuse of freed memory would show up as ones
    assert e[0] == 0 and e[n - 1] == n - 1 and e[n // 2] == n // 2
    y = nd.from_dlpack(cap)
    del cap
    gc.collect()
    assert y.asnumpy()[n - 1] == n - 1
    assert filler.asnumpy()[0] == 1


def test_export_of_imported_memory_keeps_source_alive():
    a = np.arange(10, dtype=np.float32)
    ref = weakref.ref(a)
    x = nd.from_numpy(a)
    # DLPack first: exporting a buffer a snapshot already holds would copy it (consumers may write).
    cap = x.__dlpack__()
    e = x.to_numpy()
    del a, x
    gc.collect()
    assert ref() is not None and e[9] == 9
    del e
    gc.collect()
    assert ref() is not None  # the unconsumed capsule still holds the snapshot
    del cap  # its destructor runs the deleter
    gc.collect()
    assert ref() is None


@needs_buffer
def test_memoryview_export():
    x = nd.array([[1, 2, 3], [4, 5, 6]], dtype="int64")
    m = memoryview(x)
    assert m.readonly and m.format == "q" and m.itemsize == 8
    assert m.shape == (2, 3) and m.strides == (24, 8)
    assert m.tolist() == [[1, 2, 3], [4, 5, 6]]
    t = memoryview(x.T)
    assert t.strides == (8, 24) and t.tolist() == [[1, 4], [2, 5], [3, 6]]
    assert not t.c_contiguous
    x += 1
    assert m.tolist() == [[1, 2, 3], [4, 5, 6]]  # snapshot
    with pytest.raises(TypeError):
        m[0, 0] = 5
    m.release()
    assert bytes(memoryview(nd.array([1, 2], dtype="uint8"))) == b"\x01\x02"
    b = nd.array([[1, 2], [3, 4]], dtype="uint8")
    simple = array.array("B")
    simple.frombytes(b)  # a PyBUF_SIMPLE request: fine for a C-contiguous array
    assert simple.tolist() == [1, 2, 3, 4]
    with pytest.raises(BufferError, match="not contiguous"):
        array.array("B").frombytes(b.T)  # PyBUF_SIMPLE on a strided array
    u8 = nd.array([1, 2], dtype="uint8")
    with pytest.raises(TypeError, match="read-write"):
        io.BytesIO(b"ab").readinto(u8)  # asks for a writable buffer
    assert u8.asnumpy().tolist() == [1, 2]


# --- DLPack --------------------------------------------------------------------------------------


def test_dlpack_device_and_capsules():
    x = nd.array([1, 2, 3])
    assert x.__dlpack_device__() == (1, 0)
    assert "dltensor" in repr(x.__dlpack__())
    assert "dltensor_versioned" in repr(x.__dlpack__(max_version=(1, 0)))
    with pytest.raises(BufferError, match="stream"):
        x.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="device"):
        x.__dlpack__(dl_device=(2, 0))
    assert "dltensor" in repr(x.__dlpack__(dl_device=(1, 0)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_roundtrip_numpy(dtype):
    a = sample(dtype)
    x = nd.array(a, dtype=dtype)
    y = np.from_dlpack(x)  # ferrograd -> NumPy, zero-copy read-only snapshot
    assert y.dtype == dtype and not y.flags.writeable
    np.testing.assert_array_equal(y, a)
    assert np.shares_memory(y, x.to_numpy())
    x += 1 if dtype != np.bool_ else True
    np.testing.assert_array_equal(y, a)  # snapshot
    b = sample(dtype)
    z = nd.from_dlpack(b)  # NumPy -> ferrograd, shared
    assert z.dtype == dtype
    np.testing.assert_array_equal(z.asnumpy(), b)
    b[0, 1] = b[0, 0]
    assert z.asnumpy()[0, 1] == b[0, 0]


def test_dlpack_strided_roundtrip():
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = nd.from_dlpack(base[:, ::2].T)
    np.testing.assert_array_equal(x.asnumpy(), base[:, ::2].T)
    base[2, 2] = -1
    assert x.asnumpy()[1, 2] == -1
    y = np.from_dlpack(nd.array(base).T)
    assert y.strides == (4, 16)
    np.testing.assert_array_equal(y, base.T)
    r = np.from_dlpack(nd.array(base)[::-1])
    np.testing.assert_array_equal(r, base[::-1])


def test_from_dlpack_writes_are_shared_and_readonly_is_cow():
    a = np.zeros(3, dtype=np.float64)
    x = nd.from_dlpack(a)
    x[1] = 4
    assert a[1] == 4
    ro = np.arange(3.0)
    ro.flags.writeable = False
    y = nd.from_dlpack(ro)  # read-only flag (DLPack 1.0): shared for reading
    y[0] = 8
    np.testing.assert_array_equal(ro, [0, 1, 2])
    np.testing.assert_array_equal(y.asnumpy(), [8, 1, 2])


def test_from_dlpack_ferrograd_to_ferrograd():
    x = nd.array([1, 2, 3])
    y = nd.from_dlpack(x)
    np.testing.assert_array_equal(y.asnumpy(), [1, 2, 3])
    y[0] = 10  # read-only export: copy-on-write, x untouched
    x[1] = 20
    np.testing.assert_array_equal(y.asnumpy(), [10, 2, 3])
    np.testing.assert_array_equal(x.asnumpy(), [1, 20, 3])
    z = nd.from_dlpack(mx.nd.to_dlpack_for_read(x))  # legacy capsule, still a snapshot
    np.testing.assert_array_equal(z.asnumpy(), [1, 20, 3])
    z[2] = 30
    np.testing.assert_array_equal(x.asnumpy(), [1, 20, 3])
    np.testing.assert_array_equal(z.asnumpy(), [1, 20, 30])


def test_from_dlpack_keeps_producer_alive():
    a = np.arange(6, dtype=np.int32)
    ref = weakref.ref(a)
    x = nd.from_dlpack(a)
    del a
    gc.collect()
    assert ref() is not None and x.asnumpy().tolist() == [0, 1, 2, 3, 4, 5]
    del x
    gc.collect()
    assert ref() is None


def test_from_dlpack_bad_inputs():
    x = nd.array([1, 2])
    cap = x.__dlpack__()
    nd.from_dlpack(cap)
    with pytest.raises(MXNetError, match="already consumed"):
        nd.from_dlpack(cap)
    with pytest.raises(ValueError, match="already consumed"):
        nd.from_dlpack(cap)
    with pytest.raises(TypeError, match="__dlpack__"):
        nd.from_dlpack([1, 2])

    class OnGpu:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be called for a non-CPU device")

    with pytest.raises(ValueError, match="only CPU"):
        nd.from_dlpack(OnGpu())


# A hand-made DLPack producer (ctypes) for what NumPy never exports.
class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [
    ("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)
]


def _legacy_capsule(buf, shape, strides, byte_offset=0, device=1, code=2, bits=32):
    """A 'dltensor' capsule over `buf` (kept alive by the caller); returns (capsule, keep, log)."""
    log = []
    shape_arr = (ctypes.c_int64 * len(shape))(*shape)
    strides_arr = (ctypes.c_int64 * len(strides))(*strides)
    deleter = _DELETER(lambda _p: log.append("deleted"))
    m = _Managed()
    m.dl_tensor = _Tensor(
        buf.ctypes.data, _Device(device, 0), len(shape), _DType(code, bits, 1),
        shape_arr, strides_arr, byte_offset,
    )
    m.deleter = deleter
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    cap = new(ctypes.addressof(m), b"dltensor", None)
    return cap, (m, shape_arr, strides_arr, deleter, buf), log


def test_from_dlpack_raw_capsule_with_odd_byte_offset_is_copied():
    raw = np.zeros(4 * 4 + 1, dtype=np.uint8)
    vals = np.array([1.5, -2.0, 3.25, 8.0], dtype=np.float32)
    raw[1:] = vals.view(np.uint8)
    cap, keep, log = _legacy_capsule(raw, shape=[4], strides=[1], byte_offset=1)
    x = nd.from_dlpack(cap)
    np.testing.assert_array_equal(x.asnumpy(), vals)
    assert log == ["deleted"]  # copied, then the producer's memory was released at once
    raw[1:5] = 0
    np.testing.assert_array_equal(x.asnumpy(), vals)
    del keep


def test_from_dlpack_raw_capsule_shared_until_deleted():
    buf = np.arange(6, dtype=np.float32)
    cap, keep, log = _legacy_capsule(buf, shape=[2, 3], strides=[3, 1])
    x = nd.from_dlpack(cap)
    buf[4] = 40
    np.testing.assert_array_equal(x.asnumpy(), [[0, 1, 2], [3, 40, 5]])
    assert log == []
    del x
    gc.collect()
    assert log == ["deleted"]
    del keep


def test_from_dlpack_raw_capsule_bad_device_and_dtype():
    buf = np.zeros(2, dtype=np.float32)
    cap, keep, log = _legacy_capsule(buf, shape=[2], strides=[1], device=2)
    with pytest.raises(ValueError, match="only CPU"):
        nd.from_dlpack(cap)
    cap2, keep2, log2 = _legacy_capsule(buf, shape=[2], strides=[1], code=5, bits=64)  # complex
    with pytest.raises(ValueError, match="unsupported dtype"):
        nd.from_dlpack(cap2)
    assert log == [] and log2 == []  # rejected capsules are not consumed
    del keep, keep2


def test_dlpack_torch_roundtrip():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    x = nd.from_dlpack(t)
    t[0, 0] = 7
    assert x.asnumpy()[0, 0] == 7
    back = torch.from_dlpack(nd.array([[1, 2], [3, 4]]))
    assert back.tolist() == [[1, 2], [3, 4]]


# --- O(1) ----------------------------------------------------------------------------------------


def test_interop_is_constant_time():
    a = np.zeros(100_000_000, dtype=np.float32)  # 400 MB
    x = share(a, True)
    calls = [
        lambda: share(a, True),
        lambda: x.to_numpy(),
        lambda: np.asarray(x),
        lambda: np.from_dlpack(x),
        lambda: nd.from_dlpack(a),
    ]
    for f in calls:
        f()
        t = time.perf_counter()
        for _ in range(100):
            f()
        assert (time.perf_counter() - t) / 100 < 1e-3  # a copy of 400 MB takes ~100 ms
    a[12345] = 3
    assert x.to_numpy()[12345] == 3
