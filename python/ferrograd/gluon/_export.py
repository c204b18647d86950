"""``HybridBlock.export`` and ``SymbolBlock``: a block's graph as MXNet's two files, and back.

``export`` writes ``path-symbol.json`` (the traced graph) and ``path-%04d.params`` with keys
``arg:<name>`` / ``aux:<name>``, the checkpoint layout of ``mx.model.save_checkpoint``.
``SymbolBlock`` wraps any Symbol as a block whose free variables (other than the inputs) are
Parameters, so an exported or MXNet-written model runs, hybridized, and can be fine-tuned.
"""

import warnings

from .. import ndarray as nd
from .. import symbol as sym
from ..base import MXNetError
from ..context import cpu
from . import _hybrid
from .block import HybridBlock

__all__ = ["SymbolBlock", "export_block"]

_STYPES = {"1": "row_sparse", "2": "csr"}


class UnsupportedStorageError(MXNetError, AssertionError):
    """A graph variable with sparse storage (an AssertionError in MXNet too)."""


def export_block(block, path, epoch=0, remove_amp_cast=True):
    graph = block._cached_graph
    if graph is None:
        raise RuntimeError("Please first call block.hybridize() and then run forward with this "
                           "block at least once before calling export.")
    symbol_file = f"{path}-symbol.json"
    params_file = f"{path}-{epoch:04d}.params"
    graph.symbol.save(symbol_file, remove_amp_cast=remove_amp_cast)
    arg_names = set(graph.arg_names)
    aux_names = set(graph.aux_names)
    records = {}
    for name, param in block.collect_params().items():
        if name in arg_names:
            records[f"arg:{name}"] = _first_copy(param)
        elif name in aux_names:
            records[f"aux:{name}"] = _first_copy(param)
        else:
            warnings.warn(f'Parameter "{name}" is not found in the graph. ', stacklevel=3)
    nd.save(params_file, records)
    return symbol_file, params_file


def _first_copy(param):
    """The parameter's value (from its first context) as a CPU array."""
    return param._reduce().copyto(cpu())


class SymbolBlock(HybridBlock):
    """A block that runs ``outputs`` (a Symbol or list of Symbols) with ``inputs`` (variables)
    as its call arguments; every other variable is a Parameter (auxiliary states with
    ``grad_req='null'``), taken from ``params`` when given there (sharing), else created with
    deferred shapes that the first call infers."""

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix="", params=None)
        self._prefix = ""
        from .parameter import ParameterDict
        self._params = ParameterDict("", params)
        if isinstance(inputs, sym.Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        input_names = []
        for i in inputs:
            if not isinstance(i, sym.Symbol) or len(i.list_arguments()) != 1 or \
                    i.get_children() is not None:
                raise ValueError(f"SymbolBlock: input {i} is not a variable: every input must be "
                                 "a symbol made with mx.sym.var")
            input_names.append(i.name)
        out_leaves, out_format, single = _hybrid.flatten_outputs(outputs)
        symbol = out_leaves[0] if len(out_leaves) == 1 else sym.Group(out_leaves)
        for name, attrs in symbol.attr_dict().items():
            stype = attrs.get("__storage_type__", "0")
            if stype not in ("0", "-1", "default"):
                raise UnsupportedStorageError(
                    f"SymbolBlock doesn't support Parameter '{name}' because its storage type "
                    f"is '{_STYPES.get(stype, stype)}'.")
        dtypes = _declared_dtypes(symbol)
        for name in symbol.list_arguments():
            if name not in input_names:
                self.params.get(name, allow_deferred_init=True, **dtypes.get(name, {}))
        for name in symbol.list_auxiliary_states():
            if name not in input_names:
                self.params.get(name, grad_req="null", allow_deferred_init=True,
                                **dtypes.get(name, {}))
        self._cached_graph = _hybrid._CachedGraph(self, symbol, input_names, [0] * len(inputs),
                                                  list(range(len(inputs))), out_format, single)
        self._fixed_graph = True
        self._active = True

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False,
                ignore_extra=False):
        """A SymbolBlock from an exported (or ``save_checkpoint``) ``symbol_file`` with
        ``input_names`` as its inputs, parameters loaded from ``param_file`` when given."""
        outputs = sym.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [sym.var(n, dtype="float32") for n in input_names]
        else:
            inputs = [sym.var(n) for n in input_names]
        block = SymbolBlock(outputs, inputs)
        if param_file is not None:
            block.collect_params().load(param_file, ctx=ctx, allow_missing=allow_missing,
                                        ignore_extra=ignore_extra, cast_dtype=True,
                                        dtype_source="saved")
        return block

    def hybridize(self, active=True, **kwargs):
        """A SymbolBlock always runs its graph; the flags are accepted."""
        super().hybridize(active, **kwargs)
        self._active = True

    def forward(self, x, *args):
        if isinstance(x, sym.Symbol):
            graph = self._cached_graph
            given = [x, *args]
            out = graph.symbol.__copy__()
            out._compose(**dict(zip(graph.input_names, given, strict=True)))
            if graph.single_output:
                return out
            return _hybrid.regroup([out[i] for i in range(len(out.list_outputs()))],
                                   graph.out_format)
        return _hybrid.call_cached(self, (x, *args))

    def __repr__(self):
        graph = self._cached_graph
        return (f"{type(self).__name__}(\n{graph.symbol!r} : {len(graph.input_names)} -> "
                f"{len(graph.symbol.list_outputs())}\n)")

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError("SymbolBlock runs its symbol; it has no hybrid_forward")

    def _clear_cached_op(self):
        pass

    def cast(self, dtype):
        for param in self.params.values():
            param.cast(dtype)


def _declared_dtypes(symbol):
    """``{name: {'dtype': ...}}`` for variables whose ``__dtype__`` attribute is set."""
    from ..symbol.symbol import _DTYPE_ID
    by_code = {str(code): name for name, code in _DTYPE_ID.items()}
    out = {}
    for name, attrs in symbol.attr_dict().items():
        code = attrs.get("__dtype__")
        if code in by_code:
            out[name] = {"dtype": by_code[code]}
    return out
