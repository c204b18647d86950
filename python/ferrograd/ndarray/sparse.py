"""``mx.nd.sparse``: names of MXNet's sparse-storage API, present so code importing them loads.

ferrograd arrays are dense; sparse storage (``csr``, ``row_sparse``) is issue 20. Every function
and class here raises ``NotImplementedError`` naming that issue when used: nothing silently falls
back to dense.
"""

_CREATORS = ("csr_matrix", "row_sparse_array", "zeros", "empty", "array")

_ISSUE = "sparse storage (csr/row_sparse) is not implemented in ferrograd yet (issue 20)"

# MXNet's sparse operator names (the dense ones are in mx.nd; these take sparse inputs).
_OPS = (
    "add", "subtract", "multiply", "divide", "ElementWiseSum", "Embedding", "FullyConnected",
    "LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput", "abs",
    "adagrad_update", "adam_update", "add_n", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
    "arctanh", "broadcast_add", "broadcast_div", "broadcast_minus", "broadcast_mul",
    "broadcast_plus", "broadcast_sub", "cast_storage", "cbrt", "ceil", "clip", "concat", "cos",
    "cosh", "degrees", "dot", "elemwise_add", "elemwise_div", "elemwise_mul", "elemwise_sub",
    "exp", "expm1", "fix", "floor", "ftrl_update", "gamma", "gammaln", "log", "log10", "log1p",
    "log2", "make_loss", "mean", "negative", "norm", "radians", "relu", "retain", "rint", "round",
    "rsqrt", "sgd_mom_update", "sgd_update", "sigmoid", "sign", "sin", "sinh", "slice", "sqrt",
    "square", "stop_gradient", "sum", "tan", "tanh", "trunc", "where", "zeros_like",
)


def _unsupported(name, module):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"{module}.{name}: {_ISSUE}")

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = f"MXNet's sparse ``{name}``: raises NotImplementedError ({_ISSUE})."
    return fn


def _make_functions(module_name, names):
    return {name: _unsupported(name, module_name) for name in names}


globals().update(_make_functions("mx.nd.sparse", _OPS + _CREATORS))
__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", *_CREATORS, *_OPS]  # noqa: F822


class BaseSparseNDArray:
    """MXNet's sparse array base class; constructing one raises (see the module note)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}: {_ISSUE}")


class CSRNDArray(BaseSparseNDArray):
    """Compressed-sparse-row array (not available: see the module note)."""


class RowSparseNDArray(BaseSparseNDArray):
    """Row-sparse array (not available: see the module note)."""
