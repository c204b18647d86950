"""nd.save / nd.load of CSRNDArray and RowSparseNDArray in MXNet's sparse record layout, against
files written by MXNet 1.9.1 (tests/data/mxnet_files/sparse_mixed_*.nd, made by
tests/fixtures/gen_mxnet_sparse_files.py, whose docstring records the by-hand check that MXNet
loads ferrograd's files identically).
"""

import json
import pathlib
import time

import ferrograd as mx
import numpy as np
import pytest

DATA = pathlib.Path(__file__).parent / "data" / "mxnet_files"
EXPECTED = json.loads((DATA / "sparse_mixed.json").read_text())["files"]
CLASSES = {"csr": mx.nd.sparse.CSRNDArray, "row_sparse": mx.nd.sparse.RowSparseNDArray,
           "default": mx.nd.NDArray}


def mixed(dtype_csr, dtype_rsp):
    """The arrays the generator saves, built here."""
    csr = mx.nd.sparse.csr_matrix(
        (np.array([1.5, -2.0, 0.0, 4.25], dtype_csr), np.array([0, 3, 2, 1]),
         np.array([0, 2, 3, 3, 4])), shape=(4, 4), dtype=dtype_csr)
    rsp = mx.nd.sparse.row_sparse_array(
        (np.arange(12, dtype=dtype_rsp).reshape(2, 3, 2) - 5, np.array([1, 4])),
        shape=(5, 3, 2), dtype=dtype_rsp)
    dense = mx.nd.array(np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -4.5]], "float32"))
    return csr, rsp, dense


def check(a, want):
    assert type(a) is CLASSES[want["stype"]] and a.stype == want["stype"]
    assert np.dtype(a.dtype) == np.dtype(want["dtype"]) and a.shape == tuple(want["shape"])
    np.testing.assert_array_equal(a.asnumpy().ravel(), want["values"])
    if want["stype"] != "default":
        np.testing.assert_array_equal(a.data.asnumpy().ravel(), want["data"])
        assert a.indices.dtype == np.int64
        np.testing.assert_array_equal(a.indices.asnumpy(), want["indices"])
    if want["stype"] == "csr":
        np.testing.assert_array_equal(a.indptr.asnumpy(), want["indptr"])


def test_mxnet_dict_file_loads_with_stypes_and_components():
    got = mx.nd.load(str(DATA / "sparse_mixed_dict.nd"))
    want = EXPECTED["sparse_mixed_dict.nd"]["arrays"]
    assert list(got) == [w["key"] for w in want] == ["csr", "rsp", "dense"]
    for w in want:
        check(got[w["key"]], w)
    # The explicitly stored zero stays stored, as in MXNet.
    assert got["csr"].data.shape == (4,) and got["csr"].data.asnumpy()[2] == 0
    # Loaded as components only: no dense copy of either sparse array was made.
    assert got["csr"]._pending and got["rsp"]._pending


def test_mxnet_list_file_loads_with_stypes_and_components():
    got = mx.nd.load(str(DATA / "sparse_mixed_list.nd"))
    want = EXPECTED["sparse_mixed_list.nd"]["arrays"]
    assert isinstance(got, list) and len(got) == 3
    for a, w in zip(got, want, strict=True):
        check(a, w)
    assert [a.stype for a in got] == ["row_sparse", "default", "csr"]
    assert got[0].dtype == np.float32 and got[2].dtype == np.float64


def test_saving_the_same_arrays_writes_mxnets_bytes(tmp_path):
    csr, rsp, dense = mixed("float32", "float64")
    mx.nd.save(tmp_path / "d.nd", {"csr": csr, "rsp": rsp, "dense": dense})
    assert (tmp_path / "d.nd").read_bytes() == (DATA / "sparse_mixed_dict.nd").read_bytes()
    csr, rsp, dense = mixed("float64", "float32")
    mx.nd.save(str(tmp_path / "l.nd"), [rsp, dense, csr])
    assert (tmp_path / "l.nd").read_bytes() == (DATA / "sparse_mixed_list.nd").read_bytes()


@pytest.mark.parametrize("name", ["sparse_mixed_dict.nd", "sparse_mixed_list.nd", "sparse.nd"])
def test_load_then_save_gives_back_the_same_bytes(name, tmp_path):
    mx.nd.save(tmp_path / "again.nd", mx.nd.load(str(DATA / name)))
    assert (tmp_path / "again.nd").read_bytes() == (DATA / name).read_bytes()
    back = mx.nd.load_frombuffer((tmp_path / "again.nd").read_bytes())
    first = mx.nd.load(str(DATA / name))
    if isinstance(back, dict):
        assert list(back) == list(first)
        back, first = list(back.values()), list(first.values())
    for b, a in zip(back, first, strict=True):
        assert b.stype == a.stype and b.dtype == a.dtype
        np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())


