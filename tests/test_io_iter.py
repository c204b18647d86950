"""mx.io: DataDesc, DataBatch, NDArrayIter (last-batch rules as MXNet 1.9.1 yields them),
ResizeIter, PrefetchingIter, CSVIter."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import nd


def _epochs(it, n_epochs=3):
    """Per epoch: a list of (first data column as ints, pad) per batch."""
    out = []
    for _ in range(n_epochs):
        out.append([(b.data[0].asnumpy()[:, 0].astype(int).tolist(), b.pad) for b in it])
        it.reset()
    return out


def _column_iter(n, bs, handle):
    return mx.io.NDArrayIter(np.arange(n).reshape(n, 1), np.arange(n) * 10, bs,
                             last_batch_handle=handle)


def test_pad_fills_from_the_start():
    epoch = [([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0), ([8, 9, 0, 1], 2)]
    assert _epochs(_column_iter(10, 4, "pad")) == [epoch] * 3


def test_pad_repeats_data_smaller_than_the_batch():
    (batch,), = _epochs(_column_iter(3, 7, "pad"), 1)
    assert batch == ([0, 1, 2, 0, 1, 2, 0], 4)
    (batch,), = _epochs(_column_iter(10, 25, "pad"), 1)
    assert batch == (list(range(10)) * 2 + [0, 1, 2, 3, 4], 15)


def test_discard_drops_the_incomplete_batch():
    assert _epochs(_column_iter(10, 4, "discard")) == [[([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0)]] * 3
    assert _epochs(_column_iter(3, 7, "discard")) == [[], [], []]


def test_roll_over_carries_the_rest_into_the_next_epoch():
    assert _epochs(_column_iter(10, 4, "roll_over")) == [
        [([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0)],
        [([8, 9, 0, 1], 2), ([2, 3, 4, 5], 0), ([6, 7, 8, 9], 0)],
        [([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0)]]
    assert _epochs(_column_iter(5, 3, "roll_over")) == [
        [([0, 1, 2], 0)], [([3, 4, 0], 2), ([1, 2, 3], 0)], [([4, 0, 1], 1), ([2, 3, 4], 0)]]


def test_roll_over_labels_follow_their_samples():
    it = _column_iter(10, 4, "roll_over")
    for _ in range(3):
        for b in it:
            np.testing.assert_array_equal(b.label[0].asnumpy(), b.data[0].asnumpy()[:, 0] * 10)
        it.reset()


def test_hard_reset_forgets_rolled_over_samples():
    it = _column_iter(10, 4, "roll_over")
    list(it)
    it.hard_reset()
    assert it.next().data[0].asnumpy()[:, 0].tolist() == [0, 1, 2, 3]


def test_names_shapes_and_dtypes():
    it = mx.io.NDArrayIter({"b": np.zeros((5, 2)), "a": np.ones((5, 3), np.float64)},
                           np.arange(5), 2)
    assert [(d.name, d.shape, d.dtype) for d in it.provide_data] == [
        ("a", (2, 3), np.float32), ("b", (2, 2), np.float32)]
    assert [(d.name, d.shape) for d in it.provide_label] == [("softmax_label", (2,))]
    batch = it.next()
    assert batch.data[0].dtype == np.float32 and batch.label[0].dtype == np.float32
    assert batch.index is None and batch.pad == 0
    it = mx.io.NDArrayIter([np.zeros((4, 2)), np.ones((4, 3))], None, 2, data_name="x")
    assert [d.name for d in it.provide_data] == ["_0_x", "_1_x"]
    assert it.provide_label == [] and it.next().label == []
    it = mx.io.NDArrayIter(nd.arange(8, dtype="int32").reshape((4, 2)), label_name="y",
                           label=np.zeros(4), batch_size=3)
    assert it.provide_data[0].dtype == np.int32 and it.provide_label[0].name == "y"


def test_shuffle_keeps_data_and_label_together():
    np.random.seed(3)
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    it = mx.io.NDArrayIter(x, x[:, 0] * 100, 1, shuffle=True)
    order = it.idx.copy()
    assert sorted(order.tolist()) == list(range(6)) and order.tolist() != list(range(6))
    for i, b in enumerate(it):
        np.testing.assert_array_equal(b.data[0].asnumpy()[0], x[order[i]])
        assert b.label[0].asnumpy()[0] == x[order[i], 0] * 100
    it.reset()
    seen = sorted(float(b.data[0].asnumpy()[0, 0]) for b in it)
    assert seen == sorted(x[:, 0].tolist())


def test_batch_axis_from_layout():
    x = np.arange(2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)
    it = mx.io.NDArrayIter(x, batch_size=2, layout="TNC")
    assert it.provide_data[0].shape == (2, 2, 3) and it.provide_data[0].layout == "TNC"
    batches = [b.data[0].asnumpy() for b in it]
    np.testing.assert_array_equal(batches[0], x[:, 0:2])
    np.testing.assert_array_equal(batches[2], np.concatenate([x[:, 4:5], x[:, 0:1]], axis=1))


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match="last_batch_handle"):
        mx.io.NDArrayIter(np.zeros((4, 2)), last_batch_handle="wrap")
    with pytest.raises(ValueError, match="'softmax_label' has 3 samples"):
        mx.io.NDArrayIter(np.zeros((4, 2)), np.zeros(3), 2)
    # more labels than samples: the extra ones are never read, as in MXNet
    it = mx.io.NDArrayIter(np.zeros((4, 2)), np.arange(6), 4)
    assert it.next().label[0].asnumpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="roll_over"):
        mx.io.NDArrayIter(np.zeros((3, 2)), batch_size=7, last_batch_handle="roll_over")
    with pytest.raises(TypeError, match="NDArrayIter"):
        mx.io.NDArrayIter(42)
    with pytest.raises(ValueError, match="batch_size"):
        mx.io.NDArrayIter(np.zeros((3, 2)), batch_size=0)


def test_data_batch_and_data_desc():
    batch = mx.io.DataBatch(data=[nd.ones((2, 3)), nd.ones((7, 8))], label=[nd.ones((4, 5))])
    assert str(batch) == "DataBatch: data shapes: [(2, 3), (7, 8)] label shapes: [(4, 5)]"
    assert str(mx.io.DataBatch([nd.ones((2, 3))])) == \
        "DataBatch: data shapes: [(2, 3)] label shapes: None"
    with pytest.raises(TypeError, match="list of NDArrays"):
        mx.io.DataBatch(nd.ones((2, 3)))
    d = mx.io.DataDesc("x", (4, 2), "float16", layout="NC")
    assert d == ("x", (4, 2)) and d.dtype == "float16" and d.layout == "NC"
    assert repr(mx.io.DataDesc("x", (1, 2))) == "DataDesc[x,(1, 2),<class 'numpy.float32'>,NCHW]"
    assert [mx.io.DataDesc.get_batch_axis(s) for s in (None, "NCHW", "TNC", "CHW")] == [0, 0, 1, -1]
    descs = mx.io.DataDesc.get_list([("a", (1,)), ("b", (2,))], [("a", "int32"), ("b", "int8")])
    assert [(d.name, d.dtype) for d in descs] == [("a", "int32"), ("b", "int8")]


class _Countdown(mx.io.DataIter):
    """A hand-written iterator: three batches of one value each."""

    def __init__(self):
        super().__init__(batch_size=1)
        self.i = 0
        self.provide_data = [mx.io.DataDesc("data", (1,))]
        self.provide_label = []

    def reset(self):
        self.i = 0

    def iter_next(self):
        self.i += 1
        return self.i <= 3

    def getdata(self):
        return [nd.array([self.i])]

    def getlabel(self):
        return []

    def getpad(self):
        return 0


def test_data_iter_protocol_and_resize():
    assert [b.data[0].asscalar() for b in _Countdown()] == [1, 2, 3]
    resized = mx.io.ResizeIter(_Countdown(), 5)
    assert [b.data[0].asscalar() for b in resized] == [1, 2, 3, 1, 2]
    resized.reset()
    assert [b.data[0].asscalar() for b in resized] == [1, 2, 3, 1, 2]
    carry_on = mx.io.ResizeIter(_Countdown(), 2, reset_internal=False)
    list(carry_on)
    carry_on.reset()
    assert [b.data[0].asscalar() for b in carry_on] == [3, 1]


def test_prefetching_merges_and_renames():
    a = mx.io.NDArrayIter(np.arange(6).reshape(6, 1), np.arange(6), 2)
    b = mx.io.NDArrayIter(np.arange(6).reshape(6, 1) * 10, np.arange(6), 2)
    it = mx.io.PrefetchingIter([a, b], rename_data=[{"data": "x"}, {"data": "y"}])
    assert [d.name for d in it.provide_data] == ["x", "y"]
    for _ in range(2):
        got = [(bt.data[0].asnumpy().ravel().tolist(), bt.data[1].asnumpy().ravel().tolist(),
                len(bt.label)) for bt in it]
        assert got == [([0, 1], [0, 10], 2), ([2, 3], [20, 30], 2), ([4, 5], [40, 50], 2)]
        it.reset()
    it.close()


def test_prefetching_passes_errors_on():
    class Broken(_Countdown):
        def getdata(self):
            raise OSError("disk gone")

    it = mx.io.PrefetchingIter(Broken())
    with pytest.raises(OSError, match="disk gone"):
        it.next()
    it.close()


@pytest.fixture
def csv_files(tmp_path):
    data, label = tmp_path / "d.csv", tmp_path / "l.csv"
    np.savetxt(data, np.arange(7 * 6).reshape(7, 6), delimiter=",", fmt="%g")
    np.savetxt(label, np.arange(7), delimiter=",", fmt="%g")
    return str(data), str(label)


def _csv_epochs(it, n=2):
    out = []
    for _ in range(n):
        out.append([(b.data[0].asnumpy()[:, 0, 0].astype(int).tolist(),
                     b.label[0].asnumpy().astype(int).tolist(), b.pad) for b in it])
        it.reset()
    return out


def test_csv_round_batch_wraps_and_continues(csv_files):
    it = mx.io.CSVIter(data_csv=csv_files[0], data_shape=(2, 3), label_csv=csv_files[1],
                       batch_size=3)
    assert [(d.name, d.shape) for d in it.provide_data] == [("data", (3, 2, 3))]
    assert [(d.name, d.shape) for d in it.provide_label] == [("softmax_label", (3,))]
    assert _csv_epochs(it) == [
        [([0, 6, 12], [0, 1, 2], 0), ([18, 24, 30], [3, 4, 5], 0), ([36, 0, 6], [6, 0, 1], 2)],
        [([12, 18, 24], [2, 3, 4], 0), ([30, 36, 0], [5, 6, 0], 1)]]


def test_csv_without_round_batch_keeps_the_previous_rows(csv_files):
    it = mx.io.CSVIter(data_csv=csv_files[0], data_shape=(2, 3), label_csv=csv_files[1],
                       batch_size=3, round_batch=False)
    epoch = [([0, 6, 12], [0, 1, 2], 0), ([18, 24, 30], [3, 4, 5], 0),
             ([36, 24, 30], [6, 4, 5], 2)]
    assert _csv_epochs(it) == [epoch, epoch]


def test_csv_labels_dtypes_and_errors(csv_files, tmp_path):
    it = mx.io.CSVIter(data_csv=csv_files[0], data_shape=(6,), batch_size=4)
    batch = it.next()
    assert batch.label[0].asnumpy().tolist() == [0, 0, 0, 0]
    # a single array, as MXNet's C++ iterators return
    np.testing.assert_array_equal(it.getdata().asnumpy(), np.arange(24).reshape(4, 6))
    assert it.getindex().tolist() == [0, 1, 2, 3] and it.getpad() == 0
    it = mx.io.CSVIter(data_csv=csv_files[0], data_shape=(6,), label_csv=csv_files[0],
                       label_shape=(6,), batch_size=4)
    assert it.next().label[0].shape == (4, 6) and it.provide_label[0].shape == (4, 6)
    big = tmp_path / "big.csv"
    big.write_text("2147483648,1\n" * 3)
    it = mx.io.CSVIter(data_csv=str(big), data_shape=(2,), batch_size=3, dtype="int64")
    arr = it.next().data[0]
    assert arr.dtype == np.int64 and int(arr.asnumpy()[0, 0]) == 2147483648
    with pytest.raises(mx.MXNetError, match="no such file"):
        mx.io.CSVIter(data_csv=str(tmp_path / "none.csv"), data_shape=(6,), batch_size=2)
    with pytest.raises(mx.MXNetError, match=r"6 values but the specified shape \(5,\)"):
        mx.io.CSVIter(data_csv=csv_files[0], data_shape=(5,), batch_size=2)
    with pytest.raises(ValueError, match="dtype"):
        mx.io.CSVIter(data_csv=csv_files[0], data_shape=(6,), batch_size=2, dtype="float16")


class _LazyRows:
    """Stands in for an h5py Dataset: rows read on demand, only by increasing index lists."""

    __module__ = "h5py._hl.dataset"

    def __init__(self, array):
        self.array, self.shape, self.dtype = array, array.shape, array.dtype
        self.reads = []

    def __getitem__(self, rows):
        if isinstance(rows, list):
            assert rows == sorted(rows), "h5py needs increasing indices"
            self.reads.append(list(rows))
        return self.array[rows]


def test_lazy_sources_are_read_by_rows_in_the_iterators_order():
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    lazy = _LazyRows(x)
    it = mx.io.NDArrayIter(lazy, batch_size=2)
    got = [b.data[0].asnumpy() for b in it]
    np.testing.assert_array_equal(np.concatenate(got), np.concatenate([x, x[:1]]))
    assert lazy.reads[:2] == [[0, 1], [2, 3]]
    it.idx = np.array([4, 2, 0, 3, 1])  # an order that is not increasing
    it.reset()
    np.testing.assert_array_equal(it.next().data[0].asnumpy(), x[[4, 2]])
    assert lazy.reads[-1] == [2, 4]


def test_prefetching_single_iterator_and_labels_renamed():
    base = mx.io.NDArrayIter(np.arange(4).reshape(4, 1), np.arange(4), 2)
    it = mx.io.PrefetchingIter(base, rename_label=[{"softmax_label": "y"}])
    assert it.batch_size == 2 and [d.name for d in it.provide_label] == ["y"]
    assert [b.label[0].asnumpy().tolist() for b in it] == [[0, 1], [2, 3]]
    with pytest.raises(StopIteration):
        it.next()
    it.close()
    with pytest.raises(ValueError, match="rename_data has 2 entries for 1 iterators"):
        mx.io.PrefetchingIter(base, rename_data=[{}, {}])
