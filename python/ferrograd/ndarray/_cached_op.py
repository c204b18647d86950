"""``nd.CachedOp``: a Symbol run imperatively, op by op, so that autograd records it like any
sequence of ``nd`` calls (MXNet 1.x's CachedOp; its static-memory flags are accepted and
ignored)."""

import json

from .._ferrograd import NDArray
from ..base import MXNetError


class CachedOp:
    """Calls ``sym`` on arrays given in ``sym.list_inputs()`` order: ``op(*inputs, out=None)``
    returns the output, or the list of outputs when the symbol has several."""

    def __init__(self, sym, flags=()):
        from . import _registry
        graph = json.loads(sym.tojson())
        self._nodes = graph["nodes"]
        self._heads = [tuple(h[:2]) for h in graph["heads"]]
        self._inputs = sym.list_inputs()
        self._ops = _registry.make_ops()
        self._flags = dict(flags)
        for node in self._nodes:
            if node["op"] != "null" and node["op"] not in self._ops:
                raise MXNetError(f"CachedOp: operator {node['op']!r} (node {node['name']!r}) "
                                 "is not available")

    def __call__(self, *args, out=None, **kwargs):
        if len(args) != len(self._inputs):
            raise MXNetError(f"CachedOp: expected {len(self._inputs)} input(s) "
                             f"({', '.join(self._inputs)}), got {len(args)}")
        if not all(isinstance(a, NDArray) for a in args):
            raise MXNetError("CachedOp: every input must be an NDArray")
        by_name = dict(zip(self._inputs, args, strict=True))
        values = []  # per node: its list of outputs
        for node in self._nodes:
            if node["op"] == "null":
                values.append([by_name[node["name"]]])
                continue
            ins = [values[i][k] for i, k, *_ in node["inputs"]]
            attrs = {k: v for k, v in node.get("attrs", {}).items() if not k.startswith("__")}
            res = self._ops[node["op"]](*ins, **attrs)
            values.append(res if isinstance(res, list) else [res])
        outs = [values[i][k] for i, k in self._heads]
        if out is not None:
            targets = out if isinstance(out, (list, tuple)) else [out]
            if len(targets) != len(outs):
                raise MXNetError(f"CachedOp: out has {len(targets)} array(s) for "
                                 f"{len(outs)} output(s)")
            for t, o in zip(targets, outs, strict=True):
                t[:] = o
            return out
        return outs[0] if len(outs) == 1 else outs
