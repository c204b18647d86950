"""``nd.contrib`` / ``sym.contrib`` operators: quadratic, div_sqrt_dim, arange_like, index_array,
index_copy, boolean_mask, the bounding-box ops, the interleaved attention products and the
imperative control flow (foreach, while_loop, cond). References are NumPy code written here, or
values MXNet 1.9.1 printed for the same inputs (noted where used)."""

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.test_utils import check_numeric_gradient

nd = mx.nd


def test_contrib_names_come_from_the_registry():
    for name in ["quadratic", "div_sqrt_dim", "arange_like", "index_array", "index_copy",
                 "box_iou", "box_nms", "bipartite_matching", "interleaved_matmul_selfatt_qk",
                 "interleaved_matmul_encdec_valatt"]:
        assert name in nd.contrib.__all__ and hasattr(nd.contrib, name), name
        assert name in mx.sym.contrib.__all__ and hasattr(mx.sym.contrib, name), name


def test_quadratic_values_gradient_and_symbol():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    y = nd.contrib.quadratic(nd.array(x), a=1, b=2, c=3)
    np.testing.assert_allclose(y.asnumpy(), [[6, 11], [18, 27]])
    xa = nd.array(x)
    xa.attach_grad()
    with mx.autograd.record():
        z = nd.contrib.quadratic(xa, a=0.5, b=-1, c=2)
    z.backward(nd.ones_like(z) * 3)
    np.testing.assert_allclose(xa.grad.asnumpy(), 3 * (x - 1))
    s = mx.sym.contrib.quadratic(mx.sym.var("data"), a=2.0)
    assert s.infer_shape(data=(4, 5))[1] == [(4, 5)]
    check_numeric_gradient(s, [np.random.rand(3, 2)])


def test_div_sqrt_dim():
    x = np.random.rand(2, 3, 9)
    np.testing.assert_allclose(nd.contrib.div_sqrt_dim(nd.array(x, dtype="float64")).asnumpy(),
                               x / 3.0, rtol=1e-15)
    with pytest.raises(mx.MXNetError, match="div_sqrt_dim"):
        nd.contrib.div_sqrt_dim(nd.array(2.0))


def test_arange_like_and_index_array():
    x = nd.zeros((3, 4))
    np.testing.assert_array_equal(nd.contrib.arange_like(x, start=2, step=3).asnumpy(),
                                  2 + 3 * np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(nd.contrib.arange_like(x, axis=1, repeat=2).asnumpy(),
                                  [0, 0, 1, 1])
    idx = nd.contrib.index_array(nd.ones((2, 3)))
    assert idx.dtype == np.int64
    want = np.stack(np.meshgrid(np.arange(2), np.arange(3), indexing="ij"), axis=-1)
    np.testing.assert_array_equal(idx.asnumpy(), want)
    np.testing.assert_array_equal(nd.contrib.index_array(nd.ones((2, 3)), axes=(1,)).asnumpy(),
                                  want[..., 1:])


def test_index_copy_values_gradients_and_errors():
    old = nd.zeros((5, 3))
    new = nd.array([[1, 2, 3], [4, 5, 6]])
    old.attach_grad()
    new.attach_grad()
    w = nd.arange(15).reshape(5, 3)
    with mx.autograd.record():
        y = nd.contrib.index_copy(old, nd.array([4, 1]), new)
        (y * w).sum().backward()
    # Values and gradients as MXNet 1.9.1 prints them for these inputs.
    np.testing.assert_array_equal(y.asnumpy(), [[0, 0, 0], [4, 5, 6], [0, 0, 0], [0, 0, 0],
                                                [1, 2, 3]])
    np.testing.assert_array_equal(old.grad.asnumpy(), [[0, 1, 2], [0, 0, 0], [6, 7, 8],
                                                       [9, 10, 11], [0, 0, 0]])
    np.testing.assert_array_equal(new.grad.asnumpy(), [[12, 13, 14], [3, 4, 5]])
    with pytest.raises(IndexError, match="index 7 is out of range"):
        nd.contrib.index_copy(old, nd.array([7, 1]), new)
    with pytest.raises(mx.MXNetError, match="index_vector"):
        nd.contrib.index_copy(old, nd.array([1]), new)


def test_boolean_mask_values_gradient_and_errors():
    data = nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    data.attach_grad()
    with mx.autograd.record():
        out = nd.contrib.boolean_mask(data, nd.array([0, 1, 1]))
    out.backward(nd.ones_like(out) * 2)
    np.testing.assert_array_equal(out.asnumpy(), [[4, 5, 6], [7, 8, 9]])
    np.testing.assert_array_equal(data.grad.asnumpy(), [[0, 0, 0], [2, 2, 2], [2, 2, 2]])
    cols = nd.contrib.boolean_mask(data, nd.array([1, 0, 1]), axis=1)
    np.testing.assert_array_equal(cols.asnumpy(), [[1, 3], [4, 6], [7, 9]])
    assert nd.contrib.boolean_mask(data, nd.zeros(3)).shape == (0, 3)
    with pytest.raises(mx.MXNetError, match="boolean_mask"):
        nd.contrib.boolean_mask(data, nd.array([1, 0]))


def _corner_iou(a, b):
    w = np.clip(np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]),
                0, None)
    h = np.clip(np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]),
                0, None)
    inter = w * h
    area = lambda z: (z[:, 2] - z[:, 0]) * (z[:, 3] - z[:, 1])  # noqa: E731
    return inter / (area(a)[:, None] + area(b)[None, :] - inter)


