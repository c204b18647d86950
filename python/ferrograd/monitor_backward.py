"""Backward outputs for ``mx.mon.Monitor``: the gradient of every op node's inputs.

MXNet's monitor also reports ``<node>_backward_output<i>``, the gradient its backward computed
for input ``i`` of each op node (``<node>_backward_output`` when the node has one input).
ferrograd's executor runs a fused backward schedule without per-node names, so on the batches
the monitor is collecting, a *probe* copy of the graph is run instead: every op input edge
becomes ``elemwise_add(input, probe)`` with a zero probe variable, so the probe's gradient is the
gradient with respect to that edge. The probe executor gets copies of the arguments and auxiliary
states (the real ones are not touched), runs forward and backward with the same head gradients,
and hands each probe gradient to the monitor. It costs one extra forward and backward on
monitored batches only; ops that draw random numbers (Dropout) draw again, so their statistics
are those of another draw.
"""

import json

from . import symbol as _sym

_PROBE = "__monitor_probe"


def probe_symbol(symbol, aux_names):
    """(probe symbol, [(label, probe variable name)]) for ``symbol``. Auxiliary-state inputs
    (moving statistics) have no gradient and get no probe."""
    graph = json.loads(symbol.tojson())
    nodes = graph["nodes"]
    new_nodes, new_id, probes = [], {}, []
    for i, node in enumerate(nodes):
        if node["op"] == "null":
            new_id[i] = len(new_nodes)
            new_nodes.append(node)
            continue
        inputs = node.get("inputs", [])
        probed = [not (nodes[e[0]]["op"] == "null" and nodes[e[0]]["name"] in aux_names)
                  for e in inputs]
        n_probed = sum(probed)
        new_inputs = []
        for j, (entry, probe) in enumerate(zip(inputs, probed, strict=True)):
            moved = [new_id[entry[0]], *entry[1:]]
            if not probe:
                new_inputs.append(moved)
                continue
            var = f"{_PROBE}{len(probes)}"
            new_nodes.append({"op": "null", "name": var, "inputs": []})
            new_nodes.append({"op": "elemwise_add", "name": f"{var}_add",
                              "inputs": [moved, [len(new_nodes) - 1, 0, 0]]})
            new_inputs.append([len(new_nodes) - 1, 0, 0])
            label = f"{node['name']}_backward_output" + (str(j) if n_probed > 1 else "")
            probes.append((label, var))
        new_id[i] = len(new_nodes)
        new_nodes.append(dict(node, inputs=new_inputs))
    out = {"nodes": new_nodes,
           "arg_nodes": [k for k, n in enumerate(new_nodes) if n["op"] == "null"],
           "heads": [[new_id[h[0]], *h[1:]] for h in graph["heads"]],
           "attrs": graph.get("attrs", {})}
    return _sym.load_json(json.dumps(out)), probes


class BackwardProbe:
    """The probe executor of one bound executor (rebuilt when the bound shapes change)."""

    def __init__(self, exe):
        self.signature = self.signature_of(exe)
        symbol, self.probes = probe_symbol(exe._symbol, set(exe._aux_names))
        shapes = {n: a.shape for n, a in zip(exe._arg_names, exe.arg_arrays, strict=True)}
        types = {n: a.dtype for n, a in zip(exe._arg_names, exe.arg_arrays, strict=True)}
        reqs = {n: "write" if n.startswith(_PROBE) else "null" for n in symbol.list_arguments()}
        self.exe = symbol.simple_bind(exe._ctx, grad_req=reqs, type_dict=types, **shapes)

    @staticmethod
    def signature_of(exe):
        return tuple((a.shape, str(a.dtype)) for a in exe.arg_arrays)

    def run(self, exe, out_grads, is_train, callback):
        """Forward and backward of the probe graph on copies of ``exe``'s current values;
        ``callback(label, gradient)`` for every probed edge."""
        for name, arr in zip(exe._arg_names, exe.arg_arrays, strict=True):
            self.exe.arg_dict[name][:] = arr
        for name, arr in zip(exe._aux_names, exe.aux_arrays, strict=True):
            self.exe.aux_dict[name][:] = arr
        self.exe.forward(is_train=is_train)
        self.exe.backward(out_grads)
        for label, var in self.probes:
            callback(label, self.exe.grad_dict[var])