def test_huge_sparse_arrays_round_trip_without_dense_values(tmp_path):
    n = 10**6  # dense float32 values would take 4 TB
    csr = mx.nd.sparse.csr_matrix(
        (np.array([2.0, -1.0], "float32"), np.array([5, n - 1]), np.r_[0, 1, np.full(n - 1, 2)]),
        shape=(n, n))
    rsp = mx.nd.sparse.row_sparse_array((np.ones((1, n), "float32"), [n - 3]), shape=(n, n))
    start = time.perf_counter()
    mx.nd.save(tmp_path / "big.nd", {"csr": csr, "rsp": rsp})
    back = mx.nd.load(str(tmp_path / "big.nd"))
    assert time.perf_counter() - start < 20
    assert back["csr"].shape == (n, n) and back["rsp"].shape == (n, n)
    np.testing.assert_array_equal(back["csr"].data.asnumpy(), [2, -1])
    np.testing.assert_array_equal(back["csr"].indices.asnumpy(), [5, n - 1])
    np.testing.assert_array_equal(back["csr"].indptr.asnumpy()[:3], [0, 1, 2])
    np.testing.assert_array_equal(back["rsp"].indices.asnumpy(), [n - 3])
    np.testing.assert_array_equal(back["rsp"].data.asnumpy(), np.ones((1, n)))


def test_sparse_array_written_in_place_saves_its_current_values(tmp_path):
    rsp = mx.nd.sparse.row_sparse_array((np.array([[1.0, 2.0]], "float32"), [1]), shape=(3, 2))
    rsp.wait_to_read()
    # A native in-place write (as an optimizer's fused update does) changes the dense values.
    mx.nd.NDArray.__setitem__(rsp, slice(None), mx.nd.array([[0, 0], [1, 2], [3, 0]]))
    mx.nd.save(tmp_path / "w.nd", [rsp])
    (back,) = mx.nd.load(str(tmp_path / "w.nd"))
    assert back.stype == "row_sparse"
    np.testing.assert_array_equal(back.indices.asnumpy(), [1, 2])
    np.testing.assert_array_equal(back.asnumpy(), [[0, 0], [1, 2], [3, 0]])


def patched(name, old, new):
    raw = (DATA / name).read_bytes()
    old, new = np.array(old, "<i8").tobytes(), np.array(new, "<i8").tobytes()
    assert raw.count(old) == 1
    return raw.replace(old, new)


@pytest.mark.parametrize("old,new,match", [
    ([0, 3, 2, 1], [0, 7, 2, 1], r"column index 7 of row 0 is outside 0\.\.4"),
    ([0, 3, 2, 1], [3, 0, 2, 1], r"column indices of row 0 must be sorted and unique"),
    ([0, 2, 3, 3, 4], [0, 2, 1, 3, 4], r"row pointers decrease at row 1 \(2 then 1\)"),
    ([0, 2, 3, 3, 4], [1, 2, 3, 3, 4],
     r"row pointers run from 1 to 4, not from 0 to the number of values \(4\)"),
])
def test_corrupt_csr_record_names_file_and_key(old, new, match, tmp_path):
    path = tmp_path / "bad.nd"
    path.write_bytes(patched("sparse_mixed_dict.nd", old, new))
    with pytest.raises(mx.MXNetError, match=r"nd\.load: csr array 'csr' in file '.*bad\.nd' "
                       r"\(record at byte offset \d+\) is corrupt: " + match):
        mx.nd.load(str(path))


@pytest.mark.parametrize("new,match", [
    ([4, 1], r"row indices must be sorted and unique, got 4 then 1"),
    ([1, 5], r"row index 5 is outside 0\.\.5"),
])
def test_corrupt_row_sparse_record_names_buffer_and_key(new, match):
    raw = patched("sparse_mixed_dict.nd", [1, 4], new)
    with pytest.raises(mx.MXNetError, match=r"row_sparse array 'rsp' in the buffer .*" + match):
        mx.nd.load_frombuffer(raw)


@pytest.mark.parametrize("name", ["sparse_mixed_dict.nd", "sparse_mixed_list.nd"])
def test_every_truncation_of_a_sparse_file_raises_with_offset(name, tmp_path):
    raw = (DATA / name).read_bytes()
    for n in range(len(raw)):
        with pytest.raises(mx.MXNetError, match=r"the buffer .*byte offset \d+"):
            mx.nd.load_frombuffer(raw[:n])
    (tmp_path / "cut.nd").write_bytes(raw[:-5])
    with pytest.raises(mx.MXNetError, match=r"cut\.nd.*byte offset"):
        mx.nd.load(str(tmp_path / "cut.nd"))


def test_row_sparse_parameter_saves_and_loads_sparse(tmp_path):
    p = mx.gluon.Parameter("w", shape=(4, 2), stype="row_sparse")
    p.initialize(init=mx.init.Constant(0.5))
    mx.gluon.Trainer([p], "sgd")
    mx.nd.save(tmp_path / "p.params", {"w": p.row_sparse_data(mx.nd.array([0, 1, 2, 3]))})
    (w,) = mx.nd.load(str(tmp_path / "p.params")).values()
    assert w.stype == "row_sparse"
    np.testing.assert_array_equal(w.asnumpy(), np.full((4, 2), 0.5))
