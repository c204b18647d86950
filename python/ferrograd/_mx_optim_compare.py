"""``compare_optimizer`` and ``compare_optimizer_noise_seeded`` of MXNet's ``test_utils``: run
two optimizers on equal weights and gradients and check their states and updated weights agree."""

import numpy as np

from ._mx_compare import rand_ndarray
from ._mx_misc import compare_ndarray_tuple


def _setup(shapes, dtype, w_stype, g_stype, ntensors):
    shapes = shapes if ntensors > 1 else [shapes]
    # As MXNet: the second (tested) optimizer gets the sparse arrays, the reference dense
    # copies; sparse weights store every row.
    w2 = [rand_ndarray(s, w_stype, dtype=dtype, density=1) for s in shapes]
    g2 = [rand_ndarray(s, g_stype, dtype=dtype) for s in shapes]
    w1 = [w.tostype("default") for w in w2]
    g1 = [g.tostype("default") for g in g2]
    return w1, g1, w2, g2


def _run(opt1, opt2, shapes, dtype, w_stype, g_stype, rtol, atol, compare_states, ntensors, seed):
    w1, g1, w2, g2 = _setup(shapes, dtype, w_stype, g_stype, ntensors)
    idx = list(range(ntensors))
    s1 = [opt1.create_state_multi_precision(i, w) for i, w in zip(idx, w1, strict=True)]
    s2 = [opt2.create_state_multi_precision(i, w) for i, w in zip(idx, w2, strict=True)]
    if compare_states:
        for a, b in zip(s1, s2, strict=True):
            compare_ndarray_tuple(a, b)
    one = ntensors == 1
    for opt, w, g, s in ((opt1, w1, g1, s1), (opt2, w2, g2, s2)):
        if seed is not None:
            from . import random  # the package attribute (mx.random), set after this module loads

            random.seed(seed)
        if one:
            opt.update_multi_precision(0, w[0], g[0], s[0])
        else:
            opt.update_multi_precision(idx, w, g, s)
    if compare_states:
        for a, b in zip(s1, s2, strict=True):
            compare_ndarray_tuple(a, b, rtol=rtol, atol=atol)
    for a, b in zip(w1, w2, strict=True):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=rtol, atol=atol)


def compare_optimizer(opt1, opt2, shapes, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Updates equal weights with ``opt1`` and ``opt2`` once and checks states and weights."""
    _run(opt1, opt2, shapes, dtype, w_stype, g_stype, rtol, atol, compare_states, ntensors, None)


def compare_optimizer_noise_seeded(opt1, opt2, shapes, dtype, noise_seed, w_stype="default",
                                   g_stype="default", rtol=1e-4, atol=1e-5, compare_states=True,
                                   ntensors=1):
    """:func:`compare_optimizer` for noisy optimizers (SGLD): the random seed is reset to
    ``noise_seed`` before each update."""
    _run(opt1, opt2, shapes, dtype, w_stype, g_stype, rtol, atol, compare_states, ntensors,
         noise_seed)

