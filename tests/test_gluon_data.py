"""gluon.data: datasets and their views, samplers, DataLoader (same process, threads and worker
processes over shared memory), vision transforms against NumPy, and the MNIST/CIFAR readers on
small files in the standard formats written here."""

import gzip
import os
import struct
import time

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import gluon, nd
from ferrograd.gluon.data import vision
from ferrograd.gluon.data.vision import transforms as T

# ---- datasets ---------------------------------------------------------------------------------


def test_array_dataset_and_views():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = nd.arange(10)
    ds = gluon.data.ArrayDataset(x, y)
    assert len(ds) == 10
    sample, label = ds[3]
    np.testing.assert_array_equal(sample, [6, 7])
    assert label == 3                      # 1-D NDArrays give scalars
    doubled = ds.transform_first(lambda a: a * 2)
    np.testing.assert_array_equal(doubled[3][0], [12, 14])
    assert doubled[3][1] == 3
    summed = ds.transform(lambda a, b: float(a.sum() + b))
    assert summed[3] == 16.0
    eager = ds.transform(lambda a, b: b, lazy=False)
    assert isinstance(eager, gluon.data.SimpleDataset) and list(eager) == list(range(10))
    with pytest.raises(ValueError, match="same length"):
        gluon.data.ArrayDataset(x, np.arange(3))


def test_filter_shard_take_sample():
    ds = gluon.data.SimpleDataset(list(range(11)))
    assert list(ds.filter(lambda v: v % 3 == 0)) == [0, 3, 6, 9]
    shards = [list(ds.shard(4, i)) for i in range(4)]
    assert shards == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10]]
    assert list(ds.take(3)) == [0, 1, 2]
    assert len(ds.take(None)) == 11 and len(ds.take(100)) == 11
    assert list(ds.sample(gluon.data.SequentialSampler(2, start=5))) == [5, 6]
    with pytest.raises(ValueError, match="index"):
        ds.shard(2, 2)
    with pytest.raises(TypeError, match="Sampler"):
        ds.sample([1, 2])


# ---- samplers ---------------------------------------------------------------------------------


def test_samplers():
    assert list(gluon.data.SequentialSampler(4)) == [0, 1, 2, 3]
    np.random.seed(0)
    perm = list(gluon.data.RandomSampler(6))
    assert sorted(perm) == list(range(6)) and perm != list(range(6))
    assert all(type(i) is int for i in perm)  # Python ints: cheap to send to workers
    seq = gluon.data.SequentialSampler(7)
    keep = gluon.data.BatchSampler(seq, 3, "keep")
    assert list(keep) == [[0, 1, 2], [3, 4, 5], [6]] and len(keep) == 3
    discard = gluon.data.BatchSampler(seq, 3, "discard")
    assert list(discard) == [[0, 1, 2], [3, 4, 5]] and len(discard) == 2
    roll = gluon.data.BatchSampler(seq, 3, "rollover")
    assert list(roll) == [[0, 1, 2], [3, 4, 5]]
    assert len(roll) == 2                    # the leftover 6 joins the next pass
    assert list(roll) == [[6, 0, 1], [2, 3, 4]]
    assert len(roll) == 3                    # now 5 and 6 are carried
    assert list(roll) == [[5, 6, 0], [1, 2, 3], [4, 5, 6]]
    with pytest.raises(ValueError, match="last_batch"):
        gluon.data.BatchSampler(seq, 3, "pad")


# ---- DataLoader -------------------------------------------------------------------------------


def _digits():
    sklearn = pytest.importorskip("sklearn.datasets")
    digits = sklearn.load_digits()
    images = digits.images.astype(np.uint8)[:, :, :, None]         # N, 8, 8, 1 as HWC
    return gluon.data.ArrayDataset(nd.array(images, dtype=np.uint8),
                                   digits.target.astype(np.int32))


def _collect(loader):
    return [[part.asnumpy() for part in batch] for batch in loader]