def test_box_iou_against_numpy():
    rng = np.random.default_rng(3)
    lo = rng.random((6, 2))
    a = np.concatenate([lo, lo + rng.random((6, 2)) + 0.1], axis=1)
    lo = rng.random((4, 2))
    b = np.concatenate([lo, lo + rng.random((4, 2)) + 0.1], axis=1)
    got = nd.contrib.box_iou(nd.array(a, dtype="float64"), nd.array(b, dtype="float64"))
    np.testing.assert_allclose(got.asnumpy(), _corner_iou(a, b), rtol=1e-12)
    got = nd.contrib.box_iou(nd.array(a.reshape(2, 3, 4)), nd.array(b))
    assert got.shape == (2, 3, 4)


def _nms_reference(boxes, thresh):
    """Greedy NMS over [score, x0, y0, x1, y1] rows: kept rows by descending score, then -1."""
    order = np.argsort(-boxes[:, 0], kind="stable")
    kept = []
    for i in order:
        if all(_corner_iou(boxes[i:i + 1, 1:], boxes[j:j + 1, 1:])[0, 0] <= thresh for j in kept):
            kept.append(i)
    out = -np.ones_like(boxes)
    out[:len(kept)] = boxes[kept]
    return out, kept


def test_box_nms_against_a_reference_and_its_gradient():
    rng = np.random.default_rng(5)
    lo = rng.random((8, 2)) * 4
    boxes = np.concatenate([rng.random((8, 1)), lo, lo + 1 + rng.random((8, 2))], axis=1)
    data = nd.array(boxes, dtype="float64")
    data.attach_grad()
    with mx.autograd.record():
        out = nd.contrib.box_nms(data, overlap_thresh=0.3, coord_start=1, score_index=0)
    want, kept = _nms_reference(boxes, 0.3)
    np.testing.assert_allclose(out.asnumpy(), want)
    head = rng.random(boxes.shape)
    out.backward(nd.array(head, dtype="float64"))
    grad = np.zeros_like(boxes)
    grad[kept] = head[:len(kept)]
    np.testing.assert_allclose(data.grad.asnumpy(), grad)
    # The documented MXNet example (per-class suppression off).
    x = nd.array([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2],
                  [0, 0.3, 0.1, 0.1, 0.14, 0.14], [2, 0.6, 0.5, 0.5, 0.7, 0.8]])
    y = nd.contrib.box_nms(x, overlap_thresh=0.1, coord_start=2, score_index=1, id_index=0,
                           force_suppress=True)
    np.testing.assert_allclose(y.asnumpy()[:2], x.asnumpy()[[3, 0]])
    assert (y.asnumpy()[2:] == -1).all()
    with mx.name.NameManager():
        # MXNet 1.9.1's names: after the contrib name, output0 of the two (one hidden).
        assert mx.sym.contrib.box_nms(mx.sym.var("d")).list_outputs() == ["box_nms0_output0"]
        assert mx.sym.contrib.quadratic(mx.sym.var("d")).name == "quadratic0"


