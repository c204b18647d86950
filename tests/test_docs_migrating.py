"""docs/migrating-mxnet-models.md: every Python code block runs, in order, in one namespace (on
the page's tiny model), and the results it prints are the ones the page describes."""

import os
import re

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("graphviz")

PAGE = os.path.join(os.path.dirname(__file__), "..", "docs", "migrating-mxnet-models.md")


def _python_blocks():
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_page_has_the_steps():
    blocks = _python_blocks()
    joined = "\n".join(blocks)
    assert len(blocks) >= 7
    for call in ("mx.model.load_checkpoint", "simple_bind", ".bind(", "backward()",
                 "mx.viz.print_summary", "mx.viz.plot_network", "mx.onnx.export_model"):
        assert call in joined, call


def test_every_code_block_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for i, block in enumerate(_python_blocks()):
        try:
            exec(compile(block, f"{PAGE}:block{i}", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"code block {i} of {PAGE} failed:\n{block}") from e
    out = capsys.readouterr().out
    # The files each step writes.
    for name in ("mymodel-symbol.json", "mymodel-0000.params", "mymodel-ft-symbol.json",
                 "mymodel-ft-0001.params", "finetuned.gv", "finetuned.onnx"):
        assert (tmp_path / name).exists(), name
    # bind and simple_bind agree; the softmax rows sum to one.
    np.testing.assert_allclose(namespace["same"].asnumpy(), namespace["probs"].asnumpy(),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(namespace["probs"].asnumpy().sum(axis=1), 1, rtol=1e-5)
    # Fine-tuning learned the training set better than chance and moved the BN statistics.
    accuracies = [float(v) for v in re.findall(r"train accuracy ([0-9.]+)", out)]
    assert len(accuracies) == 4 and accuracies[-1] > accuracies[0]
    assert not np.allclose(namespace["fine_aux"]["bn1_moving_mean"].asnumpy(), 0)
    # The summary counts the new head's parameters: 8 channels x 4 x 4 -> 3 classes.
    assert re.search(r"fc_new\(FullyConnected\)\s+3\s+387\s", out)
    # ONNX Runtime agrees with ferrograd.
    np.testing.assert_allclose(namespace["onnx_probs"], namespace["ours"], rtol=1e-4, atol=1e-5)
