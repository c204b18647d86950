"""``mx.nd.CachedOp``: a symbol called like a function on NDArrays."""

__all__ = ["CachedOp"]


class CachedOp:
    """``CachedOp(sym)(*arrays)`` runs ``sym`` with ``arrays`` bound to ``sym.list_inputs()``.

    Each call runs the graph op by op on the given arrays, so any input shape works and, under
    ``autograd.record()``, the call is recorded like the ops it contains. One output is returned
    as an NDArray, several as a list; ``out=`` (an NDArray or a list) receives the results.
    ``flags`` (MXNet's static-memory options) are accepted and have no effect.
    """

    def __init__(self, sym, flags=()):
        self._sym = sym
        self._flags = dict(flags)

    def __call__(self, *args, out=None, name=None, default_ctx=None):
        outs = self._sym.handle.eval_imperative(list(args))
        if out is not None:
            targets = out if isinstance(out, (list, tuple)) else [out]
            if len(targets) != len(outs):
                raise ValueError(f"CachedOp: out has {len(targets)} arrays for {len(outs)} "
                                 "outputs")
            for t, o in zip(targets, outs, strict=True):
                t[:] = o
            return out
        return outs[0] if len(outs) == 1 else outs