def _random_corner_boxes(rng, shape):
    lo = rng.random(shape + (2,))
    return np.concatenate([lo, lo + rng.random(shape + (2,)) + 0.05], axis=-1)


def test_box_iou_many_pairs_in_parallel_against_numpy():
    # 300 x 400 pairs: enough for the pairs to split over threads.
    rng = np.random.default_rng(13)
    a, b = _random_corner_boxes(rng, (300,)), _random_corner_boxes(rng, (400,))
    got = nd.contrib.box_iou(nd.array(a, dtype="float64"), nd.array(b, dtype="float64"))
    np.testing.assert_allclose(got.asnumpy(), _corner_iou(a, b), rtol=1e-12)


def test_box_nms_many_batch_items_against_the_reference():
    rng = np.random.default_rng(17)
    lo = rng.random((24, 60, 2)) * 4
    boxes = np.concatenate([rng.random((24, 60, 1)), lo, lo + 1 + rng.random((24, 60, 2))], -1)
    out = nd.contrib.box_nms(nd.array(boxes, dtype="float64"), overlap_thresh=0.3,
                             coord_start=1, score_index=0).asnumpy()
    for item, got in zip(boxes, out, strict=True):
        np.testing.assert_array_equal(got, _nms_reference(item, 0.3)[0])


_BIG_BOXES = """
import sys
import numpy as np, ferrograd as mx
nd = mx.nd
rng = np.random.default_rng(21)
lo = rng.random((64, 120, 2)) * 4
boxes = np.concatenate([rng.random((64, 120, 1)), lo, lo + 1 + rng.random((64, 120, 2))], -1)
outs = nd.contrib.box_nms(nd.array(boxes), overlap_thresh=0.4, coord_start=1, score_index=0)
outs = [outs, nd.contrib.box_iou(nd.array(boxes[:, :, 1:].reshape(-1, 4)[:400]),
                                 nd.array(boxes[:, :, 1:].reshape(-1, 4)[400:800]))]
outs += list(nd.contrib.bipartite_matching(nd.array(rng.random((48, 40, 50))), threshold=0.5))
for o in outs:
    sys.stdout.buffer.write(o.asnumpy().tobytes())
"""


def test_box_ops_bitwise_identical_for_any_thread_count():
    import os
    import subprocess
    import sys

    runs = [subprocess.run([sys.executable, "-c", _BIG_BOXES], capture_output=True, check=True,
                           env=dict(os.environ, RAYON_NUM_THREADS=t)).stdout for t in ("1", "2")]
    assert len(runs[0]) == 4 * (64 * 120 * 5 + 400 * 400 + 48 * 40 + 48 * 50)
    assert runs[0] == runs[1]


def test_bipartite_matching_documented_example():
    s = nd.array([[0.5, 0.6], [0.1, 0.2], [0.3, 0.4]])
    rows, cols = nd.contrib.bipartite_matching(s, threshold=1e-12, is_ascend=False)
    np.testing.assert_array_equal(rows.asnumpy(), [1, -1, 0])
    np.testing.assert_array_equal(cols.asnumpy(), [2, 0])


def _split_heads(x, heads, parts):
    seq, batch, width = x.shape
    d = width // (heads * parts)
    return x.reshape(seq, batch, heads, parts, d), d


def test_interleaved_attention_products_against_numpy():
    rng = np.random.default_rng(9)
    seq, batch, heads, d = 5, 2, 3, 4
    qkv = rng.standard_normal((seq, batch, heads * 3 * d))
    parts, _ = _split_heads(qkv, heads, 3)
    q, k, v = (parts[:, :, :, i].transpose(1, 2, 0, 3).reshape(batch * heads, seq, d)
               for i in range(3))
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
    got = nd.contrib.interleaved_matmul_selfatt_qk(nd.array(qkv, dtype="float64"), heads=heads)
    np.testing.assert_allclose(got.asnumpy(), scores, rtol=1e-12)
    att = rng.standard_normal((batch * heads, seq, seq))
    attended = (att @ v).reshape(batch, heads, seq, d).transpose(2, 0, 1, 3)
    got = nd.contrib.interleaved_matmul_selfatt_valatt(nd.array(qkv, dtype="float64"),
                                                       nd.array(att, dtype="float64"), heads=heads)
    np.testing.assert_allclose(got.asnumpy(), attended.reshape(seq, batch, heads * d), rtol=1e-12)
    sym = mx.sym.contrib.interleaved_matmul_selfatt_qk(mx.sym.var("qkv"), heads=heads)
    assert sym.infer_shape(qkv=qkv.shape)[1] == [(batch * heads, seq, seq)]
    check_numeric_gradient(sym, [qkv], numeric_eps=1e-6, rtol=1e-5, atol=1e-7, dtype=np.float64)
    with pytest.raises(mx.MXNetError, match="heads=5"):
        nd.contrib.interleaved_matmul_selfatt_qk(nd.array(qkv), heads=5)


