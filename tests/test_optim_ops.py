"""The fused optimizer update ops (sgd_update, adam_update, ...) against MXNet 1.9.1's results
(tests/fixtures/mxnet_optim_ops.npz, written by gen_mxnet_optim_ops.py) and NumPy references."""

import json
import os
import subprocess
import sys

import ferrograd as mx
import numpy as np
import pytest
from ferrograd._ferrograd import _update_inplace

FIXTURE = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_optim_ops.npz"))
CASES = sorted({k.split("/")[0] for k in FIXTURE.files})


def _case(name):
    spec = json.loads(str(FIXTURE[f"{name}/spec"]))
    n = len([k for k in FIXTURE.files if k.startswith(f"{name}/in")])
    ins = [FIXTURE[f"{name}/in{i}"] for i in range(n)]
    return spec["op"], spec["params"], ins


def _op(name):
    return getattr(mx.nd, name)


@pytest.mark.parametrize("case", CASES)
def test_matches_mxnet_outputs_and_state_mutation(case):
    op, params, ins = _case(case)
    arrays = [mx.nd.array(a) for a in ins]
    res = _op(op)(*arrays, **params)
    if case == "adamw_skip":
        # MXNet leaves the output unwritten when it skips (garbage); ferrograd returns the weight.
        np.testing.assert_array_equal(res.asnumpy(), ins[0])
    else:
        np.testing.assert_allclose(res.asnumpy(), FIXTURE[f"{case}/out"], rtol=1e-5, atol=1e-6)
    for i, a in enumerate(arrays):
        key = f"{case}/state{i}"
        # MXNet's adamw also overwrites its grad input with the rescaled, clipped gradient.
        if key in FIXTURE.files and not (case.startswith("adamw") and i == 1):
            np.testing.assert_allclose(
                a.asnumpy(), FIXTURE[key], rtol=1e-5, atol=1e-6, err_msg=f"{op} input {i}"
            )
    # Without out=, the weight input is left alone (only the states change).
    np.testing.assert_array_equal(arrays[0].asnumpy(), ins[0])


@pytest.mark.parametrize(
    "case", [c for c in CASES if c not in ("lamb1", "lamb1_nobias", "adamw_skip")]
)
def test_out_weight_and_inplace_path_agree(case):
    op, params, ins = _case(case)
    via_out = [mx.nd.array(a) for a in ins]
    _op(op)(*via_out, out=via_out[0], **params)
    direct = [mx.nd.array(a) for a in ins]
    _update_inplace(op, direct, **params)
    np.testing.assert_allclose(via_out[0].asnumpy(), FIXTURE[f"{case}/out"], rtol=1e-5, atol=1e-6)
    for a, b in zip(via_out, direct, strict=False):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


@pytest.mark.parametrize(
    "case", [c for c in CASES if c not in ("lamb1", "lamb1_nobias", "adamw_skip")]
)
def test_out_weight_writes_in_place_as_a_separate_out_would(case):
    """``op(w, ..., out=w)`` updates the weight in one pass (no result array): the same bits, and
    the same state updates, as writing the result into a separate ``out`` array."""
    op, params, ins = _case(case)
    inplace = [mx.nd.array(a) for a in ins]
    returned = _op(op)(*inplace, out=inplace[0], **params)
    assert returned is inplace[0]
    apart = [mx.nd.array(a) for a in ins]
    target = mx.nd.zeros(apart[0].shape, dtype=apart[0].dtype)
    _op(op)(*apart, out=target, **params)
    np.testing.assert_array_equal(inplace[0].asnumpy(), target.asnumpy())
    for a, b in zip(inplace[1:], apart[1:], strict=True):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_out_weight_on_a_view_updates_only_that_view():
    table = mx.nd.array(np.arange(12.0).reshape(3, 4))
    row = table[1]
    mx.nd.sgd_update(row, mx.nd.ones((4,)), lr=0.5, wd=0.1, out=row)
    want = np.arange(12.0).reshape(3, 4)
    want[1] = want[1] - 0.5 * (1.0 + 0.1 * want[1])
    np.testing.assert_allclose(table.asnumpy(), want, rtol=1e-6)


