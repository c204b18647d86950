"""``mx.viz``: a printed layer table and a Graphviz picture of a Symbol's graph.

Both read the graph from the symbol's JSON (the same node list MXNet walks) and the shapes from
shape inference, so the table and the picture show what a bind would compute.
"""

import functools
import json
import re
import warnings

from .symbol import Symbol

__all__ = ["print_summary", "plot_network"]

# Op input slots that hold learnable parameters (moving statistics are auxiliary states and
# are not counted, as in MXNet).
_LEARNABLE_SLOTS = frozenset({"weight", "bias", "gamma", "beta"})
# Variables plot_network hides (hide_weights=True) or leaves undrawn, by MXNet's name suffixes.
_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean",
                    "_running_var", "_running_mean")
# plot_network's fill colours, as MXNet's.
_COLOURS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69",
            "#fccde5")


def _numbers(text):
    """The integers in a tuple attribute such as ``"(3, 3)"``, as strings."""
    return re.findall(r"\d+", text)


@functools.cache
def _slot_names(op):
    """Input slot names of a registered op (``()`` for variadic or unknown ops)."""
    from . import symbol as _sym
    fn = getattr(_sym, op, None)
    spec = getattr(fn, "_spec", None)
    if spec is None or spec.variadic:
        return ()
    return tuple(spec.inputs)


class _Graph:
    """A symbol's nodes with the inferred shape of every node output, when shapes are given."""

    def __init__(self, symbol, shape=None, dtype=None):
        if not isinstance(symbol, Symbol):
            raise TypeError(f"symbol must be a Symbol, got {type(symbol).__name__}")
        conf = json.loads(symbol.tojson())
        self.nodes = conf["nodes"]
        self.aux = set(symbol.list_auxiliary_states())
        internals = symbol.get_internals()
        names = internals.list_outputs()
        self.shapes = {}
        self.arg_shapes = {}
        shape = shape or {}
        arg, out, aux = internals.infer_shape_partial(**shape)
        if shape:
            undecided = [n for n, s in zip(names, out, strict=True) if not _known(s)]
            if undecided:
                raise ValueError("Input shape is incomplete: cannot infer the shapes of "
                                 + ", ".join(undecided[:10]) + f" from {shape}")
            self.shapes = dict(zip(names, out, strict=True))
        params = internals.list_arguments() + internals.list_auxiliary_states()
        for n, s in zip(params, arg + aux, strict=True):
            if _known(s):
                self.arg_shapes[n] = s
        self.output_names = set(names)
        # Which op input slots each node's outputs feed ("label", "weight", ...).
        self.uses = {i: [] for i in range(len(self.nodes))}
        for node in self.nodes:
            for pos, (src, _, _) in enumerate(node.get("inputs", [])):
                self.uses[src].append(self.slot_of(node, pos))
        self.types = None
        if dtype is not None:
            _, out_types, _ = internals.infer_type(**dtype)
            if out_types is None:
                raise ValueError(f"Input type is incomplete: cannot infer every type from {dtype}")
            self.types = dict(zip(names, out_types, strict=True))

    def output_key(self, node_id, index):
        """The ``get_internals().list_outputs()`` name of output ``index`` of a node."""
        node = self.nodes[node_id]
        if node["op"] == "null":
            return node["name"]
        single = node["name"] + "_output"
        numbered = f"{single}{index}"
        if numbered in self.output_names:
            return numbered
        return single

    def shape_text(self, node_id, index=0):
        """The output's shape without the batch axis, as ``CxHxW`` (``""`` when unknown)."""
        shape = self.shapes.get(self.output_key(node_id, index))
        return "" if shape is None else "x".join(str(d) for d in shape[1:])

    @staticmethod
    def slot_of(node, position):
        slots = _slot_names(node["op"])
        return slots[position] if position < len(slots) else None

    def is_parameter(self, node_id):
        """A variable that feeds some op's learnable slot, or an auxiliary state."""
        if self.nodes[node_id]["name"] in self.aux:
            return True
        return any(slot in _LEARNABLE_SLOTS for slot in self.uses[node_id])

    def is_label(self, node_id):
        """A variable that only feeds loss ops' ``label`` slots (not shown, as in MXNet)."""
        uses = self.uses[node_id]
        return self.nodes[node_id]["op"] == "null" and bool(uses) and all(
            u == "label" for u in uses)


def _known(shape):
    return shape is not None and len(shape) > 0 and all(d > 0 for d in shape)


def _size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _print_row(fields, positions):
    # Each field is cut where the next column starts, as MXNet's table does.
    line = ""
    for field, end in zip(fields, positions, strict=True):
        line += str(field)
        line = line[:end]
        line += " " * (end - len(line))
    print(line)


