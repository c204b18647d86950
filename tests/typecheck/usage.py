"""Typed MXNet-style code that must type-check against the generated stubs (`.ci/run` runs mypy
on this directory). It is not collected by pytest."""

import ferrograd as mx

x: mx.nd.NDArray = mx.nd.array([[1.0, -1.0]])
y = mx.nd.Activation(x, act_type="relu")
z = mx.nd.LeakyReLU(x, act_type="elu", slope=0.1)
s = x.sum(axis=(1,), keepdims=True)
t = x.topk(axis=None, k=1, ret_typ="value")
fc = mx.nd.FullyConnected(x, mx.nd.ones((3, 2)), num_hidden=3, no_bias=True)
c = mx.nd.concat(x, x, dim=0)
sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4, name="fc")
