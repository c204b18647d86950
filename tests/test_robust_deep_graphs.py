"""Issue 19, item 2: deep symbol graphs never overflow the stack.

A chain `s = s + 1` repeated DEPTH times used to crash (SIGSEGV) beyond about 10⁵ nodes when
dropped, serialised or bound. Everything here runs in a child process so that a regression fails
the test instead of killing pytest. DEPTH is 2·10⁵ to keep the test near 10 s; the Rust test
`crates/ferrograd/tests/deep_graphs.rs` covers 10⁶.
"""

import os
import subprocess
import sys
import textwrap

DEPTH = 200_000

_CHILD = textwrap.dedent("""
    import pickle
    import ferrograd as mx
    N = {depth}
    s = mx.sym.var('x')
    for _ in range(N):
        s = s + 1
    print("args", s.list_arguments())
    text = s.tojson()
    loaded = mx.sym.load_json(text)
    print("loaded", len(loaded.get_internals().list_outputs()))
    del loaded
    print("shape", s.infer_shape(x=(2,))[1])
    composed = s(x=mx.sym.var('y'))
    print("composed", composed.list_arguments())
    del composed
    again = pickle.loads(pickle.dumps(s))
    del again
    exe = s.bind(mx.cpu(), {{'x': mx.nd.array([1.0, -1.0])}}, args_grad={{'x': mx.nd.zeros((2,))}})
    exe.forward(is_train=True)
    exe.backward(mx.nd.array([2.0, 3.0]))
    print("forward", exe.outputs[0].asnumpy().tolist(),
          "grad", exe.grad_arrays[0].asnumpy().tolist())
    del exe

    x = mx.nd.array([0.5, 1.5])
    x.attach_grad()
    with mx.autograd.record():
        y = x
        for _ in range(N):
            y = y + 1
    recorded = mx.autograd.get_symbol(y)
    print("recorded", len(recorded.list_arguments()), len(recorded.get_internals().list_outputs()))
    del recorded
    y.backward()
    print("tape grad", x.grad.asnumpy().tolist())
    del s, y
    print("dropped")
""")


def test_a_deep_chain_serialises_loads_binds_records_and_drops():
    env = dict(os.environ, RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", _CHILD.format(depth=DEPTH)], capture_output=True,
                         text=True, timeout=300, env=env)
    assert res.returncode == 0, f"child died ({res.returncode}): {res.stderr[-2000:]}"
    out = res.stdout
    assert "args ['x']" in out
    assert f"loaded {DEPTH + 1}" in out
    assert "shape [(2,)]" in out
    assert "composed ['y']" in out
    assert f"forward [{1.0 + DEPTH}, {-1.0 + DEPTH}] grad [2.0, 3.0]" in out
    assert f"recorded 1 {DEPTH + 1}" in out
    assert "tape grad [1.0, 1.0]" in out
    assert out.rstrip().endswith("dropped")