def test_foreach_matches_mxnet_and_differentiates():
    def body(x, states):
        return x * 2 + states[0], [states[0] + x]

    out, states = nd.contrib.foreach(body, nd.arange(6).reshape(3, 2), [nd.zeros(2)])
    # MXNet 1.9.1 prints these for the same loop.
    np.testing.assert_array_equal(out.asnumpy(), [[0, 2], [4, 7], [10, 14]])
    np.testing.assert_array_equal(states[0].asnumpy(), [6, 9])
    x = nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        out, _ = nd.contrib.foreach(lambda d, s: (d * s[0], [s[0] * d]), nd.stack(x, x),
                                    [nd.ones(2)])
        out.sum().backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 1 + 2 * x.asnumpy())  # d/dx (x + x²)
    with pytest.raises(ValueError, match="same length"):
        nd.contrib.foreach(body, [nd.ones((2, 1)), nd.ones((3, 1))], [nd.zeros(1)])


def test_while_loop_pads_with_zeros_and_cond():
    def step(i, s):
        return (s * 2,), (i + 1, s + i)

    out, (i, s) = nd.contrib.while_loop(lambda i, s: i < 3, step,
                                        (nd.array([0]), nd.array([1])), max_iterations=5)
    np.testing.assert_array_equal(out[0].asnumpy().ravel(), [2, 2, 4, 0, 0])
    assert (i.asscalar(), s.asscalar()) == (3, 4)
    with pytest.raises(ValueError, match="max_iterations"):
        nd.contrib.while_loop(lambda i: i < 1, lambda i: ([], [i + 1]), [nd.zeros(1)])
    pick = nd.contrib.cond(nd.array([0]), lambda: nd.ones(2), lambda: nd.zeros(2))
    np.testing.assert_array_equal(pick.asnumpy(), [0, 0])


def test_straight_through_estimators_and_gradient_multiplier():
    # MXNet 1.9.1 prints y = [-6, 6, -6, 6, 9, 3, -3] and x.grad = 1.5 everywhere here.
    x = nd.array([-1.5, 1.5, -1.9, 1.9, 2.7, 0.5, -0.5])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.contrib.round_ste(x) * 3
        z = nd.contrib.gradientmultiplier(y, scalar=0.5)
    z.backward()
    np.testing.assert_array_equal(y.asnumpy(), [-6, 6, -6, 6, 9, 3, -3])
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full(7, 1.5))
    np.testing.assert_array_equal(nd.contrib.sign_ste(nd.array([-2, 0, 3])).asnumpy(), [-1, 0, 1])


def test_allclose():
    a, b = nd.array([1e10, 1e-7]), nd.array([1.00001e10, 1e-8])
    r = nd.contrib.allclose(a, b)
    assert (r.shape, r.dtype, r.asscalar()) == ((), np.uint8, 0)
    # True in float64; in float32 1.00001e10 rounds away and MXNet 1.9.1 also gives 0.
    f64 = {"dtype": "float64"}
    assert nd.contrib.allclose(nd.array([1e10, 1e-8], **f64), nd.array([1.00001e10, 1e-9], **f64))
    assert not nd.contrib.allclose(nd.array([1e10, 1e-8]), nd.array([1.00001e10, 1e-9]))
    with pytest.raises(mx.MXNetError, match="one shape"):
        nd.contrib.allclose(nd.array([1, 2]), nd.array([1]))
