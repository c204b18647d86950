"""gluon.data.SplitSampler: each worker's share of a dataset (no MPI needed)."""

import numpy as np
import pytest
from ferrograd import gluon
from ferrograd.gluon.data import SplitSampler


def test_consecutive_parts_are_equal_and_disjoint():
    parts = [list(SplitSampler(10, 3, k, shuffle=False)) for k in range(3)]
    assert parts == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]  # sample 9 is left out: equal steps
    assert all(len(SplitSampler(10, 3, k)) == 3 for k in range(3))


def test_interleaved_parts():
    parts = [list(SplitSampler(11, 4, k, shuffle=False, interleave=True)) for k in range(4)]
    assert parts == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_shuffle_permutes_only_the_own_part():
    np.random.seed(1)
    s = SplitSampler(100, 4, 2)
    first, second = list(s), list(s)
    assert sorted(first) == list(range(50, 75)) == sorted(second)
    assert first != second  # a fresh order per pass


def test_with_dataloader_covers_the_part():
    data = gluon.data.ArrayDataset(np.arange(12, dtype="float32"))
    loader = gluon.data.DataLoader(data, batch_size=2,
                                   sampler=SplitSampler(len(data), 2, 1, shuffle=False))
    seen = np.concatenate([b.asnumpy() for b in loader])
    np.testing.assert_array_equal(seen, np.arange(6, 12))


@pytest.mark.parametrize("args,match", [
    ((10, 0, 0), "num_parts"),
    ((10, 2, 2), "part_index"),
    ((10, 2, -1), "part_index"),
    ((-1, 2, 0), "length"),
])
def test_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        SplitSampler(*args)
