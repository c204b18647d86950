"""mx.viz: print_summary's layer table (shapes, parameter counts, totals) and plot_network's
Graphviz graph (labels, colours, edges with shapes and types)."""

import gzip
import json
import os
import shutil
import sys

import ferrograd as mx
import numpy as np
import pytest


def _small_cnn():
    data = mx.sym.var("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, name="conv1")
    x = mx.sym.BatchNorm(x, name="bn1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc1")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def _table(capsys, *args, **kwargs):
    """Rows of print_summary as {layer: (shape, params, [previous layers])} and the total."""
    mx.viz.print_summary(*args, **kwargs)
    lines = capsys.readouterr().out.splitlines()
    positions = [int(kwargs.get("line_length", 120) * p) for p in (.44, .64, .74, 1.)]
    rows, last, total = {}, None, None
    for line in lines:
        if line.startswith("Total params: "):
            total = int(line[len("Total params: "):])
            continue
        if not line.strip() or set(line) <= {"_", "="} or line.startswith("Layer (type)"):
            continue
        cols = [line[a:b].strip() for a, b in zip([0] + positions[:-1], positions, strict=True)]
        if cols[0]:
            last = cols[0]
            rows[last] = (cols[1], int(cols[2]), [cols[3]] if cols[3] else [])
        else:
            rows[last][2].append(cols[3])
    return rows, total, lines


def test_summary_counts_and_shapes_of_a_small_cnn(capsys):
    n, c, h, w = 2, 3, 8, 8
    rows, total, lines = _table(capsys, _small_cnn(), shape={"data": (n, c, h, w)})
    conv_params = 8 * c * 3 * 3 + 8           # weight + bias
    bn_params = 2 * 8                         # gamma + beta (moving stats are not parameters)
    oh, ow = h - 2, w - 2
    fc_params = (8 * (oh // 2) * (ow // 2)) * 10 + 10
    assert rows == {
        "data(null)": (f"{c}x{h}x{w}", 0, []),
        "conv1(Convolution)": (f"8x{oh}x{ow}", conv_params, ["data"]),
        "bn1(BatchNorm)": (f"8x{oh}x{ow}", bn_params, ["conv1"]),
        "relu1(Activation)": (f"8x{oh}x{ow}", 0, ["bn1"]),
        "pool1(Pooling)": (f"8x{oh // 2}x{ow // 2}", 0, ["relu1"]),
        "fc1(FullyConnected)": ("10", fc_params, ["pool1"]),
        "softmax(SoftmaxOutput)": ("10", 0, ["fc1"]),
    }
    assert total == conv_params + bn_params + fc_params
    # The frame: header between rules, '=' under the last row, total, closing rule.
    assert lines[0] == "_" * 120 and lines[2] == "=" * 120
    assert lines[1].split() == ["Layer", "(type)", "Output", "Shape", "Param", "#", "Previous",
                                "Layer"]
    assert lines[-3] == "=" * 120 and lines[-1] == "_" * 120
    assert all(len(line) == 120 for line in lines if not line.startswith("Total"))


def test_summary_of_an_mlp_with_no_bias_and_grouped_conv(capsys):
    data = mx.sym.var("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=6, num_group=2, no_bias=True,
                           pad=(1, 1), name="gconv")
    x = mx.sym.Flatten(x, name="flat")
    x = mx.sym.FullyConnected(x, num_hidden=16, name="fc1")
    x = mx.sym.Activation(x, act_type="tanh", name="tanh1")
    x = mx.sym.FullyConnected(x, num_hidden=4, no_bias=True, name="fc2")
    rows, total, _ = _table(capsys, x, shape={"data": (5, 4, 3, 3)}, line_length=100)
    gconv = 6 * (4 // 2) * 3 * 3
    fc1 = 6 * 3 * 3 * 16 + 16
    fc2 = 16 * 4
    assert rows["gconv(Convolution)"] == ("6x3x3", gconv, ["data"])
    # (ferrograd writes Flatten into the graph as Reshape(shape=(0, -1)).)
    flat = [v for k, v in rows.items() if k.startswith("flat(")]
    assert flat == [("54", 0, ["gconv"])]
    assert rows["fc1(FullyConnected)"] == ("16", fc1, ["flat"])
    assert rows["fc2(FullyConnected)"] == ("4", fc2, ["tanh1"])
    assert total == gconv + fc1 + fc2


def test_summary_lists_every_previous_layer_of_a_join(capsys):
    data = mx.sym.var("data")
    a = mx.sym.Convolution(data, kernel=(1, 1), num_filter=4, name="a")
    b = mx.sym.Activation(a, act_type="relu", name="b")
    s = mx.sym.elemwise_add(b, a, name="add")
    cat = mx.sym.Concat(s, a, dim=1, name="cat")
    rows, total, _ = _table(capsys, cat, shape={"data": (1, 2, 5, 5)})
    assert rows["add(elemwise_add)"] == ("4x5x5", 0, ["b", "a"])
    assert rows["cat(Concat)"] == ("8x5x5", 0, ["add", "a"])
    assert total == 4 * 2 + 4


def test_summary_without_shapes_has_no_shape_column(capsys):
    rows, total, _ = _table(capsys, _small_cnn())
    assert all(shape == "" for shape, _, _ in rows.values())
    assert list(rows) == ["data(null)", "conv1(Convolution)", "bn1(BatchNorm)",
                          "relu1(Activation)", "pool1(Pooling)", "fc1(FullyConnected)",
                          "softmax(SoftmaxOutput)"]


def test_summary_counts_deconvolution_and_embedding(capsys):
    data = mx.sym.var("data")
    x = mx.sym.Deconvolution(data, kernel=(2, 2), stride=(2, 2), num_filter=3, name="up")
    rows, total, _ = _table(capsys, x, shape={"data": (1, 5, 4, 4)})
    # MXNet 1.9's Deconvolution has no bias by default: weight (in, out, kh, kw) only.
    assert rows["up(Deconvolution)"] == ("3x8x8", 5 * 3 * 2 * 2, ["data"])
    tokens = mx.sym.var("tokens")
    e = mx.sym.Embedding(tokens, input_dim=50, output_dim=7, name="emb")
    rows, total, _ = _table(capsys, e, shape={"tokens": (2, 9)})
    assert rows["emb(Embedding)"] == ("9x7", 50 * 7, ["tokens"])
    assert total == 350


@pytest.mark.parametrize("name", ["resnet_v2", "densenet", "inception_v3"])
def test_summary_of_mxnet_exported_zoo_graphs(capsys, name):
    # Graphs written by MXNet 1.9.1's HybridBlock.export (tests/fixtures/gen_mxnet_zoo_symbols.py).
    path = os.path.join(os.path.dirname(__file__), "data", "onnx_zoo", f"{name}-symbol.json.gz")
    with open(path, "rb") as f:
        text = gzip.decompress(f.read()).decode()
    net = mx.sym.load_json(text)
    shape = (1, 3, 299, 299) if name == "inception_v3" else (1, 3, 56, 56)
    rows, total, _ = _table(capsys, net, shape={"data": shape}, line_length=200)
    arg_shapes, out_shapes, _ = net.infer_shape(data=shape)
    learnable = [s for n, s in zip(net.list_arguments(), arg_shapes, strict=True) if n != "data"]
    assert total == sum(int(np.prod(s)) for s in learnable)
    ops = [n for n in json.loads(text)["nodes"] if n["op"] != "null"]
    assert len(rows) == len(ops) + 1       # every layer, and the data input
    last = ops[-1]["name"]
    (row,) = [v for k, v in rows.items() if k.startswith(f"{last}(")]
    assert row[0] == "x".join(str(d) for d in out_shapes[0][1:])


def test_summary_bad_input():
    with pytest.raises(TypeError, match="Symbol"):
        mx.viz.print_summary("not a symbol")
    with pytest.raises(ValueError, match="incomplete"):
        mx.viz.print_summary(_small_cnn(), shape={"softmax_label": (2,)})


def test_plot_network_nodes_labels_and_edges():
    dot = mx.viz.plot_network(_small_cnn(), shape={"data": (2, 3, 8, 8)})
    src = dot.source
    assert dot.name == "plot" and dot.format == "pdf"
    for layer in ("data", "conv1", "bn1", "relu1", "pool1", "fc1", "softmax", "softmax_label"):
        assert f"\t{layer} [" in src, layer
    assert "conv1_weight" not in src and "bn1_moving_mean" not in src
    assert 'label="Convolution\n3x3/1, 8" fillcolor="#fb8072"' in src
    assert 'label="Pooling\nmax, 2x2/2x2" fillcolor="#80b1d3"' in src
    assert 'label="Activation\nrelu" fillcolor="#ffffb3"' in src
    assert 'label="FullyConnected\n10"' in src
    assert 'data [label=data fillcolor="#8dd3c7"' in src and "shape=oval" in src
    # Edges point from a layer back to its input, labelled with the input's shape.
    edges = [line.strip() for line in src.splitlines() if "->" in line]
    assert edges == [
        'conv1 -> data [label="3x8x8" arrowtail=open dir=back]',
        'bn1 -> conv1 [label="8x6x6" arrowtail=open dir=back]',
        'relu1 -> bn1 [label="8x6x6" arrowtail=open dir=back]',
        'pool1 -> relu1 [label="8x6x6" arrowtail=open dir=back]',
        'fc1 -> pool1 [label="8x3x3" arrowtail=open dir=back]',
        "softmax -> fc1 [label=10 arrowtail=open dir=back]",
        'softmax -> softmax_label [label="" arrowtail=open dir=back]',
    ]


def test_plot_network_types_weights_and_node_attrs():
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    dot = mx.viz.plot_network(out, title="mlp", save_format="svg", shape={"data": (4, 6)},
                              dtype={"data": np.float64}, hide_weights=False,
                              node_attrs={"shape": "ellipse", "fixedsize": "false"})
    src = dot.source
    assert dot.name == "mlp" and dot.format == "svg"
    assert 'fc -> data [label="6(float64)"' in src
    # Unhidden weights get edges (Graphviz draws them as plain nodes).
    assert "fc -> fc_weight" in src and "fc -> fc_bias" in src
    assert "fixedsize=false" in src and "shape=ellipse" in src


def test_plot_network_multi_output_edge_uses_the_right_output():
    data = mx.sym.var("data")
    parts = mx.sym.split(data, num_outputs=2, axis=1, name="sp")
    out = mx.sym.FullyConnected(parts[0], num_hidden=2, name="fc")
    src = mx.viz.plot_network(out, shape={"data": (1, 6)}).source
    assert 'fc -> sp [label=3 ' in src


def test_plot_network_without_graphviz_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError, match=r"ferrograd\[viz\]"):
        mx.viz.plot_network(_small_cnn())


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_plot_network_renders_svg():
    svg = mx.viz.plot_network(_small_cnn(), shape={"data": (2, 3, 8, 8)}).pipe(format="svg")
    text = svg.decode()
    assert text.lstrip().startswith("<?xml") and "conv1" in text


def test_plot_network_warns_about_repeated_names():
    out = mx.sym.var("x") + mx.sym.var("x")
    with pytest.warns(RuntimeWarning, match="Repeated names: x"):
        dot = mx.viz.plot_network(out)
    assert dot.source.count("\tx [") == 2
