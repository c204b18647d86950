"""Whole-batch loading (``gluon.data.dataset.take_batch``): datasets of arrays and the
per-sample transforms that have ``_apply_batch`` give, in one operation per array and per
transform, exactly the batch that stacking the samples one by one gives; anything else falls
back to the per-sample path, errors included."""

import random

import numpy as np
import pytest
from ferrograd import gluon, nd
from ferrograd.gluon.data.dataloader import default_batchify_fn
from ferrograd.gluon.data.dataset import take_batch
from ferrograd.gluon.data.vision import transforms as T


def _images(n=12, h=5, w=4, c=3, seed=0):
    rng = np.random.RandomState(seed)
    return nd.array(rng.randint(0, 256, (n, h, w, c)), dtype=np.uint8)


def _per_sample(ds, indices):
    return default_batchify_fn([ds[int(i)] for i in indices])


def _assert_same_batch(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same_batch(g, w)
        return
    assert isinstance(got, nd.NDArray)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())


INDICES = np.array([7, 0, 3, 3, 11, 5])


@pytest.mark.parametrize("transform", [
    T.ToTensor(),
    T.Compose([T.ToTensor(), T.Normalize((0.4, 0.5, 0.6), (0.2, 0.3, 0.25))]),
    T.Compose([T.Cast("float64"), T.ToTensor(), T.Normalize(0.5, 0.25)]),
    T.Compose([T.Cast("float32"), T.Normalize(10.0, 3.0)]),
])
def test_transformed_image_batches_equal_the_stacked_samples(transform):
    labels = (np.arange(12) % 5).astype(np.int32)
    ds = gluon.data.ArrayDataset(_images(), labels).transform_first(transform)
    got = take_batch(ds, INDICES)
    assert got is not None
    _assert_same_batch(got, _per_sample(ds, INDICES))
    assert got[1].dtype == np.int32
    np.testing.assert_array_equal(got[1].asnumpy(), labels[INDICES])


def test_plain_arrays_and_views_batch_like_their_samples():
    images = _images()
    features = np.random.RandomState(1).rand(12, 3)      # float64 NumPy rows
    ds = gluon.data.ArrayDataset(images, features, nd.arange(12))
    for view in (ds, ds.take(9), ds.shard(2, 1), gluon.data.ArrayDataset(images)):
        idx = np.array([0, 2, 1, 2])
        got = take_batch(view, idx)
        assert got is not None
        _assert_same_batch(got, _per_sample(view, idx))
    assert take_batch(ds, [1, 2])[1].dtype == np.float64


@pytest.mark.parametrize("flip, axis", [(T.RandomFlipLeftRight, 2),
                                        (T.RandomFlipTopBottom, 1)])
def test_random_flips_draw_one_number_per_sample_in_order(flip, axis):
    ds = gluon.data.ArrayDataset(_images(), np.arange(12)).transform_first(flip())
    random.seed(3)
    got = take_batch(ds, INDICES)
    random.seed(3)
    want = _per_sample(ds, INDICES)
    _assert_same_batch(got, want)
    # The batch really mixes flipped and unflipped images (the seed picks both kinds).
    random.seed(3)
    chosen = [random.random() < 0.5 for _ in INDICES]
    assert any(chosen) and not all(chosen)
    raw = _images().asnumpy()[INDICES]
    expected = np.where(np.array(chosen)[:, None, None, None], np.flip(raw, axis=axis), raw)
    np.testing.assert_array_equal(got[0].asnumpy(), expected)


def test_datasets_and_transforms_without_a_batch_form_go_sample_by_sample():
    ds = gluon.data.ArrayDataset(_images(), np.arange(12))
    assert take_batch(ds.transform_first(lambda x: x * 2), INDICES) is None
    assert take_batch(ds.transform_first(T.Compose([T.ToTensor(), lambda x: x])),
                      INDICES) is None
    assert take_batch(gluon.data.SimpleDataset(list(range(5))), [0, 1]) is None
    assert take_batch(gluon.data.ArrayDataset([[1, 2], [3, 4]]), [0, 1]) is None
    assert take_batch(ds, [3, 12]) is None       # out of range: the per-sample IndexError
    assert take_batch(ds, []) is None


def test_a_batch_that_fails_raises_the_per_sample_error():
    # ToTensor needs HWC images; 2-D samples stacked would look like one HWC image.
    flat = gluon.data.ArrayDataset(nd.ones((6, 4, 4)), np.arange(6))
    assert take_batch(flat.transform_first(T.ToTensor()), [0, 1]) is None
    loader = gluon.data.DataLoader(flat.transform_first(T.ToTensor()), batch_size=2)
    with pytest.raises(Exception, match=r"\(4, 4\)"):
        next(iter(loader))
    # Normalize with one mean per channel on images of another channel count.
    wrong = gluon.data.ArrayDataset(_images(c=2), np.arange(12)).transform_first(
        T.Compose([T.ToTensor(), T.Normalize((0.1, 0.2, 0.3), (1.0, 1.0, 1.0))]))
    assert take_batch(wrong, [0, 1]) is None
    with pytest.raises(Exception, match=r"\(2, 5, 4\)"):
        next(iter(gluon.data.DataLoader(wrong, batch_size=2)))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_loader_batches_equal_the_per_sample_batches(num_workers):
    ds = gluon.data.ArrayDataset(_images(n=20), (np.arange(20) % 3).astype(np.int32))
    ds = ds.transform_first(T.Compose([T.ToTensor(), T.Normalize(0.5, 0.2)]))
    loader = gluon.data.DataLoader(ds, batch_size=6, num_workers=num_workers)
    batches = list(loader)
    assert [b[0].shape for b in batches] == [(6, 3, 5, 4)] * 3 + [(2, 3, 5, 4)]
    for k, batch in enumerate(batches):
        _assert_same_batch(batch, _per_sample(ds, range(6 * k, min(6 * k + 6, 20))))
