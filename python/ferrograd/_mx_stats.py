"""Statistical checks of random generators (MXNet's ``test_utils`` names), used by random tests.

A *generator* is a function ``generator(n)`` returning ``n`` i.i.d. samples (NumPy array, list or
ferrograd array). The chi-square test needs SciPy, imported on first use.
"""

import math

import numpy as np

from ._mx_compare import _to_np

__all__ = ["gen_buckets_probs_with_ppf", "mean_check", "var_check", "chi_square_check",
           "verify_generator"]


def _samples(generator, nsamples):
    return _to_np(generator(nsamples)).ravel()


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equally likely buckets of a continuous distribution, from its quantile
    function ``ppf``: ``([(ppf(i/n), ppf((i+1)/n)) for i ...], [1/n] * n)``."""
    if not isinstance(nbuckets, int | np.integer) or nbuckets <= 0:
        raise ValueError(f"gen_buckets_probs_with_ppf: nbuckets must be a positive integer, "
                         f"got {nbuckets!r}")
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / nbuckets), ppf((i + 1) / nbuckets)) for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the sample mean lies within ``mu ± 3 sigma / sqrt(nsamples)``."""
    mean = _samples(generator, nsamples).mean()
    half_width = 3 * sigma / math.sqrt(nsamples)
    return bool(mu - half_width < mean < mu + half_width)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the unbiased sample variance lies within
    ``sigma² ± 3 sqrt(2 sigma⁴ / (nsamples - 1))``."""
    var = _samples(generator, nsamples).var(ddof=1)
    half_width = 3 * math.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - half_width < var < sigma ** 2 + half_width)


def _bucket_counts(samples, buckets):
    """Observed count per bucket: ranges ``(lo, hi)`` for a continuous distribution (a sample
    ``x`` counts in the range with ``lo <= x < hi``), values for a discrete one."""
    if isinstance(buckets[0], list | tuple):
        edges = np.asarray(buckets, dtype=np.float64).ravel()
        if np.any(np.diff(edges) < 0):
            raise ValueError("chi_square_check: bucket ranges must be ascending and must not "
                             f"overlap, got {buckets}")
        # an even position in the flattened edges means the sample fell inside a range
        where = np.searchsorted(edges, samples, side="right")
        inside = where % 2 == 1
        return np.bincount(where[inside] // 2, minlength=len(buckets))[:len(buckets)]
    return np.array([np.count_nonzero(samples == b) for b in buckets])


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Pearson's chi-square test of ``generator`` against the bucket probabilities ``probs``.

    ``buckets`` is a list of ascending, non-overlapping ``(lo, hi)`` ranges (continuous
    distributions) or of the possible values (discrete ones). Returns ``(p_value,
    observed_counts, expected_counts)``; a p-value above ~0.05 means the samples fit. (MXNet
    truncates the expected counts to integers, which newer SciPy rejects when they no longer
    add up to the sample count; here they stay exact.)
    """
    try:
        from scipy import stats
    except ImportError as e:
        raise ImportError("chi_square_check needs SciPy (pip install scipy)") from e
    if not isinstance(buckets, list) or not buckets:
        raise ValueError("chi_square_check: buckets must be a non-empty list")
    if len(probs) != len(buckets):
        raise ValueError(f"chi_square_check: {len(buckets)} buckets but {len(probs)} "
                         "probabilities")
    observed = _bucket_counts(_samples(generator, nsamples), buckets)
    expected = nsamples * np.asarray(probs, dtype=np.float64)
    # SciPy wants equal totals; they differ when probs do not sum to 1 exactly or samples fall
    # outside every bucket, so the test compares the shape of the distribution
    scaled = expected * (observed.sum() / expected.sum()) if observed.sum() else expected
    _, p = stats.chisquare(f_obs=observed, f_exp=scaled)
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Runs :func:`chi_square_check` ``nrepeat`` times and raises ``AssertionError`` unless at
    least ``nrepeat * success_rate`` runs have a p-value above ``alpha``. Returns the p-values."""
    runs = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    p_values = [r[0] for r in runs]
    passed = sum(p > alpha for p in p_values)
    if passed < nrepeat * success_rate:
        raise AssertionError(
            f"Generator test fails: {passed} of {nrepeat} chi-square runs have p > {alpha} "
            f"(p={p_values}, observed={[list(r[1]) for r in runs]}, "
            f"expected={[list(r[2]) for r in runs]}).\nbuckets={buckets}, probs={probs}")
    return p_values
