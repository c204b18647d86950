"""``HybridBlock.register_op_hook``: the executor's monitor, in MXNet's callback form.

``callback(node_name, op_name, array)`` is called for every operator output of a hybridized
block's graph (``<node>_output``); with ``monitor_all`` each operator's inputs come first, named
``<node>_<input>`` after the operator's declared inputs (``<node>_input<i>`` for the operators
MXNet declares no input names for).
"""

import json

from .._ferrograd import _op_info

# MXNet 1.9 operators without FListInputNames: their inputs are reported as input0, input1, ...
_UNNAMED_INPUTS = {"Activation"}
_INPUT_NAMES = None


def _input_names(op):
    global _INPUT_NAMES
    if _INPUT_NAMES is None:
        _INPUT_NAMES = {}
        for name, aliases, inputs, *_ in _op_info():
            names = [i.rstrip("?") for i in inputs]
            for n in [name, *aliases]:
                _INPUT_NAMES[n] = names
    return _INPUT_NAMES.get(op, [])


class OpMonitor:
    """The executor monitor of one bound run, calling the block's op hooks."""

    def __init__(self, symbol, exe, hooks):
        self.hooks = hooks
        self.exe = exe
        nodes = json.loads(symbol.tojson())["nodes"]
        self.by_output = {}
        for node in nodes:
            if node["op"] == "null":
                continue
            declared = _input_names(node["op"])
            inputs = []
            for k, (src, index, *_) in enumerate(node["inputs"]):
                if node["op"] in _UNNAMED_INPUTS or k >= len(declared):
                    label = f"input{k}"
                else:
                    label = declared[k]
                source = nodes[src]
                key = source["name"] if source["op"] == "null" else (src, index)
                inputs.append((f"{node['name']}_{label}", key))
            self.by_output[f"{node['name']}_output"] = (node["op"], inputs, nodes.index(node))
        self.values = {}

    def __call__(self, name, array):
        op, inputs, node_id = self.by_output.get(name, ("", [], None))
        self.values[(node_id, 0)] = array
        for callback, monitor_all in self.hooks:
            if monitor_all:
                for input_name, key in inputs:
                    value = self._value(key)
                    if value is not None:
                        callback(input_name, op, value)
            callback(name, op, array)

    def _value(self, key):
        if isinstance(key, str):
            if key in self.exe.arg_dict:
                return self.exe.arg_dict[key]
            return self.exe.aux_dict.get(key)
        return self.values.get(key)