def print_summary(symbol, shape=None, line_length=120, positions=[.44, .64, .74, 1.]):  # noqa: B006
    """Prints the layer table of ``symbol``: each layer's name and op, its output shape without
    the batch axis (when ``shape``, a dict of input shapes, is given), its number of learnable
    parameters and the layers it reads, then the total.

    Parameter counts are the sizes of each layer's ``weight``/``bias``/``gamma``/``beta`` inputs
    as shape inference decides them (MXNet 1.9 derives them from the previous layer's channel
    count instead, which undercounts a ``FullyConnected`` after a 4-D layer and counts nothing for
    ``Deconvolution``); without ``shape`` only the parameters whose shapes follow from the layers'
    attributes alone are counted.
    """
    graph = _Graph(symbol, shape)
    nodes = graph.nodes
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    print("_" * line_length)
    _print_row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"], positions)
    print("=" * line_length)
    hidden = {i for i, n in enumerate(nodes) if n["op"] == "null" and graph.is_parameter(i)}
    rows = []
    for i, node in enumerate(nodes):
        if node["op"] == "null":
            if i in hidden or graph.is_label(i):
                continue
            rows.append((i, node, 0, []))
            continue
        previous, params = [], 0
        for pos, (src, _, _) in enumerate(node["inputs"]):
            if src in hidden:
                if graph.slot_of(node, pos) in _LEARNABLE_SLOTS:
                    params += _size(graph.arg_shapes.get(nodes[src]["name"], (0,)))
            elif not graph.is_label(src):
                previous.append(nodes[src]["name"])
        rows.append((i, node, params, previous))
    total = 0
    for k, (i, node, params, previous) in enumerate(rows):
        total += params
        _print_row([f"{node['name']}({node['op']})", graph.shape_text(i), params,
                    previous[0] if previous else ""], positions)
        for name in previous[1:]:
            _print_row(["", "", "", name], positions)
        print(("=" if k == len(rows) - 1 else "_") * line_length)
    print(f"Total params: {total}")
    print("_" * line_length)


def _node_look(node, base):
    """``(label, attributes)`` of an op node, with MXNet's labels and colours per op family."""
    op, attrs = node["op"], dict(base)
    params = node.get("attrs", {})
    label = node["name"]
    if op == "Convolution":
        stride = "x".join(_numbers(params["stride"])) if "stride" in params else "1"
        label = (f"Convolution\n{'x'.join(_numbers(params['kernel']))}/{stride}, "
                 f"{params['num_filter']}")
        attrs["fillcolor"] = _COLOURS[1]
    elif op == "FullyConnected":
        label = f"FullyConnected\n{params['num_hidden']}"
        attrs["fillcolor"] = _COLOURS[1]
    elif op == "BatchNorm":
        attrs["fillcolor"] = _COLOURS[3]
    elif op == "Activation":
        label = f"Activation\n{params['act_type']}"
        attrs["fillcolor"] = _COLOURS[2]
    elif op == "LeakyReLU":
        label = f"LeakyReLU\n{params.get('act_type', 'Leaky')}"
        attrs["fillcolor"] = _COLOURS[2]
    elif op == "Pooling":
        kernel = "x".join(_numbers(params["kernel"])) if "kernel" in params else "[]"
        stride = "x".join(_numbers(params["stride"])) if "stride" in params else "1"
        label = f"Pooling\n{params.get('pool_type', 'max')}, {kernel}/{stride}"
        attrs["fillcolor"] = _COLOURS[4]
    elif op in ("Concat", "Flatten", "Reshape"):
        attrs["fillcolor"] = _COLOURS[5]
    elif op == "Softmax":
        attrs["fillcolor"] = _COLOURS[6]
    else:
        attrs["fillcolor"] = _COLOURS[7]
        if op == "Custom":
            label = params["op_type"]
    return label, attrs


def plot_network(symbol, title="plot", save_format="pdf", shape=None, dtype=None,
                 node_attrs={}, hide_weights=True):  # noqa: B006 - MXNet's signature
    """A ``graphviz.Digraph`` of ``symbol``'s graph: one box per op (labelled and coloured by op
    family), an oval per input, and an edge from each layer back to each input it reads, labelled
    with that tensor's shape without the batch axis (``shape``: dict of input shapes) and its type
    (``dtype``: dict of input types). Weights, biases and batch-norm statistics are left out when
    ``hide_weights`` is true. ``node_attrs`` overrides the Graphviz node attributes.

    Needs the ``graphviz`` Python package (``pip install 'ferrograd[viz]'``); rendering it to a
    file needs Graphviz's ``dot`` program as well.
    """
    try:
        from graphviz import Digraph
    except ImportError as e:
        raise ImportError("mx.viz.plot_network needs the 'graphviz' Python package; install it "
                          "with the optional extra: pip install 'ferrograd[viz]'") from e
    graph = _Graph(symbol, shape, dtype)
    nodes = graph.nodes
    names = [n["name"] for n in nodes]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        warnings.warn("There are multiple variables with the same name in your graph, this may "
                      "result in cyclic graph. Repeated names: " + ",".join(repeated),
                      RuntimeWarning, stacklevel=2)
    base = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034",
            "style": "filled"}
    base.update(node_attrs)
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for node in nodes:
        name = node["name"]
        if node["op"] == "null":
            if name.endswith(_WEIGHT_SUFFIXES):
                # Hidden, or (hide_weights=False) left for Graphviz to draw as a bare node.
                if hide_weights:
                    hidden.add(name)
                continue
            attrs = dict(base, shape="oval", fillcolor=_COLOURS[0])
            dot.node(name=name, label=name, **attrs)
            continue
        label, attrs = _node_look(node, base)
        dot.node(name=name, label=label, **attrs)
    for node in nodes:
        if node["op"] == "null":
            continue
        inputs = node["inputs"]
        if node["op"] == "_contrib_BilinearResize2D":
            inputs = inputs[:1]
        for src, index, _ in inputs:
            source = nodes[src]["name"]
            if source in hidden:
                continue
            label = graph.shape_text(src, index) if graph.shapes else ""
            if graph.types is not None:
                label += "(" + graph.types[graph.output_key(src, index)].__name__ + ")"
            dot.edge(tail_name=node["name"], head_name=source, label=label, dir="back",
                     arrowtail="open")
    return dot
