"""``mx.sym.contrib``: MXNet 1.x's contributed symbol functions (the Zipfian candidate
sampler, ``SparseEmbedding``, and the control-flow operators ``foreach``, ``while_loop`` and
``cond``, whose bodies are subgraphs of one node: see ``contrib_flow``)."""

from ..ndarray.contrib import _zipfian
from .contrib_flow import cond, foreach, while_loop


def rand_zipfian(true_classes, num_sampled, range_max):
    """The symbolic form of ``nd.contrib.rand_zipfian``: three outputs (samples, expected counts
    of ``true_classes``, expected counts of the samples)."""
    from .. import symbol
    return _zipfian(symbol, true_classes, num_sampled, range_max)


def SparseEmbedding(data=None, weight=None, input_dim=None, output_dim=None,  # noqa: N802
                    dtype="float32", deterministic=False, name=None, attr=None):
    """MXNet's deprecated ``contrib.SparseEmbedding``: ``Embedding`` with a row-sparse weight
    gradient (``sparse_grad=True``); auto-named ``sparseembedding<N>`` as in MXNet.
    ``deterministic`` only chose MXNet's GPU kernel."""
    from . import _OPS
    from ._ops import _make
    if input_dim is None or output_dim is None:
        raise TypeError("SparseEmbedding: input_dim and output_dim are required")
    embedding = _make(_OPS["Embedding"]._spec, "SparseEmbedding")
    return embedding(data=data, weight=weight, input_dim=input_dim, output_dim=output_dim,
                     dtype=dtype, sparse_grad=True, name=name, attr=attr)


__all__ = ["rand_zipfian", "SparseEmbedding", "foreach", "while_loop", "cond"]


def _export_registered(ops):
    """Every registered ``_contrib_<name>`` operator of ``ops`` as ``sym.contrib.<name>``, as in
    MXNet, auto-named after ``<name>`` (``box_nms0``); called by ``mx.sym`` once its op table
    exists."""
    from ._ops import _make
    prefix = "_contrib_"
    found = {k[len(prefix):]: _make(v._spec, k[len(prefix):]) for k, v in ops.items()
             if k.startswith(prefix)}
    globals().update(found)
    __all__.extend(sorted(k for k in found if k not in __all__))
