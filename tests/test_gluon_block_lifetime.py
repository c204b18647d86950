"""A dropped block is freed at once (by reference counting), with its bound executors, even when
one of its children lives on in other blocks."""

import gc
import weakref

import ferrograd as mx
import numpy as np
from ferrograd import gluon, nd
from ferrograd.gluon import nn


class _Wrapper(gluon.HybridBlock):
    def __init__(self, inner, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.inner = inner
            self.dense = nn.Dense(2)

    def hybrid_forward(self, F, x):
        return self.dense(self.inner(x))


def _run_and_drop(shared, hybridize):
    net = _Wrapper(shared)
    net.dense.initialize()
    if hybridize:
        net.hybridize()
    x = nd.ones((3, 4))
    x.attach_grad()
    with mx.autograd.record():
        y = net(x)
    y.backward()
    out = y.asnumpy()
    return weakref.ref(net), out


def test_parent_is_freed_while_its_shared_child_lives():
    shared = nn.Dense(5, in_units=4)
    shared.initialize(mx.init.One())
    gc.disable()
    try:
        for hybridize in (False, True):
            ref, out = _run_and_drop(shared, hybridize)
            assert ref() is None, "the parent block outlived its last reference"
            assert out.shape == (3, 2) and np.isfinite(out).all()
    finally:
        gc.enable()


def test_name_scopes_still_nest_and_restore():
    outer = nn.HybridSequential(prefix="outer_")
    with outer.name_scope():
        inner = nn.HybridSequential()
        with inner.name_scope():
            leaf = nn.Dense(3)
        after = nn.Dense(3)
    assert inner.prefix == "outer_hybridsequential0_"
    assert leaf.prefix == "outer_hybridsequential0_dense0_"
    assert after.prefix == "outer_dense0_"
    top = nn.Dense(3)
    assert not top.prefix.startswith("outer_")
