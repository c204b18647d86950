"""Issue 19: the Rust-side defects the operator fuzzer found, one regression test each.

Each case once aborted the process (an infallible allocation sized by a parameter) or reported an
"internal error", so each runs in a child process: a regression fails the test instead of killing
the test run. The child prints the exception's class names and message; the test checks that it
is a clean error naming the op.
"""

import os
import subprocess
import sys
import textwrap

import pytest

_CHILD = textwrap.dedent("""
    import resource, sys
    # 8 GB of address space: a huge request is refused rather than granted lazily.
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
    import ferrograd as mx
    nd, sym = mx.nd, mx.sym
    try:
        result = {call}
    except Exception as e:
        print("RAISED", " ".join(c.__name__ for c in type(e).__mro__), "|",
              str(e).replace(chr(10), " "))
    else:
        print("RETURNED", result)
    # The process is still usable.
    print("AFTER", (nd.array([1.0, 2.0]) * 3).asnumpy().tolist())
""")


def _run(call):
    env = dict(os.environ, RAYON_NUM_THREADS="1", OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", _CHILD.format(call=call)], capture_output=True,
                         text=True, timeout=120, env=env)
    assert res.returncode == 0, f"child died ({res.returncode}): {res.stderr[-2000:]}"
    assert "AFTER [3.0, 6.0]" in res.stdout, res.stdout
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith(("RAISED", "RETURNED")))
    assert line.startswith("RAISED"), line
    classes, message = line[len("RAISED "):].split(" | ", 1)
    assert "internal error" not in message, message
    return classes.split(), message


_CONV = ("sym.Convolution(sym.var('x'), kernel=(3, 3), num_filter=2, pad={pad})"
         ".simple_bind(mx.cpu(), x=(1, 1, 5, 5))")


@pytest.mark.parametrize("pad", ["(2**62, 4)", "(4, 2**62)", "(2**63 - 1, 1)"])
def test_bound_convolution_with_an_overflowing_pad_is_a_shape_error(pad):
    # simple_bind reports inference errors as a RuntimeError listing the arguments, as MXNet.
    classes, message = _run(_CONV.format(pad=pad))
    assert "RuntimeError" in classes and "simple_bind error" in message
    assert "Convolution" in message and "too large" in message


def test_bound_convolution_with_a_huge_but_countable_pad_is_a_memory_error():
    # (1, 2, 2**41 + 3, 11) float32 elements exist but cannot be allocated.
    classes, message = _run(_CONV.format(pad="(2**40, 4)") + ".forward()")
    assert "MemoryError" in classes and "MXNetError" in classes
    assert "bytes" in message


def test_bound_convolution_matches_the_imperative_error():
    classes, message = _run("nd.Convolution(nd.ones((1, 1, 5, 5)), nd.ones((2, 1, 3, 3)), "
                            "nd.zeros((2,)), kernel=(3, 3), num_filter=2, pad=(2**62, 4))")
    assert "MXNetError" in classes and "Convolution" in message and "too large" in message


@pytest.mark.parametrize("n", ["2**32", "2**62", "2**31"])
def test_slice_channel_with_an_absurd_num_outputs_is_a_value_error(n):
    classes, message = _run(f"sym.SliceChannel(sym.var('x'), num_outputs={n})")
    assert "ValueError" in classes and "MXNetError" in classes
    assert "SliceChannel" in message and "num_outputs" in message


def test_slice_channel_within_the_int_range_still_builds():
    res = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import ferrograd as mx
        s = mx.sym.SliceChannel(mx.sym.var('x'), num_outputs=3, name='sc')
        print(s.list_outputs())
        e = s.simple_bind(mx.cpu(), x=(2, 6))
        e.forward(x=mx.nd.arange(12).reshape((2, 6)))
        print([o.asnumpy().tolist() for o in e.outputs])
    """)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "['sc_output0', 'sc_output1', 'sc_output2']" in res.stdout
    assert "[[[0.0, 1.0], [6.0, 7.0]], [[2.0, 3.0], [8.0, 9.0]], [[4.0, 5.0], [10.0, 11.0]]]" \
        in res.stdout


@pytest.mark.parametrize("call", [
    "nd.Pad(nd.ones((4,)), mode='constant', pad_width=(6, 2**40))",
    "nd.Pad(nd.ones((1, 1, 4, 4)), mode='constant', pad_width=(0, 0, 0, 0, 6, 2**40, 1, 1))",
    "nd.Pad(nd.ones((1, 1, 4, 4)), mode='edge', pad_width=(0, 0, 0, 0, 2**40, 2**40, 1, 1))",
])
def test_pad_with_a_huge_width_is_a_memory_error_naming_pad(call):
    classes, message = _run(call)
    assert "MemoryError" in classes and "MXNetError" in classes
    assert "Pad" in message and "bytes" in message


def test_bound_pad_with_a_huge_width_is_a_memory_error():
    # The executor allocates its memory plan for the whole graph: the error names the bytes.
    classes, message = _run("sym.Pad(sym.var('x'), mode='constant', "
                            "pad_width=(0, 0, 0, 0, 6, 2**40, 1, 1))"
                            ".simple_bind(mx.cpu(), x=(1, 1, 4, 4))")
    assert "MemoryError" in classes and "MXNetError" in classes
    assert "bytes" in message


@pytest.mark.parametrize("call", [
    "nd.Pad(nd.ones((4,)), mode='constant', pad_width=(2**63 - 1, 2**63 - 1))",
    "nd.Pad(nd.ones((1, 1, 4, 4)), mode='constant', pad_width=(0, 0, 0, 0, 2**62, 2**62, 1, 1))",
    "sym.Pad(sym.var('x'), mode='constant', pad_width=(0, 0, 0, 0, 2**62, 2**62, 1, 1))"
    ".infer_shape(x=(1, 1, 4, 4))",
])
def test_pad_whose_shape_overflows_is_a_clear_error(call):
    classes, message = _run(call)
    assert "MXNetError" in classes and "Pad" in message


def test_pad_of_ordinary_size_still_pads():
    import ferrograd as mx
    import numpy as np
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    got = mx.nd.Pad(mx.nd.array(x), mode="edge", pad_width=(0, 0, 0, 0, 1, 0, 0, 2)).asnumpy()
    np.testing.assert_array_equal(got, np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 2)), mode="edge"))
