"""Legacy ``mx.rnn``: symbolic cells against NumPy, fused vs unfused cells with unpacked weights,
encode_sentences, BucketSentenceIter and the RNN checkpoint helpers."""

import ferrograd as mx
import numpy as np
import pytest
from test_rnn_op import numpy_rnn


def _eval(symbol, **arrays):
    ex = symbol.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in arrays.items()})
    return [o.asnumpy() for o in ex.forward()]


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_lstm_cell_unroll_matches_numpy_and_names_like_mxnet():
    rng = np.random.RandomState(0)
    cell = mx.rnn.LSTMCell(num_hidden=3, prefix="lstm_l0_")
    data = mx.sym.Variable("data")
    out, states = cell.unroll(4, inputs=data, merge_outputs=True)
    assert out.list_arguments() == ["data", "lstm_l0_i2h_weight", "lstm_l0_i2h_bias",
                                    "lstm_l0_h2h_weight", "lstm_l0_h2h_bias"]
    assert len(states) == 2
    x = rng.randn(2, 4, 5)
    w = {"lstm_l0_i2h_weight": rng.randn(12, 5) * 0.4, "lstm_l0_h2h_weight": rng.randn(12, 3) * 0.4,
         "lstm_l0_i2h_bias": rng.randn(12) * 0.1, "lstm_l0_h2h_bias": rng.randn(12) * 0.1}
    (got,) = _eval(out, data=x, **w)
    h = c = np.zeros((2, 3))
    for t in range(4):
        a = (x[:, t] @ w["lstm_l0_i2h_weight"].T + w["lstm_l0_i2h_bias"]
             + h @ w["lstm_l0_h2h_weight"].T + w["lstm_l0_h2h_bias"])
        i, f, g, o = _sigmoid(a[:, :3]), _sigmoid(a[:, 3:6]), np.tanh(a[:, 6:9]), _sigmoid(a[:, 9:])
        c = f * c + i * g
        h = o * np.tanh(c)
        np.testing.assert_allclose(got[:, t], h, rtol=1e-5, atol=1e-6)


def test_lstm_bias_initialised_with_forget_bias():
    cell = mx.rnn.LSTMCell(num_hidden=2, prefix="l_", forget_bias=2.5)
    out, _ = cell.unroll(2, inputs=mx.sym.Variable("data"), merge_outputs=True)
    mod = mx.mod.Module(out, data_names=["data"], label_names=None)
    mod.bind(data_shapes=[("data", (1, 2, 3))])
    mod.init_params(mx.init.Uniform(0.1))
    bias = mod.get_params()[0]["l_i2h_bias"].asnumpy()
    np.testing.assert_array_equal(bias, [0, 0, 2.5, 2.5, 0, 0, 0, 0])


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_fused_cell_equals_numpy_and_its_unfused_stack(mode):
    rng = np.random.RandomState(1)
    fused = mx.rnn.FusedRNNCell(3, num_layers=2, mode=mode, bidirectional=True, prefix="f_")
    data = mx.sym.Variable("data")
    out, _ = fused.unroll(4, inputs=data, layout="TNC", merge_outputs=True)
    gates = {"lstm": 4, "gru": 3}.get(mode, 1)
    size = sum(2 * gates * 3 * ((2 if l == 0 else 6) + 3 + 2) for l in range(2))
    x, p = rng.randn(4, 2, 2), rng.randn(size) * 0.4
    (got,) = _eval(out, data=x, f_parameters=p)
    zeros = np.zeros((4, 2, 3))
    want = numpy_rnn(x, p, zeros, zeros if mode == "lstm" else None, mode, 2, 2, 3)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    args = fused.unpack_weights({"f_parameters": mx.nd.array(p)})
    first = {"lstm": "_i", "gru": "_r"}.get(mode, "")
    assert "f_parameters" not in args and args[f"f_r1_h2h{first}_weight"].shape == (3, 3)
    assert np.allclose(fused.pack_weights(args)["f_parameters"].asnumpy(), p, atol=1e-7)
    stack = fused.unfuse()
    uout, _ = stack.unroll(4, inputs=data, layout="TNC", merge_outputs=True)
    names = [n for n in uout.list_arguments() if n != "data"]
    if mode == "rnn_tanh":
        merged = {n: args[n.replace("_weight", "_weight").replace("_bias", "_bias")] for n in names}
    else:
        # Unfused cells hold all gates in one matrix: concatenate the per-gate pieces.
        sfx = {"lstm": ["_i", "_f", "_c", "_o"], "gru": ["_r", "_z", "_o"]}[mode]
        merged = {}
        for n in names:
            base, kind = n.rsplit("_", 1)
            merged[n] = mx.nd.concat(*[args[f"{base}{s}_{kind}"] for s in sfx], dim=0)
    (ugot,) = _eval(uout, data=x, **{k: v.asnumpy() for k, v in merged.items()})
    np.testing.assert_allclose(ugot, want, rtol=1e-5, atol=1e-5)


def test_encode_sentences_builds_and_applies_a_vocabulary():
    coded, vocab = mx.rnn.encode_sentences([["a", "b"], ["b", "c", "a"]], invalid_label=0,
                                           start_label=0)
    assert coded == [[1, 2], [2, 3, 1]] and vocab == {"\n": 0, "a": 1, "b": 2, "c": 3}
    again, _ = mx.rnn.encode_sentences([["c", "z"]], vocab=vocab, unknown_token="a")
    assert again == [[3, 1]]
    with pytest.raises(KeyError, match="unknown token 'z'"):
        mx.rnn.encode_sentences([["z"]], vocab=vocab)


def test_bucket_sentence_iter_pads_shifts_and_buckets():
    rng = np.random.RandomState(2)
    sents = [list(rng.randint(1, 9, size=n)) for n in [3, 3, 4, 4, 7, 7, 7, 12]]
    it = mx.rnn.BucketSentenceIter(sents, 2, buckets=[4, 8], invalid_label=-1)
    assert it.default_bucket_key == 8 and it.provide_data[0].shape == (2, 8)
    batches = list(it)
    assert sorted(b.bucket_key for b in batches) == [4, 4, 8]
    for b in batches:
        d, lab = b.data[0].asnumpy(), b.label[0].asnumpy()
        assert d.shape == (2, b.bucket_key) and b.provide_data[0].shape == d.shape
        np.testing.assert_array_equal(lab[:, :-1], d[:, 1:])
        assert np.all(lab[:, -1] == -1)
    tn = mx.rnn.BucketSentenceIter(sents, 2, buckets=[4, 8], layout="TN")
    assert tn.next().data[0].shape[1] == 2


def test_rnn_checkpoint_round_trip(tmp_path):
    fused = mx.rnn.FusedRNNCell(2, num_layers=1, mode="gru", prefix="g_")
    out, _ = fused.unroll(3, inputs=mx.sym.Variable("data"), merge_outputs=True)
    p = mx.nd.array(np.arange(3 * 2 * (4 + 2 + 2), dtype=np.float32) / 10)
    prefix = str(tmp_path / "m")
    mx.rnn.save_rnn_checkpoint(fused, prefix, 1, out, {"g_parameters": p}, {})
    saved = mx.nd.load(prefix + "-0001.params")
    assert "arg:g_l0_i2h_r_weight" in saved and "arg:g_parameters" not in saved
    _, arg, _ = mx.rnn.load_rnn_checkpoint(fused, prefix, 1)
    np.testing.assert_allclose(arg["g_parameters"].asnumpy(), p.asnumpy())