def test_default_batchify():
    ds = gluon.data.SimpleDataset([(nd.array([1, 2]), 0), (nd.array([3, 4]), 1)])
    data, label = gluon.data.DataLoader(ds, batch_size=2).__iter__().__next__()
    np.testing.assert_array_equal(data.asnumpy(), [[1, 2], [3, 4]])
    assert label.dtype == np.int64 and list(label.asnumpy()) == [0, 1]
    with pytest.raises(ValueError, match="batch_size"):
        gluon.data.DataLoader(ds)
    with pytest.raises(ValueError, match="shuffle"):
        gluon.data.DataLoader(ds, batch_size=1, shuffle=True,
                              sampler=gluon.data.SequentialSampler(2))
    with pytest.raises(ValueError, match="batch_sampler"):
        gluon.data.DataLoader(ds, batch_size=1,
                              batch_sampler=gluon.data.BatchSampler(range(2), 1))


def test_last_batch_modes():
    ds = gluon.data.ArrayDataset(np.arange(10, dtype=np.float32))
    sizes = {mode: [b.shape[0] for b in gluon.data.DataLoader(ds, 4, last_batch=mode)]
             for mode in ("keep", "discard", "rollover")}
    assert sizes == {"keep": [4, 4, 2], "discard": [4, 4], "rollover": [4, 4]}


@pytest.mark.parametrize("thread_pool", [False, True])
def test_workers_return_the_same_batches(thread_pool):
    transform = T.Compose([T.ToTensor(), T.Normalize(0.13, 0.31)])
    ds = _digits().transform_first(transform)
    serial = _collect(gluon.data.DataLoader(ds, batch_size=64))
    parallel = _collect(gluon.data.DataLoader(ds, batch_size=64, num_workers=2,
                                              thread_pool=thread_pool))
    assert len(serial) == len(parallel) == 29
    for a, b in zip(serial, parallel, strict=True):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
    assert serial[0][0].shape == (64, 1, 8, 8) and serial[0][0].dtype == np.float32


def _segments():
    return {n for n in os.listdir("/dev/shm") if n.startswith("psm_")}


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs POSIX shared memory")
def test_worker_batches_are_ndarrays_over_shared_memory():
    before = _segments()
    ds = gluon.data.ArrayDataset(np.arange(24, dtype=np.float64).reshape(12, 2),
                                 np.arange(12))
    loader = gluon.data.DataLoader(ds, batch_size=5, num_workers=2, shuffle=False)
    batches = list(loader)
    assert [b[0].shape for b in batches] == [(5, 2), (5, 2), (2, 2)]
    data = np.concatenate([b[0].asnumpy() for b in batches])
    np.testing.assert_array_equal(data, np.arange(24).reshape(12, 2))
    assert batches[0][0].dtype == np.float64
    assert isinstance(batches[0][1], nd.NDArray)
    # The batch is an ordinary array: it can be written to and used in ops.
    batches[0][0][:] = 1
    assert batches[0][0].sum().asscalar() == 10
    # Every segment was unlinked once mapped; an abandoned iterator frees its batches in flight.
    it = iter(gluon.data.DataLoader(ds, batch_size=1, num_workers=2, prefetch=6))
    next(it)
    it.close()
    deadline = time.monotonic() + 10
    while _segments() - before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _segments() - before


def test_custom_batchify_and_big_batches_in_workers():
    def batchify(samples):
        return nd.array(np.stack(samples)) * 2, len(samples)

    ds = gluon.data.SimpleDataset([np.full((300, 300), i, dtype=np.float32) for i in range(6)])
    loader = gluon.data.DataLoader(ds, batch_size=3, num_workers=2, batchify_fn=batchify)
    out = list(loader)
    assert [n for _, n in out] == [3, 3]
    # 270K elements: large enough for the parallel kernels, which must not hang after fork.
    np.testing.assert_array_equal(out[1][0].asnumpy()[:, 0, 0], [6, 8, 10])
    assert (out[1][0] + 1).sum().asscalar() == pytest.approx(3 * 90000 + 2 * 90000 * 12)


class _Exploding(gluon.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, idx):
        if idx == 5:
            raise KeyError(f"sample {idx} is broken")
        return np.float32(idx)


