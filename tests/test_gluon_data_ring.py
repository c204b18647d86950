"""DataLoader workers' replies through shared memory (``_reply_ring``), their credit (a worker
stays within ``prefetch`` batches of what the main process has read) and the tasks of closed
iterations, which workers skip."""

import multiprocessing
import time

import numpy as np
import pytest
from ferrograd import gluon, nd
from ferrograd import numpy as mx_np
from ferrograd.gluon.data import _reply_ring, _shared_batch


def _inline(array, np_array=False):
    return _shared_batch.InlineArray(np.asarray(array), np_array)


@pytest.mark.skipif(not _reply_ring.ORDERED_STORES, reason="replies travel in the pipe here")
def test_batches_round_trip_through_a_slot():
    ring = _reply_ring.Ring(2)
    arrays = [np.random.RandomState(0).rand(3, 4).astype(np.float32),
              np.arange(5, dtype=np.int64), np.array([True, False]),
              np.zeros((0, 3), dtype=np.uint8), np.float16([[1.5], [2.5]]),
              np.arange(24, dtype=np.float64).reshape(2, 3, 4)]
    assert ring.write(0, (7, 0), [_inline(a) for a in arrays])
    assert ring.ready(0) and not ring.ready(1)
    assert ring.key(0) == ((7, 0), _reply_ring.ARRAYS)
    out = ring.take(0)
    assert isinstance(out, list) and len(out) == len(arrays)
    for got, want in zip(out, arrays, strict=True):
        assert isinstance(got, nd.NDArray) and got.dtype == want.dtype
        np.testing.assert_array_equal(got.asnumpy(), want)
    # The next reply in the other slot, then the first slot again with another layout; the
    # taken arrays are copies, so reusing the slot does not change them.
    assert ring.write(1, (7, 1), (_inline([1.0, 2.0], np_array=True), _inline([3], False)))
    pair = ring.take(1)
    assert isinstance(pair, tuple) and isinstance(pair[0], mx_np.ndarray)
    assert ring.write(2, (7, 2), _inline(np.full((2, 2), 9, dtype=np.int32)))
    single = ring.take(2)
    assert isinstance(single, nd.NDArray) and single.asnumpy().tolist() == [[9, 9], [9, 9]]
    np.testing.assert_array_equal(out[0].asnumpy(), arrays[0])


def test_what_does_not_fit_a_slot_goes_through_the_pipe():
    ring = _reply_ring.Ring(1)
    too_many = [_inline([i]) for i in range(9)]
    assert not ring.write(0, (0, 0), too_many)
    assert not ring.write(0, (0, 0), [_inline(np.zeros(3, dtype=np.complex64))])
    assert not ring.write(0, (0, 0), {"a": _inline([1])})
    assert not ring.write(0, (0, 0), "text")
    assert not ring.ready(0)
    ring.mark_pipe(0, (3, 4))
    assert ring.ready(0) and ring.key(0) == ((3, 4), _reply_ring.PIPE)


class _Counted(gluon.data.Dataset):
    """Counts the samples read (in every process) and takes ``delay`` seconds per sample."""

    def __init__(self, n, delay=0.0):
        self._n = n
        self._delay = delay
        self.count = multiprocessing.get_context("fork").Value("i", 0)

    def __len__(self):
        return self._n

    def __getitem__(self, idx):
        with self.count.get_lock():
            self.count.value += 1
        if self._delay:
            time.sleep(self._delay)
        return np.float32(idx)


def test_workers_stay_within_prefetch_of_what_is_read():
    ds = _Counted(64)
    loader = gluon.data.DataLoader(ds, batch_size=1, num_workers=2, prefetch=3)
    it = iter(loader)
    assert next(it).asnumpy().tolist() == [0.0]   # batch 0, loaded here
    time.sleep(0.5)
    # 2 slots per worker (prefetch 3 past the next batch, shared by 2 workers): 1 + 4 samples,
    # although 32 tasks are queued.
    assert ds.count.value == 5
    assert [next(it).asnumpy()[0] for _ in range(3)] == [1.0, 2.0, 3.0]
    time.sleep(0.5)
    assert ds.count.value == 8
    assert [b.asnumpy()[0] for b in it] == list(range(4, 64))


def test_workers_skip_the_queued_tasks_of_a_closed_iteration():
    ds = _Counted(200, delay=0.002)
    loader = gluon.data.DataLoader(ds, batch_size=1, num_workers=2, prefetch=1)
    first = iter(loader)
    next(first)
    first.close()
    second = iter(loader)
    got = [next(second).asnumpy()[0] for _ in range(4)]
    assert got == [0.0, 1.0, 2.0, 3.0]
    time.sleep(0.3)
    # At most a slot per worker and the sample in progress of the first iteration were read
    # besides these; without skipping, its 32 queued tasks would all have run first.
    assert ds.count.value <= 1 + 4 + 4 + 4


def test_batches_arrive_through_the_pipe_where_stores_may_be_reordered(monkeypatch):
    monkeypatch.setattr(_reply_ring, "ORDERED_STORES", False)
    images = nd.array(np.arange(10 * 2 * 2 * 1).reshape(10, 2, 2, 1), dtype=np.uint8)
    ds = gluon.data.ArrayDataset(images, np.arange(10, dtype=np.int32))
    batches = list(gluon.data.DataLoader(ds, batch_size=4, num_workers=2))
    np.testing.assert_array_equal(np.concatenate([b[1].asnumpy() for b in batches]),
                                  np.arange(10))
    np.testing.assert_array_equal(np.concatenate([b[0].asnumpy() for b in batches]),
                                  images.asnumpy())
