"""One array shared between Python threads (issue 19 item 3).

Every in-place update (`a += b`, `a[key] = v`, `src.copyto(a)`) is one step with respect to
other threads updating the same array: no update is lost, nothing panics, and readers see the
value before or after a write, never a mix. Small arrays keep the GIL during an op; arrays of at
least 2**17 elements release it, so both paths are exercised.
"""

import threading

import ferrograd as mx
import numpy as np
import pytest

nd = mx.nd

SMALL = 16
LARGE = 1 << 17  # ops on arrays this big release the GIL


def run_threads(*targets, timeout=120):
    """Runs each callable in its own thread; returns the exceptions they raised (none expected)."""
    errors = []
    start = threading.Barrier(len(targets))

    def wrap(fn):
        def body():
            try:
                start.wait()
                fn()
            except BaseException as e:  # noqa: BLE001 - a PanicException is a BaseException
                errors.append(e)

        return body

    threads = [threading.Thread(target=wrap(fn)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "deadlock: a thread did not finish"
    return errors


def assert_uniform(v, allowed=None):
    """All elements equal (no torn write), and the value among `allowed` when given."""
    assert (v == v.flat[0]).all(), f"torn value: {np.unique(v)}"
    if allowed is not None:
        assert v.flat[0] in allowed, v.flat[0]


def test_eight_threads_increment_small_array_exactly():
    a = nd.zeros((SMALL,))

    def bump():
        nonlocal a
        for _ in range(10_000):
            a += 1

    assert run_threads(*[bump] * 8) == []
    np.testing.assert_array_equal(a.asnumpy(), np.full(SMALL, 80_000, np.float32))


def test_threads_increment_large_array_exactly_while_gil_is_released():
    a = nd.zeros((LARGE,))

    def bump():
        nonlocal a
        for _ in range(40):
            a += 1

    assert run_threads(*[bump] * 4) == []
    np.testing.assert_array_equal(a.asnumpy(), np.full(LARGE, 160, np.float32))


@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_readers_see_whole_values_while_others_write(n):
    a = nd.zeros((n,))
    rounds = 2000 if n == SMALL else 30
    seen = []

    def write():
        nonlocal a
        for _ in range(rounds):
            a += 1

    def read():
        last = 0.0
        for _ in range(rounds):
            a.wait_to_read()
            v = a.asnumpy()
            assert_uniform(v)
            assert v[0] >= last  # increments only: a reader never goes back in time
            last = v[0]
            assert_uniform((a * 2).asnumpy())
            seen.append(last)

    assert run_threads(write, write, read, read) == []
    np.testing.assert_array_equal(a.asnumpy(), np.full(n, 2 * rounds, np.float32))
    assert seen and max(seen) <= 2 * rounds


@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_whole_array_assignment_is_never_torn(n):
    a = nd.zeros((n,))
    rounds = 2000 if n == SMALL else 30
    values = (1.0, 2.0, 3.0, 4.0)

    def assign(v):
        src = nd.full((n,), v)

        def body():
            for i in range(rounds):
                if i % 2:
                    a[:] = v
                else:
                    src.copyto(a)

        return body

    def read():
        for _ in range(rounds):
            assert_uniform(a.asnumpy(), (0.0, *values))

    assert run_threads(*[assign(v) for v in values], read) == []
    assert_uniform(a.asnumpy(), values)


def test_slice_updates_through_views_are_not_lost():
    a = nd.zeros((8, 4))

    def bump_rows(lo, hi):
        def body():
            for _ in range(2000):
                row = a[lo:hi]  # a view sharing a's storage
                row += 1

        return body

    # Overlapping slices: rows 2..5 are updated by two threads each.
    assert run_threads(bump_rows(0, 6), bump_rows(2, 8), bump_rows(0, 8)) == []
    expect = np.zeros((8, 4), np.float32)
    expect[0:6] += 2000
    expect[2:8] += 2000
    expect[0:8] += 2000
    np.testing.assert_array_equal(a.asnumpy(), expect)


def test_setitem_read_modify_write_through_subscript():
    a = nd.zeros((6,))

    def body():
        for _ in range(2000):
            a[1:4] += 1  # getitem, in-place add on the view, setitem of the view

    assert run_threads(body, body, body) == []
    np.testing.assert_array_equal(a.asnumpy(), [0, 6000, 6000, 6000, 0, 0])


@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_self_update_doubles_exactly(n):
    a = nd.ones((n,))
    rounds = 5

    def double():
        nonlocal a
        for _ in range(rounds):
            a += a  # reads and writes one array: must not deadlock on itself

    assert run_threads(*[double] * 4) == []
    np.testing.assert_array_equal(a.asnumpy(), np.full(n, 2.0 ** (4 * rounds), np.float32))


@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_crossed_updates_do_not_deadlock(n):
    a, b = nd.ones((n,)), nd.ones((n,))
    rounds = 2000 if n == SMALL else 20

    def a_from_b():
        nonlocal a
        for _ in range(rounds):
            a += b * 0  # reads b while b's writer may hold b's lock

    def b_from_a():
        nonlocal b
        for _ in range(rounds):
            b += a * 0

    def copy_ab():
        for _ in range(rounds):
            a.copyto(b)
            b.copyto(a)

    assert run_threads(a_from_b, b_from_a, copy_ab, copy_ab) == []
    np.testing.assert_array_equal(a.asnumpy(), np.ones(n, np.float32))
    np.testing.assert_array_equal(b.asnumpy(), np.ones(n, np.float32))


def test_threads_record_and_differentiate_a_shared_input():
    x = nd.array([1.0, 2.0, 3.0])
    results = [None] * 4

    def body(i):
        def run():
            for _ in range(50):
                xi = x.copy()
                xi.attach_grad()
                with mx.autograd.record():
                    y = (xi * xi * (i + 1)).sum()
                y.backward()
                results[i] = xi.grad.asnumpy()

        return run

    assert run_threads(*[body(i) for i in range(4)]) == []
    for i, g in enumerate(results):
        np.testing.assert_allclose(g, 2 * (i + 1) * np.array([1.0, 2.0, 3.0]))


def test_attach_grad_and_reads_from_other_threads():
    a = nd.ones((SMALL,))

    def mark():
        for _ in range(500):
            a.attach_grad()

    def read():
        for _ in range(500):
            g = a.grad
            assert g is None or g.shape == (SMALL,)
            assert a.shape == (SMALL,)
            assert_uniform(a.asnumpy(), (1.0,))

    assert run_threads(mark, read, read) == []
    np.testing.assert_array_equal(a.grad.asnumpy(), np.zeros(SMALL, np.float32))
