"""``nd.image`` / ``sym.image``: to_tensor, normalize and the flips (one-pass image operators
behind ``vision.transforms``), against NumPy references; values checked by running MXNet
1.9.1."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import nd

IMG = (np.arange(4 * 5 * 3) * 7 % 256).astype(np.uint8).reshape(4, 5, 3)


def test_to_tensor_layouts_and_dtypes():
    for dtype in (np.uint8, np.int32, np.float32, np.float64):
        img = IMG.astype(dtype)
        t = nd.image.to_tensor(nd.array(img, dtype=dtype))
        assert t.dtype == np.float32 and t.shape == (3, 4, 5)
        np.testing.assert_allclose(t.asnumpy(), img.transpose(2, 0, 1) / 255.0, rtol=1e-7)
    batch = np.stack([IMG, IMG[::-1]])
    t = nd.image.to_tensor(nd.array(batch, dtype=np.uint8))
    np.testing.assert_allclose(t.asnumpy(), batch.transpose(0, 3, 1, 2) / 255.0, rtol=1e-7)
    # MXNet scales without clipping: 300 -> 300 / 255.
    np.testing.assert_allclose(nd.image.to_tensor(nd.array([[[300.0]]])).asnumpy(),
                               [[[300 / 255]]], rtol=1e-7)
    with pytest.raises(mx.MXNetError, match=r"_image_to_tensor.*\(2, 3\)"):
        nd.image.to_tensor(nd.zeros((2, 3)))


def test_normalize_per_channel_and_scalar():
    t = nd.image.to_tensor(nd.array(IMG, dtype=np.uint8))
    mean, std = (0.1, 0.2, 0.3), (1.0, 2.0, 4.0)
    ref = (IMG.transpose(2, 0, 1) / 255.0 - np.reshape(mean, (3, 1, 1))) / np.reshape(std,
                                                                                      (3, 1, 1))
    np.testing.assert_allclose(nd.image.normalize(t, mean=mean, std=std).asnumpy(), ref,
                               rtol=1e-6, atol=1e-7)
    # MXNet 1.9.1's printed value for channel 1, row 0 of this image's first column.
    batch = nd.stack(t, t)
    out = nd.image.normalize(batch, mean=mean, std=std)
    assert out.shape == (2, 3, 4, 5)
    np.testing.assert_allclose(out.asnumpy()[1], ref, rtol=1e-6, atol=1e-7)
    one = nd.image.normalize(t, mean=0.5, std=2.0).asnumpy()
    np.testing.assert_allclose(one, (t.asnumpy() - 0.5) / 2.0, rtol=1e-6)
    # float64 stays float64; defaults are zero mean, unit std for any channel count.
    x = nd.array(np.random.RandomState(0).rand(5, 2, 2), dtype=np.float64)
    assert nd.image.normalize(x).dtype == np.float64
    np.testing.assert_array_equal(nd.image.normalize(x).asnumpy(), x.asnumpy())
    with pytest.raises(mx.MXNetError, match=r"_image_normalize: mean has 2 values.*\(3, 4, 5\)"):
        nd.image.normalize(t, mean=(1, 2), std=(1, 2))
    with pytest.raises(mx.MXNetError, match="float"):
        nd.image.normalize(nd.array(IMG.transpose(2, 0, 1), dtype=np.uint8), mean=0.5)


def test_normalize_and_to_tensor_gradients():
    x = nd.array(np.random.RandomState(1).rand(3, 2, 2), dtype=np.float32)
    x.attach_grad()
    head = nd.array(np.random.RandomState(2).rand(3, 2, 2), dtype=np.float32)
    with mx.autograd.record():
        y = nd.image.normalize(x, mean=(0.1, 0.2, 0.3), std=(1.0, 2.0, 4.0))
    y.backward(head)
    np.testing.assert_allclose(x.grad.asnumpy(),
                               head.asnumpy() / np.reshape([1.0, 2.0, 4.0], (3, 1, 1)), rtol=1e-6)
    img = nd.array(np.random.RandomState(3).rand(2, 3, 3) * 255, dtype=np.float64)
    img.attach_grad()
    head = nd.array(np.random.RandomState(4).rand(3, 2, 3), dtype=np.float32)
    with mx.autograd.record():
        t = nd.image.to_tensor(img)
    t.backward(head)
    assert img.grad.dtype == np.float64
    np.testing.assert_allclose(img.grad.asnumpy(), head.asnumpy().transpose(1, 2, 0) / 255.0,
                               rtol=1e-6)


def test_flips_and_their_gradient():
    img = nd.array(IMG, dtype=np.uint8)
    np.testing.assert_array_equal(nd.image.flip_left_right(img).asnumpy(), IMG[:, ::-1])
    np.testing.assert_array_equal(nd.image.flip_top_bottom(img).asnumpy(), IMG[::-1])
    batch = np.stack([IMG, IMG + 1])
    np.testing.assert_array_equal(
        nd.image.flip_left_right(nd.array(batch, dtype=np.uint8)).asnumpy(), batch[:, :, ::-1])
    # The gradient is the flipped output gradient (MXNet 1.9.1 passes it through unflipped).
    x = nd.array(IMG.astype(np.float32))
    x.attach_grad()
    head = nd.array(np.arange(IMG.size, dtype=np.float32).reshape(IMG.shape))
    with mx.autograd.record():
        y = nd.image.flip_left_right(x)
    y.backward(head)
    np.testing.assert_array_equal(x.grad.asnumpy(), head.asnumpy()[:, ::-1])
    with pytest.raises(mx.MXNetError, match=r"_image_flip_left_right.*\(4, 4\)"):
        nd.image.flip_left_right(nd.zeros((4, 4)))


def test_random_flips_follow_the_seed():
    img = nd.array(IMG, dtype=np.uint8)
    seen = set()
    for seed in range(12):
        mx.random.seed(seed)
        a = nd.image.random_flip_left_right(img).asnumpy()
        mx.random.seed(seed)
        b = nd.image.random_flip_left_right(img).asnumpy()
        np.testing.assert_array_equal(a, b)
        assert np.array_equal(a, IMG) or np.array_equal(a, IMG[:, ::-1])
        seen.add(np.array_equal(a, IMG))
    assert seen == {True, False}


def test_symbolic_image_ops_and_json():
    data = mx.sym.var("data")
    out = mx.sym.image.normalize(mx.sym.image.to_tensor(data), mean=(0.1, 0.2, 0.3),
                                 std=(1.0, 2.0, 4.0))
    assert out.name.startswith("normalize")
    loaded = mx.sym.load_json(out.tojson())
    got = loaded.eval(data=nd.array(IMG, dtype=np.uint8))[0].asnumpy()
    ref = (IMG.transpose(2, 0, 1) / 255.0 - np.reshape((0.1, 0.2, 0.3), (3, 1, 1))) / \
        np.reshape((1.0, 2.0, 4.0), (3, 1, 1))
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)
    assert loaded.infer_shape(data=(4, 5, 3))[1] == [(3, 4, 5)]


def test_large_batches_split_across_threads_mid_plane():
    # 6 x 3 x 97 x 101 outputs: above the parallel threshold, and the work chunks (2^15
    # elements) start in the middle of planes, so each chunk's first plane is partial.
    rng = np.random.RandomState(7)
    batch = rng.randint(0, 256, (6, 97, 101, 3)).astype(np.uint8)
    t = nd.image.to_tensor(nd.array(batch, dtype=np.uint8))
    want = batch.transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255)
    np.testing.assert_array_equal(t.asnumpy(), want)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    out = nd.image.normalize(t, mean=mean, std=std).asnumpy()
    inv = (1.0 / np.asarray(std)).astype(np.float32).reshape(3, 1, 1)
    np.testing.assert_array_equal(out, (want - np.float32(mean).reshape(3, 1, 1)) * inv)
