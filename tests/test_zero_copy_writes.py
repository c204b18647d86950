"""Writes through zero-copy DLPack exports (issue 19 item 10).

A DLPack export shares the array's memory (writes through the consumer are seen by the array,
as with MXNet's `to_dlpack_for_write`), but never the memory of a tensor autograd saved: a buffer
the tape holds is copied into the array at export, and tensors saved from an exported array are
private copies. PyTorch ignores the read-only flag, so these tests write through it; NumPy
honours the flag. Run the PyTorch half with `/opt/torchenv/bin/python`.
"""

import ferrograd as mx
import numpy as np
import pytest

nd = mx.nd


def torch_or_skip():
    return pytest.importorskip("torch")


def test_torch_write_after_recording_leaves_the_gradient_alone():
    torch = torch_or_skip()
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x * x  # saves x for backward
    t = torch.from_dlpack(x)
    t[0] = 100.0
    np.testing.assert_array_equal(x.asnumpy(), [100.0, 2.0, 3.0])  # shared with the array
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [2.0, 4.0, 6.0])  # from the recorded values
    np.testing.assert_array_equal(y.asnumpy(), [1.0, 4.0, 9.0])


def test_torch_write_after_a_later_recording_leaves_the_gradient_alone():
    torch = torch_or_skip()
    x = nd.array([[1.0, 2.0], [3.0, 4.0]])
    x.attach_grad()
    t = torch.from_dlpack(x)  # exported before anything is saved
    with mx.autograd.record():
        y = (x * x).sum() + (x.T * 3).sum() * x.T.sum()  # x and a lazy transpose saved
    t.fill_(-7.0)
    np.testing.assert_array_equal(x.asnumpy(), np.full((2, 2), -7.0))
    y.backward()
    v = np.array([[1.0, 2.0], [3.0, 4.0]])
    # d/dx [sum(x²) + 3·sum(x)²] = 2x + 6·sum(x)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * v + 6 * v.sum())


def test_torch_writes_are_seen_by_the_array_until_ferrograd_writes():
    torch = torch_or_skip()
    x = nd.array([1.0, 2.0, 3.0, 4.0])
    t = torch.from_dlpack(x)
    t[1] = 20.0
    np.testing.assert_array_equal(x.asnumpy(), [1.0, 20.0, 3.0, 4.0])
    view = x[1:3]  # views share the array's storage, hence the export's memory
    t[2] = 30.0
    np.testing.assert_array_equal(view.asnumpy(), [20.0, 30.0])
    x += 1  # ferrograd's write copies first: the tensor keeps the exported values
    np.testing.assert_array_equal(x.asnumpy(), [2.0, 21.0, 31.0, 5.0])
    np.testing.assert_array_equal(t.numpy(), [1.0, 20.0, 30.0, 4.0])


def test_torch_write_never_reaches_a_numpy_snapshot_taken_before():
    torch = torch_or_skip()
    x = nd.array([1.0, 2.0, 3.0])
    snap = x.to_numpy()  # a read-only snapshot holding the buffer
    t = torch.from_dlpack(x)
    t[:] = 0.0
    np.testing.assert_array_equal(snap, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(x.asnumpy(), [0.0, 0.0, 0.0])


def test_torch_copy_export_is_private():
    torch = torch_or_skip()
    x = nd.array([1.0, 2.0, 3.0])
    t = torch.from_dlpack(x.__dlpack__(copy=True))
    t[0] = 9.0
    np.testing.assert_array_equal(x.asnumpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(t.numpy(), [9.0, 2.0, 3.0])


def test_numpy_from_dlpack_is_read_only_and_recording_stays_right():
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = (x * x).sum()
    a = np.from_dlpack(x)
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0] = 5.0
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [2.0, 4.0, 6.0])


def test_exported_array_still_records_and_differentiates():
    x = nd.array([0.5, -1.0, 2.0])
    x.attach_grad()
    capsule = x.__dlpack__()  # the storage is now exported: saved tensors are copies
    with mx.autograd.record():
        y = (nd.exp(x) * x).sum()
    y.backward()
    v = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(x.grad.asnumpy(), np.exp(v) * (1 + v), rtol=1e-6)
    del capsule
