"""``mx.sym.sparse``: MXNet's sparse-storage symbol names; each raises ``NotImplementedError``
(sparse storage is issue 20), so code importing them loads and fails clearly when used."""

from ..ndarray.sparse import _OPS, _make_functions

__all__ = list(_OPS)

globals().update(_make_functions("mx.sym.sparse", _OPS))
