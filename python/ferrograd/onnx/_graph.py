"""Graph translation: an MXNet Symbol and its parameters to an ONNX model.

The symbol's JSON node list is walked in order (it is topologically sorted). Variables found in
the parameters become initializers, the other variables graph inputs (a loss op's ``label``
variable is dropped, as MXNet's exporter does), and each op node goes through its converter in
``_ops_nn.py`` / ``_ops_tensor.py``. Shapes and dtypes of every value come from ferrograd's own
inference, so converters can emit static attributes.
"""

import json
import logging
import os
import time

import numpy as np

from .. import ndarray as nd
from .. import symbol as sym
from ..base import MXNetError
from ..visualization import _slot_names
from . import _ops_nn, _ops_tensor  # noqa: F401 - registers the converters
from ._registry import CONVERTERS, Node, UnsupportedError

# The ONNX operator set the converters target (MXNet 1.9's newest translation table).
OPSET = 13


def _onnx():
    try:
        import onnx
    except ImportError as e:
        raise ImportError("mx.onnx.export_model needs the 'onnx' package; install it with the "
                          "optional extra: pip install 'ferrograd[onnx]'") from e
    return onnx


def _as_numpy(value, name):
    if hasattr(value, "asnumpy"):
        return value.asnumpy()
    if isinstance(value, np.ndarray):
        return value
    raise TypeError(f"export_model: parameter '{name}' must be an NDArray or a NumPy array, got "
                    f"{type(value).__name__}")


def _load_params(params):
    """``{name: numpy array}`` from a dict, a ``[arg_params, aux_params]`` pair or a ``.params``
    file, with MXNet's ``arg:``/``aux:`` key prefixes removed."""
    if isinstance(params, (str, os.PathLike)):
        params = nd.load(os.fspath(params))
        if not isinstance(params, dict):
            raise ValueError("export_model: the params file holds a list of arrays, not a dict "
                             "of named parameters")
    elif isinstance(params, (list, tuple)) and len(params) == 2 and all(
            isinstance(p, dict) for p in params):
        params = {**params[0], **params[1]}
    elif not isinstance(params, dict):
        raise TypeError("export_model: params must be a dict, a [arg_params, aux_params] list or "
                        f"a .params file path, got {type(params).__name__}")
    out = {}
    for key, value in params.items():
        name = key[4:] if key.startswith(("arg:", "aux:")) else key
        out[name] = _as_numpy(value, key)
    return out


def _load_symbol(symbol):
    if isinstance(symbol, (str, os.PathLike)):
        return sym.load(os.fspath(symbol))
    if not isinstance(symbol, sym.Symbol):
        raise TypeError("export_model: sym must be a Symbol or a -symbol.json path, got "
                        f"{type(symbol).__name__}")
    return symbol


class GraphBuilder:
    """The ONNX graph under construction; converters add nodes and constants through it."""

    def __init__(self, onnx, dynamic):
        self.onnx, self.helper = onnx, onnx.helper
        self.dynamic = dynamic
        self.nodes, self.initializers = [], []
        self.names = set()

    def fresh(self, hint):
        """A tensor name not used yet, derived from ``hint``."""
        name, k = hint, 0
        while name in self.names:
            k += 1
            name = f"{hint}_{k}"
        self.names.add(name)
        return name

    def op(self, op_type, inputs, out=None, **attrs):
        """Adds one ONNX node; returns its (single) output name (``out`` or a fresh one)."""
        out = out or self.fresh(f"{op_type.lower()}")
        self.names.add(out)
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out],
                                                name=self.fresh(f"{out}_node"), **attrs))
        return out

    def const(self, value, hint, dtype=None):
        """An initializer holding ``value``; returns its name."""
        array = np.asarray(value, dtype=dtype)
        name = self.fresh(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(array, name))
        return name

    def ints(self, values, hint):
        """An int64 1-D initializer (shapes, axes, pads given as inputs)."""
        return self.const(np.asarray(values, dtype=np.int64).reshape(-1), hint)


def _label_only(nodes, node_id):
    """Whether variable ``node_id`` only feeds loss ops' ``label`` slots."""
    slots = []
    for node in nodes:
        for pos, (src, _, _) in enumerate(node.get("inputs", [])):
            if src == node_id:
                names = _slot_names(node["op"])
                slots.append(names[pos] if pos < len(names) else None)
    return bool(slots) and all(s == "label" for s in slots)


def _infer(symbol, known_shapes, known_types):
    """``{internal output name: (shape, dtype)}`` for every visible output of every node."""
    internals = symbol.get_internals()
    names = internals.list_outputs()
    try:
        _, shapes, _ = internals.infer_shape_partial(**known_shapes)
        _, types, _ = internals.infer_type(**known_types)
    except MXNetError as e:
        raise type(e)(f"ONNX export: shape/type inference failed: {e}") from e
    undecided = [n for n, s in zip(names, shapes, strict=True) if not s or 0 in s]
    if undecided or types is None:
        raise MXNetError("ONNX export: cannot infer the shapes of " + ", ".join(undecided[:10])
                         + f" from the input shapes {known_shapes}")
    return {n: (tuple(s), np.dtype(t)) for n, s, t in zip(names, shapes, types, strict=True)}


def _check_supported(nodes):
    missing = sorted({n["op"] for n in nodes if n["op"] != "null" and n["op"] not in CONVERTERS})
    if missing:
        raise UnsupportedError("ONNX export: no ONNX translation for operator(s) "
                               + ", ".join(missing))


