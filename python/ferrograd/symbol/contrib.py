"""``mx.sym.contrib``: MXNet 1.x's contributed symbol functions (the Zipfian candidate
sampler)."""

from ..ndarray.contrib import _zipfian


def rand_zipfian(true_classes, num_sampled, range_max):
    """The symbolic form of ``nd.contrib.rand_zipfian``: three outputs (samples, expected counts
    of ``true_classes``, expected counts of the samples)."""
    from .. import symbol
    return _zipfian(symbol, true_classes, num_sampled, range_max)


__all__ = ["rand_zipfian"]