def test_worker_error_reaches_main_process_with_traceback():
    loader = gluon.data.DataLoader(_Exploding(), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(KeyError, match="sample 5 is broken") as info:
        list(loader)
    assert time.monotonic() - start < 30
    cause = info.value.__cause__
    assert cause is not None and "__getitem__" in str(cause)   # the worker's traceback


def test_workers_end_with_the_loader():
    loader = gluon.data.DataLoader(gluon.data.SimpleDataset(list(range(40))), batch_size=4,
                                   num_workers=2)
    it = iter(loader)
    next(it)
    procs = list(loader._worker_pool.processes)
    assert all(p.is_alive() for p in procs)
    del it
    del loader
    import gc
    gc.collect()
    deadline = time.monotonic() + 10
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(p.is_alive() for p in procs)


def test_a_killed_worker_is_reported_not_waited_for():
    import signal
    loader = gluon.data.DataLoader(_Slow(), batch_size=1, num_workers=1, timeout=60)
    it = iter(loader)
    next(it)  # the first batch is loaded in this process
    os.kill(loader._worker_pool.processes[0].pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"worker process 0 \(pid \d+\) exited unexpectedly"):
        next(it)
    assert time.monotonic() - start < 5


class _WhoLoads(gluon.data.Dataset):
    def __len__(self):
        return 24

    def __getitem__(self, idx):
        return np.array([idx, os.getpid()], dtype=np.int64)


def test_first_batch_of_each_pass_is_loaded_here_and_the_rest_in_workers():
    loader = gluon.data.DataLoader(_WhoLoads(), batch_size=4, num_workers=2)
    workers = {p.pid for p in loader._worker_pool.processes}
    for _ in range(2):
        batches = [b.asnumpy() for b in loader]
        np.testing.assert_array_equal(np.concatenate(batches)[:, 0], np.arange(24))
        assert set(batches[0][:, 1]) == {os.getpid()}
        loaders = {int(pid) for b in batches[1:] for pid in b[:, 1]}
        assert loaders == workers  # batch k > 0 from worker k % 2: both take part


def test_worker_batches_equal_same_process_batches():
    images = np.random.RandomState(3).randint(0, 255, (30, 5, 5, 3)).astype(np.uint8)
    ds = gluon.data.ArrayDataset(nd.array(images, dtype=np.uint8), np.arange(30) % 7)
    from ferrograd.gluon.data.vision import transforms
    ds = ds.transform_first(transforms.Compose([transforms.ToTensor(),
                                                 transforms.Normalize(0.5, 0.25)]))
    here = list(gluon.data.DataLoader(ds, batch_size=8, num_workers=0))
    there = list(gluon.data.DataLoader(ds, batch_size=8, num_workers=2))
    assert len(here) == len(there) == 4
    for (x0, y0), (x1, y1) in zip(here, there, strict=True):
        assert x0.dtype == x1.dtype and y0.dtype == y1.dtype
        np.testing.assert_array_equal(x0.asnumpy(), x1.asnumpy())
        np.testing.assert_array_equal(y0.asnumpy(), y1.asnumpy())


def test_interleaved_iterators_each_get_their_own_batches():
    ds = gluon.data.SimpleDataset(list(range(12)))
    loader = gluon.data.DataLoader(ds, batch_size=2, num_workers=2)
    a, b = iter(loader), iter(loader)
    got_a, got_b = [], []
    for _ in range(6):
        got_b.append(next(b).asnumpy().tolist())
        got_a.append(next(a).asnumpy().tolist())
    expected = [[2 * i, 2 * i + 1] for i in range(6)]
    assert got_a == expected and got_b == expected


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs POSIX shared memory")
def test_big_batches_travel_in_shared_memory_and_small_ones_in_the_pipe():
    from ferrograd.gluon.data import _shared_batch
    before = _segments()
    big = gluon.data.SimpleDataset([np.full((128, 256), i, dtype=np.float32) for i in range(8)])
    small = gluon.data.SimpleDataset([np.full(4, i, dtype=np.float32) for i in range(8)])
    assert 4 * 128 * 256 * 4 >= _shared_batch.INLINE_BYTES > 4 * 4 * 4
    big_batch = _shared_batch.publish(_stack(big, range(4)))
    small_batch = _shared_batch.publish(_stack(small, range(4)))
    assert isinstance(big_batch, _shared_batch.SharedArray)
    assert isinstance(small_batch, _shared_batch.InlineArray)
    _shared_batch.discard(big_batch)
    for ds in (big, small):
        out = [b.asnumpy()[:, 0] for b in gluon.data.DataLoader(ds, batch_size=4, num_workers=2)]
        np.testing.assert_array_equal(np.concatenate(out).reshape(8, -1)[:, 0], np.arange(8))
    # An abandoned iterator's big batches are freed when the loader goes.
    loader = gluon.data.DataLoader(big, batch_size=1, num_workers=2, prefetch=6)
    it = iter(loader)
    next(it)
    it.close()
    del it, loader
    import gc
    gc.collect()
    deadline = time.monotonic() + 10
    while _segments() - before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _segments() - before


def _stack(ds, indices):
    from ferrograd.gluon.data.dataloader import _stack_for_transfer
    return _stack_for_transfer([ds[i] for i in indices])


class _Slow(gluon.data.Dataset):
    """Sample 0 (the first batch, loaded in the main process) is quick; the others take 5 s."""

    def __len__(self):
        return 3

    def __getitem__(self, idx):
        if idx:
            time.sleep(5)
        return np.float32(idx)


def test_timeout_does_not_wait_for_the_batches_in_flight():
    loader = gluon.data.DataLoader(_Slow(), batch_size=1, num_workers=1, timeout=0.5)
    it = iter(loader)
    assert next(it).asscalar() == 0
    start = time.monotonic()
    with pytest.raises(Exception, match="timeout"):
        next(it)
    assert time.monotonic() - start < 3


def test_pin_memory_and_prefetch():
    ds = gluon.data.ArrayDataset(np.ones((6, 2), dtype=np.float32))
    for workers in (0, 2):
        loader = gluon.data.DataLoader(ds, batch_size=4, num_workers=workers, pin_memory=True,
                                       prefetch=1)
        batches = list(loader)
        assert all(b.context == mx.cpu_pinned(0) for b in batches)
        assert len(loader) == 2


# ---- transforms -------------------------------------------------------------------------------

IMG = (np.arange(4 * 6 * 3) * 7 % 256).astype(np.uint8).reshape(4, 6, 3)


def test_to_tensor_normalize_cast():
    t = T.ToTensor()(nd.array(IMG, dtype=np.uint8))
    np.testing.assert_allclose(t.asnumpy(), IMG.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    batch = T.ToTensor()(nd.array(np.stack([IMG, IMG]), dtype=np.uint8))
    assert batch.shape == (2, 3, 4, 6)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    n = T.Normalize(mean, std)(t).asnumpy()
    ref = (IMG.transpose(2, 0, 1) / 255.0 - np.reshape(mean, (3, 1, 1))) / np.reshape(std,
                                                                                      (3, 1, 1))
    np.testing.assert_allclose(n, ref, rtol=1e-5, atol=1e-6)
    assert T.Cast("float16")(t).dtype == np.float16
    composed = T.Compose([T.ToTensor(), T.Normalize(mean, std)])
    np.testing.assert_allclose(composed(nd.array(IMG, dtype=np.uint8)).asnumpy(), ref,
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="mean"):
        T.Normalize((0.1, 0.2), 1.0)(t)


def test_resize_and_crops():
    img = nd.array(IMG, dtype=np.uint8)
    same = T.Resize((6, 4))(img)
    np.testing.assert_array_equal(same.asnumpy(), IMG)
    up = T.Resize((12, 8), interpolation=0)(img).asnumpy()
    np.testing.assert_array_equal(up, IMG.repeat(2, axis=0).repeat(2, axis=1))
    assert T.Resize(2, keep_ratio=True)(img).shape == (2, 3, 3)
    assert T.Resize(3)(img).shape == (3, 3, 3)
    # Halving with bilinear sampling at pixel centres averages 2x2 blocks.
    half = T.Resize((3, 2))(nd.array(IMG.astype(np.float32))).asnumpy()
    ref = IMG.astype(np.float32).reshape(2, 2, 3, 2, 3).mean(axis=(1, 3))
    np.testing.assert_allclose(half, ref, rtol=1e-5)
    np.testing.assert_array_equal(T.CenterCrop((2, 2))(img).asnumpy(), IMG[1:3, 2:4])
    np.testing.assert_array_equal(T.CropResize(1, 0, 3, 2)(img).asnumpy(), IMG[0:2, 1:4])
    crop = T.RandomResizedCrop((3, 3))(img)
    assert crop.shape == (3, 3, 3) and crop.dtype == np.uint8


def test_random_flips_are_flips():
    img = nd.array(IMG, dtype=np.uint8)
    seen = set()
    for _ in range(40):
        out = T.RandomFlipLeftRight()(img).asnumpy()
        assert (out == IMG).all() or (out == IMG[:, ::-1]).all()
        seen.add((out == IMG).all())
        out = T.RandomFlipTopBottom()(img).asnumpy()
        assert (out == IMG).all() or (out == IMG[::-1]).all()
    assert seen == {True, False}


def test_color_transforms_keep_range():
    img = nd.array(IMG, dtype=np.uint8)
    for t in (T.RandomBrightness(0.5), T.RandomContrast(0.5), T.RandomSaturation(0.5),
              T.RandomLighting(0.1), T.RandomColorJitter(0.2, 0.2, 0.2)):
        out = t(img)
        assert out.shape == IMG.shape and out.dtype == np.uint8
    dark = T.RandomBrightness(0.0)(img)
    np.testing.assert_array_equal(dark.asnumpy(), IMG)


# ---- vision datasets from files in the standard formats ---------------------------------------

def _write_idx(path, array):
    header = struct.pack(">I", 0x800 + array.ndim) + struct.pack(">" + "I" * array.ndim,
                                                                 *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


@pytest.mark.parametrize("cls", [vision.MNIST, vision.FashionMNIST])
def test_mnist_reader(tmp_path, cls, monkeypatch):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(5, 28, 28))
    labels = np.array([3, 1, 4, 1, 5])
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", images)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels)
    # Our files are not the real ones: skip the SHA-1 check instead of downloading.
    monkeypatch.setattr(vision.datasets, "_sha1_matches", lambda path, sha1: True)
    ds = cls(root=str(tmp_path), train=False)
    assert len(ds) == 5
    img, label = ds[2]
    assert img.shape == (28, 28, 1) and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy()[:, :, 0], images[2])
    assert label == 4
    ds = cls(root=str(tmp_path), train=False, transform=lambda d, y: (d.astype("float32"), y))
    assert ds[0][0].dtype == np.float32


def test_cifar_readers(tmp_path):
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, size=(3, 3, 32, 32), dtype=np.uint8)   # N, C, H, W on disk
    rows = np.concatenate([np.array([[7], [2], [9]], dtype=np.uint8),
                           images.reshape(3, -1)], axis=1)
    for name in ["data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                 "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"]:
        (tmp_path / name).write_bytes(rows.tobytes())
    train = vision.CIFAR10(root=str(tmp_path))
    test = vision.CIFAR10(root=str(tmp_path), train=False)
    assert len(train) == 15 and len(test) == 3
    img, label = test[1]
    np.testing.assert_array_equal(img.asnumpy(), images[1].transpose(1, 2, 0))
    assert label == 2
    coarse_fine = np.array([[1, 11], [2, 12]], dtype=np.uint8)
    rows100 = np.concatenate([coarse_fine, images[:2].reshape(2, -1)], axis=1)
    for name in ("train.bin", "test.bin"):
        (tmp_path / name).write_bytes(rows100.tobytes())
    assert vision.CIFAR100(root=str(tmp_path), train=False)[1][1] == 2
    assert vision.CIFAR100(root=str(tmp_path), fine_label=True)[1][1] == 12
    (tmp_path / "test.bin").write_bytes(b"\0" * 100)
    with pytest.raises(ValueError, match="CIFAR record"):
        vision.CIFAR100(root=str(tmp_path), train=False)


def test_record_file_dataset(tmp_path):
    from ferrograd import recordio
    writer = recordio.MXIndexedRecordIO(str(tmp_path / "d.idx"), str(tmp_path / "d.rec"), "w")
    for i in range(5):
        writer.write_idx(i, recordio.pack((0, float(i), i, 0), bytes([i]) * 3))
    writer.close()
    ds = gluon.data.RecordFileDataset(str(tmp_path / "d.rec"))
    assert len(ds) == 5
    header, payload = recordio.unpack(ds[3])
    assert header.label == 3.0 and payload == b"\3\3\3"
    loader = gluon.data.DataLoader(ds.transform(lambda r: recordio.unpack(r)[0].label),
                                   batch_size=2, num_workers=2)
    np.testing.assert_array_equal(np.concatenate([b.asnumpy() for b in loader]), np.arange(5))


class _RandomDraws(gluon.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, idx):
        import random
        return np.array([random.random(), np.random.rand()], dtype=np.float64)


def test_each_worker_draws_its_own_random_numbers():
    loader = gluon.data.DataLoader(_RandomDraws(), batch_size=1, num_workers=2)
    draws = np.concatenate([b.asnumpy() for b in loader])
    # Forked workers without reseeding would repeat each other's sequences.
    assert len(np.unique(draws[:, 0])) == 8 and len(np.unique(draws[:, 1])) == 8


def test_missing_files_are_downloaded_into_root(tmp_path, monkeypatch):
    from ferrograd import _mx_download
    urls = []

    def fake_download(url, fname=None, dirname=None, overwrite=False):
        urls.append(url)
        name = os.path.join(dirname, fname)
        array = np.zeros((2, 28, 28)) if "images" in fname else np.array([7, 8])
        _write_idx(name, array)
        return name

    monkeypatch.setattr(_mx_download, "download", fake_download)
    monkeypatch.delenv("MXNET_GLUON_REPO", raising=False)
    # The fake files do not have the real checksums: the reader says so.
    with pytest.raises(OSError, match="SHA-1"):
        vision.MNIST(root=str(tmp_path), train=False)
    assert urls[0] == ("https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"
                       "gluon/dataset/mnist/t10k-images-idx3-ubyte.gz")
    monkeypatch.setattr(vision.datasets, "_sha1_matches", lambda path, sha1: True)
    assert vision.MNIST(root=str(tmp_path), train=False)[1][1] == 8


def test_mx_np_arrays_come_back_as_mx_np_arrays():
    def batchify(samples):
        return mx.np.array(np.stack(samples))

    ds = gluon.data.SimpleDataset([np.full(3, i, dtype=np.float32) for i in range(4)])
    out = list(gluon.data.DataLoader(ds, batch_size=2, num_workers=2, batchify_fn=batchify))
    assert all(isinstance(b, mx.np.ndarray) for b in out)
    np.testing.assert_array_equal(out[1].asnumpy()[:, 0], [2, 3])


def test_transforms_hybridize_and_fit_in_hybrid_sequential():
    img = nd.array(IMG, dtype=np.uint8)
    chain = gluon.nn.HybridSequential()
    chain.add(T.ToTensor(), T.Normalize((0.1, 0.2, 0.3), (0.5, 0.25, 2.0)), T.Cast("float64"))
    eager = chain(img).asnumpy()
    chain.hybridize()
    np.testing.assert_allclose(chain(img).asnumpy(), eager)
    assert eager.dtype == np.float64
    # The same chain as a Symbol (channel count from mean/std) gives the same values.
    out = chain(mx.sym.var("img")).eval(img=img)[0].asnumpy()
    np.testing.assert_allclose(out, eager, rtol=1e-6)
    flip = T.RandomFlipLeftRight()
    flip.hybridize()
    assert flip(img).shape == IMG.shape
    with pytest.raises(NotImplementedError, match="RandomFlipLeftRight: symbolic"):
        flip(mx.sym.var("img"))


class _Niceness(gluon.data.Dataset):
    """Each sample is the scheduling niceness of the process that loads it."""

    def __len__(self):
        return 4

    def __getitem__(self, idx):
        return np.int64(os.nice(0))


def test_workers_run_at_lower_priority_unless_told_not_to(monkeypatch):
    parent = os.nice(0)
    # The first batch of a pass is loaded in this process, the second in the worker.
    first, second = gluon.data.DataLoader(_Niceness(), batch_size=2, num_workers=1)
    np.testing.assert_array_equal(first.asnumpy(), [parent] * 2)
    np.testing.assert_array_equal(second.asnumpy(), [min(parent + 10, 19)] * 2)
    monkeypatch.setenv("FERROGRAD_DATALOADER_NICE", "0")
    _, second = gluon.data.DataLoader(_Niceness(), batch_size=2, num_workers=1)
    np.testing.assert_array_equal(second.asnumpy(), [parent] * 2)


class _NumpyIntSampler(gluon.data.Sampler):
    """Yields NumPy integers, as samplers built on NumPy do."""

    def __iter__(self):
        return iter(np.arange(5, -1, -1))

    def __len__(self):
        return 6


def test_workers_take_numpy_integer_indices():
    data = gluon.data.SimpleDataset(np.arange(6, dtype=np.float32) * 10)
    batches = list(gluon.data.DataLoader(data, batch_size=3, sampler=_NumpyIntSampler(),
                                         num_workers=2))
    np.testing.assert_array_equal(np.concatenate([b.asnumpy() for b in batches]),
                                  [50, 40, 30, 20, 10, 0])