def test_out_weight_with_a_mismatched_gradient_raises_and_keeps_the_weight():
    w = mx.nd.array([1.0, 2.0, 3.0])
    shapes = r"sgd_update.*(\(3,\).*\(2,\)|\(2,\).*\(3,\))"
    with pytest.raises(mx.base.MXNetError, match=shapes):
        mx.nd.sgd_update(w, mx.nd.ones((2,)), lr=0.1, out=w)
    np.testing.assert_array_equal(w.asnumpy(), [1.0, 2.0, 3.0])


def _sgd_mom_ref(w, g, m, lr, momentum, wd, rescale, clip):
    g = g * rescale
    if clip >= 0:
        g = np.clip(g, -clip, clip)
    m = momentum * m - lr * (g + wd * w)
    return w + m, m


def test_sgd_clip_zero_clips_to_zero_and_negative_disables():
    w, g = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, -4.0])
    np.testing.assert_allclose(
        mx.nd.sgd_update(w, g, lr=0.1, clip_gradient=0).asnumpy(), [1.0, 2.0]
    )
    np.testing.assert_allclose(mx.nd.sgd_update(w, g, lr=0.1).asnumpy(), [0.7, 2.4], rtol=1e-6)


def test_multi_precision_sgd_mom_updates_master_copy():
    rng = np.random.default_rng(0)
    w32 = rng.standard_normal((4, 6)).astype(np.float32)
    g16 = rng.standard_normal((4, 6)).astype(np.float16)
    m = rng.standard_normal((4, 6)).astype(np.float32)
    weight, grad = mx.nd.array(w32, dtype="float16"), mx.nd.array(g16, dtype="float16")
    mom, master = mx.nd.array(m), mx.nd.array(w32)
    out = mx.nd.mp_sgd_mom_update(
        weight,
        grad,
        mom,
        master,
        lr=0.05,
        momentum=0.9,
        wd=0.01,
        rescale_grad=2.0,
        clip_gradient=1.5,
    )
    want_w, want_m = _sgd_mom_ref(w32, g16.astype(np.float32), m, 0.05, 0.9, 0.01, 2.0, 1.5)
    assert out.dtype == np.float16
    np.testing.assert_allclose(master.asnumpy(), want_w, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(mom.asnumpy(), want_m, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(out.asnumpy(), want_w.astype(np.float16))


def test_float16_weights_without_master_copy():
    w = np.array([0.5, -1.0, 2.0], np.float16)
    g = np.array([0.25, 0.5, -1.0], np.float16)
    out = mx.nd.sgd_update(mx.nd.array(w, dtype="float16"), mx.nd.array(g, dtype="float16"), lr=0.5)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.asnumpy(), (w - 0.5 * g).astype(np.float16))


def test_multi_sgd_mom_update_with_out_list():
    rng = np.random.default_rng(1)
    ws = [rng.standard_normal(s).astype(np.float32) for s in ((3,), (2, 4))]
    gs = [rng.standard_normal(w.shape).astype(np.float32) for w in ws]
    ms = [rng.standard_normal(w.shape).astype(np.float32) for w in ws]
    nd_w = [mx.nd.array(a) for a in ws]
    nd_m = [mx.nd.array(a) for a in ms]
    data = [nd_w[0], mx.nd.array(gs[0]), nd_m[0], nd_w[1], mx.nd.array(gs[1]), nd_m[1]]
    mx.nd.multi_sgd_mom_update(
        *data,
        lrs=(0.1, 0.2),
        wds=(0.0, 0.01),
        momentum=0.5,
        rescale_grad=0.5,
        num_weights=2,
        out=nd_w,
    )
    for i, (lr, wd) in enumerate(((0.1, 0.0), (0.2, 0.01))):
        want_w, want_m = _sgd_mom_ref(ws[i], gs[i], ms[i], lr, 0.5, wd, 0.5, -1)
        np.testing.assert_allclose(nd_w[i].asnumpy(), want_w, rtol=1e-6)
        np.testing.assert_allclose(nd_m[i].asnumpy(), want_m, rtol=1e-6)


def test_multi_mp_sgd_update_returns_low_precision_weights():
    w32 = np.array([1.0, -2.0, 3.0], np.float32)
    g = np.array([0.5, 0.5, -0.5], np.float16)
    master = mx.nd.array(w32)
    outs = mx.nd.multi_mp_sgd_update(
        mx.nd.array(w32, dtype="float16"),
        mx.nd.array(g, dtype="float16"),
        master,
        lrs=(0.5,),
        wds=(0.0,),
        num_weights=1,
    )
    np.testing.assert_allclose(master.asnumpy(), w32 - 0.5 * g.astype(np.float32))
    assert outs.dtype == np.float16


def test_bad_inputs_raise_clear_errors():
    w = mx.nd.ones((3,))
    with pytest.raises(mx.MXNetError, match=r"sgd_update.*grad.*\(4,\).*\(3,\)"):
        mx.nd.sgd_update(w, mx.nd.ones((4,)), lr=0.1)
    with pytest.raises(mx.MXNetError, match="lr"):
        mx.nd.sgd_update(w, w)
    with pytest.raises(mx.MXNetError, match="floating point"):
        mx.nd.sgd_update(mx.nd.ones((3,), dtype="int32"), mx.nd.ones((3,), dtype="int32"), lr=0.1)
    with pytest.raises(mx.MXNetError, match="num_weights"):
        mx.nd.multi_sgd_update(w, w, lrs=(0.1, 0.2), wds=(0.0, 0.0), num_weights=2)
    with pytest.raises(mx.MXNetError, match="weight32.*float32"):
        mx.nd.mp_sgd_update(w.astype("float16"), w.astype("float16"), w.astype("float16"), lr=0.1)
    with pytest.raises(mx.MXNetError, match="share memory"):
        _update_inplace("sgd_mom_update", [w, mx.nd.ones((3,)), w], lr=0.1)


def test_not_recorded_and_refuses_to_overwrite_recorded_weight():
    w = mx.nd.ones((3,))
    w.attach_grad()
    with mx.autograd.record():
        y = w * 2
        res = mx.nd.sgd_update(w, mx.nd.ones((3,)), lr=0.1)
        with pytest.raises(mx.MXNetError):
            mx.nd.sgd_update(y, mx.nd.ones((3,)), lr=0.1, out=y)
    np.testing.assert_allclose(res.asnumpy(), [0.9, 0.9, 0.9], rtol=1e-6)


def test_symbol_form_round_trips_parameters():
    s = mx.sym.adam_update(
        mx.sym.var("w"), mx.sym.var("g"), mx.sym.var("m"), mx.sym.var("v"), lr=0.01, beta1=0.8
    )
    assert s.list_arguments() == ["w", "g", "m", "v"]
    again = mx.sym.load_json(s.tojson())
    assert again.attr_dict()[again.name]["beta1"] in ("0.8", "0.80000000000000004")


_BIG = """
import numpy as np, ferrograd as mx, sys
rng = np.random.default_rng(5)
arrs = [mx.nd.array(rng.standard_normal(300_001).astype(np.float32)) for _ in range(3)]
arrs.append(mx.nd.array(np.abs(rng.standard_normal(300_001)).astype(np.float32)))
mx.nd.adam_update(*arrs, out=arrs[0], lr=0.01, wd=0.1, clip_gradient=0.5)
sys.stdout.buffer.write(b"".join(a.asnumpy().tobytes() for a in arrs))
"""


def test_large_update_bitwise_identical_for_any_thread_count():
    outs = []
    for threads in ("1", "2"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        outs.append(
            subprocess.run(
                [sys.executable, "-c", _BIG], env=env, capture_output=True, check=True
            ).stdout
        )
    assert outs[0] == outs[1] and len(outs[0]) == 4 * 4 * 300_001