def build_model(symbol, params, in_shapes, in_types, dynamic=False, dynamic_input_shapes=None,
                verbose=False):
    """The ``onnx.ModelProto`` of ``symbol`` with ``params`` (see ``export_model``)."""
    onnx = _onnx()
    helper = onnx.helper
    start = time.perf_counter()
    symbol, params = _load_symbol(symbol), _load_params(params)
    conf = json.loads(symbol.tojson())
    nodes = conf["nodes"]
    _check_supported(nodes)

    arg_set = set(symbol.list_inputs())
    input_ids = [i for i, n in enumerate(nodes) if n["op"] == "null" and n["name"] in arg_set
                 and n["name"] not in params and not _label_only(nodes, i)]
    # Variables bind by name: repeated variable nodes are one input.
    input_ids = [i for i in input_ids
                 if nodes[i]["name"] not in [nodes[j]["name"] for j in input_ids if j < i]]
    input_names = [nodes[i]["name"] for i in input_ids]
    in_shapes = [tuple(s) for s in (in_shapes or [])]
    if len(in_shapes) != len(input_names):
        raise ValueError(f"export_model: the graph has {len(input_names)} input(s) not found in "
                         f"params ({', '.join(input_names)}) but {len(in_shapes)} in_shapes were "
                         "given")
    if not isinstance(in_types, (list, tuple)):
        in_types = [in_types] * len(input_names)
    if len(in_types) != len(input_names):
        raise ValueError(f"export_model: {len(in_types)} in_types for {len(input_names)} inputs "
                         f"({', '.join(input_names)})")
    in_types = [np.dtype(t) for t in in_types]
    if dynamic:
        shown = dynamic_input_shapes or [tuple(None for _ in s) for s in in_shapes]
        if len(shown) != len(in_shapes) or any(
                len(a) != len(b) for a, b in zip(shown, in_shapes, strict=True)):
            raise ValueError("export_model: dynamic_input_shapes must give one shape of the same "
                             "rank per input")
    elif dynamic_input_shapes is not None:
        raise ValueError("export_model: dynamic_input_shapes needs dynamic=True")
    else:
        shown = in_shapes

    used_params = {k: v for k, v in params.items() if k in arg_set}
    info = _infer(symbol,
                  {**dict(zip(input_names, in_shapes, strict=True)),
                   **{k: v.shape for k, v in used_params.items()}},
                  {**dict(zip(input_names, in_types, strict=True)),
                   **{k: v.dtype for k, v in used_params.items()}})

    builder = GraphBuilder(onnx, dynamic)
    # Node names are ONNX tensor names; repeated ones are renamed as MXNet's exporter does.
    unique, seen, variables = [], set(), set()
    for i, node in enumerate(nodes):
        name = node["name"]
        is_var = node["op"] == "null"
        repeated = name in seen and not (is_var and name in variables)
        unique.append(f"idx_{i}_{name}" if repeated else name)
        seen.add(name)
        if is_var:
            variables.add(name)
    builder.names.update(unique)
    graph_inputs = []
    # (node id, output index) -> ONNX tensor name, and its internal (inference) name.
    tensor, key, added = {}, {}, set()
    for i, node in enumerate(nodes):
        name = unique[i]
        if node["op"] == "null":
            tensor[(i, 0)], key[(i, 0)] = name, node["name"]
            if name in added:
                continue
            added.add(name)
            if node["name"] in used_params:
                builder.initializers.append(
                    onnx.numpy_helper.from_array(used_params[node["name"]], name))
            elif i in input_ids:
                k = input_ids.index(i)
                graph_inputs.append(helper.make_tensor_value_info(
                    name, helper.np_dtype_to_tensor_dtype(in_types[k]), list(shown[k])))
            continue
        multi = f"{node['name']}_output0" in info
        count = sum(1 for k in range(64) if f"{node['name']}_output{k}" in info) if multi else 1
        for k in range(count):
            tensor[(i, k)] = f"{name}{k}" if multi else name
            key[(i, k)] = f"{node['name']}_output{k}" if multi else f"{node['name']}_output"
        inputs = [(src, idx) for src, idx, _ in node["inputs"]]
        if any((s, k) not in tensor for s, k in inputs):
            raise UnsupportedError(f"ONNX export: node '{name}' ({node['op']}) reads a hidden "
                                   "output (such as BatchNorm's batch mean), which ONNX "
                                   "inference graphs do not have")
        view = Node(name, node["op"], node.get("attrs", {}),
                    [tensor[s] for s in inputs], [info[key[s]][0] for s in inputs],
                    [info[key[s]][1] for s in inputs], [tensor[(i, k)] for k in range(count)],
                    [info[key[(i, k)]][0] for k in range(count)],
                    [info[key[(i, k)]][1] for k in range(count)])
        if verbose:
            logging.info("ONNX export: converting node %d, op %s, name %s", i, node["op"], name)
        CONVERTERS[node["op"]](builder, view)

    outputs = []
    for src, idx, _ in conf["heads"]:
        shape, dtype = info[key[(src, idx)]]
        dims = [None] * len(shape) if dynamic else list(shape)
        outputs.append(helper.make_tensor_value_info(
            tensor[(src, idx)], helper.np_dtype_to_tensor_dtype(dtype), dims))
    graph = helper.make_graph(builder.nodes, "ferrograd_exported_model", graph_inputs, outputs,
                              initializer=builder.initializers)
    model = helper.make_model(graph, producer_name="ferrograd",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    if verbose:
        logging.info("ONNX export: %d ONNX nodes in %.3f s", len(builder.nodes),
                     time.perf_counter() - start)
    return model
