"""``mx.sym.sparse``: MXNet's sparse operator names for graphs. Symbol graphs compute on dense
values (a variable's ``stype`` is recorded, and what a sparse operator computes is the same as
its dense one), so each name is the dense ``mx.sym`` function; the few without one raise
``NotImplementedError`` naming themselves."""

from .. import symbol as _symbol
from ..ndarray.sparse import _OPS

__all__ = list(_OPS)


def _missing(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"mx.sym.sparse.{name}: not available in symbol graphs; use "
                                  f"mx.nd.sparse.{name} on arrays")
    fn.__name__ = fn.__qualname__ = name
    return fn


globals().update({n: getattr(_symbol, n, None) or _missing(n) for n in _OPS})
