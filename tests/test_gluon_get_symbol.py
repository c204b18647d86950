"""``autograd.get_symbol`` of a recorded hybridized call shows what ran, as MXNet 1.9 does: the
cached graph's own operators when it has at most ``inline_limit`` of them (default 2), else one
``_CachedOp`` node reading the call's inputs and the block's parameters. Node counts and ops were
checked against MXNet 1.9.1 (three Dense layers then ``* 2``: 11 nodes inlined, 9 as _CachedOp)."""

import json

import ferrograd as mx
import numpy as np
import pytest


def _dense_net(n_layers):
    net = mx.gluon.nn.HybridSequential()
    with net.name_scope():
        for _ in range(n_layers):
            net.add(mx.gluon.nn.Dense(10))
    net.initialize()
    return net


def _recorded(net, **hybridize):
    net.hybridize(**hybridize)
    x = mx.nd.ones((1, 10))
    x.attach_grad()
    with mx.autograd.record():
        y = net(x) * 2
    return x, y


def _nodes(y):
    nodes = json.loads(mx.autograd.get_symbol(y).tojson())["nodes"]
    return [(n["op"], len(n["inputs"])) for n in nodes]


@pytest.mark.parametrize("limit, layers, inlined", [(3, 3, True), (0, 3, False), (None, 2, True),
                                                     (None, 3, False), (2, 3, False)])
def test_inline_limit_decides_what_get_symbol_shows(limit, layers, inlined):
    kw = {} if limit is None else {"inline_limit": limit}
    _, y = _recorded(_dense_net(layers), **kw)
    nodes = _nodes(y)
    ops = [op for op, _ in nodes if op != "null"]
    if inlined:
        # data + (weight, bias) per layer as variables, the layers' ops, then the scalar product.
        assert ops == ["FullyConnected"] * layers + ["_mul_scalar"]
        assert len(nodes) == 1 + 2 * layers + layers + 1
    else:
        assert ops == ["_CachedOp", "_mul_scalar"]
        assert ("_CachedOp", 1 + 2 * layers) in nodes
        assert len(nodes) == 1 + 2 * layers + 2


def test_conformance_shape_of_the_inline_test():
    # MXNet's own check: inlining three ops adds exactly two nodes over the one _CachedOp node.
    net = _dense_net(3)
    _, y1 = _recorded(net, inline_limit=3)
    _, y0 = _recorded(net, inline_limit=0)
    assert len(_nodes(y1)) == len(_nodes(y0)) + 2


def test_inlined_symbol_computes_the_same_values():
    net = _dense_net(3)
    x, y = _recorded(net, inline_limit=3)
    sym = mx.autograd.get_symbol(y)
    # Arguments: the call's input, then the parameters in the block's order.
    args = sym.list_arguments()
    params = [p.data() for p in net.collect_params().values()]
    values = dict(zip(args, [x] + params, strict=True))
    exe = sym.bind(mx.cpu(), values)
    exe.forward()
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), y.asnumpy(), rtol=1e-6)
    y.backward()  # the recorded call still differentiates
    assert np.abs(x.grad.asnumpy()).sum() > 0


def test_cached_op_node_cannot_run():
    net = _dense_net(3)
    x, y = _recorded(net, inline_limit=0)
    sym = mx.autograd.get_symbol(y)
    arrays = [x] + [p.data() for p in net.collect_params().values()]
    shapes = {name: a.shape for name, a in zip(sym.list_arguments(), arrays, strict=True)}
    with pytest.raises(mx.base.MXNetError, match="_CachedOp"):
        sym.infer_shape(**shapes)
