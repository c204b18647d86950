"""``mx.operator``: operators written in Python (MXNet's ``CustomOp`` / ``CustomOpProp``).

Register a :class:`CustomOpProp` subclass under a name with :func:`register`, then call it with
``nd.Custom(*inputs, op_type=name, **kwargs)``. As in MXNet, the keyword arguments reach the
property's ``__init__`` as strings, ``forward``/``backward`` write into preallocated arrays (use
:meth:`CustomOp.assign`), and the op is differentiable through ``autograd`` (it is recorded as one
node whose gradient calls ``backward``). ``sym.Custom`` (a custom op inside a bound executor) is
not supported yet and raises :class:`NotImplementedError`.
"""

import numpy as _np

from . import autograd as _autograd
from . import ndarray as _nd
from ._ferrograd import NDArray
from .base import MXNetError
from .context import current_context

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators"]

# MXNet's numeric dtype codes, which ``create_operator`` receives.
_DTYPE_CODES = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
                "int64": 6, "bool": 7}

_REGISTRY = {}


class CustomOp:
    """The computation of a custom operator: override :meth:`forward` and :meth:`backward`."""

    def forward(self, is_train, req, in_data, out_data, aux):
        """Computes ``out_data`` from ``in_data`` (write with :meth:`assign` and ``req``)."""
        raise NotImplementedError

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Computes ``in_grad`` from ``out_grad`` (write with :meth:`assign` and ``req``)."""
        raise NotImplementedError

    def assign(self, dst, req, src):
        """Writes ``src`` into ``dst`` as ``req`` says: 'null' (skip), 'write'/'inplace', 'add'."""
        if req == "null":
            return
        if req in ("write", "inplace"):
            dst[:] = src
        elif req == "add":
            dst[:] = dst + src
        else:
            raise ValueError(f"CustomOp.assign: unknown req {req!r} "
                             "(expected 'null', 'write', 'inplace' or 'add')")


class CustomOpProp:
    """The description of a custom operator: its inputs, outputs, shapes, types and which values
    its backward needs. ``need_top_grad=False`` declares a loss-like op whose backward ignores
    the output gradient."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """``(input shapes, output shapes, aux shapes)``; by default every output has the first
        input's shape."""
        return in_shape, (in_shape[0],) * len(self.list_outputs()), ()

    def infer_type(self, in_type):
        """``(input types, output types, aux types)``; by default all are the first input's."""
        t = in_type[0]
        return (in_type, [t] * len(self.list_outputs()),
                [t] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype):
        """Storage types (only 'default' is supported)."""
        return (in_stype, ["default"] * len(self.list_outputs()),
                ["default"] * len(self.list_auxiliary_states()))

    def list_arguments(self):
        """Names of the inputs (default ``['data']``)."""
        return ["data"]

    def list_outputs(self):
        """Names of the outputs (default ``['output']``)."""
        return ["output"]

    def list_auxiliary_states(self):
        """Names of the auxiliary states (default none)."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Which values backward reads: the output gradients (if ``need_top_grad``), the inputs
        and the outputs."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """Returns the :class:`CustomOp` that computes the op; override it."""
        raise NotImplementedError


def register(reg_name):
    """Class decorator registering a :class:`CustomOpProp` subclass as ``op_type=reg_name``."""
    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise TypeError(f"mx.operator.register({reg_name!r}): expected a CustomOpProp "
                            f"subclass, got {prop_cls!r}")
        _REGISTRY[reg_name] = prop_cls
        return prop_cls
    return do_register


def get_all_registered_operators():
    """Names of the registered custom operators."""
    return list(_REGISTRY)


def _make_prop(op_type, kwargs):
    if op_type is None:
        raise MXNetError("Custom: the op_type argument is required")
    if op_type not in _REGISTRY:
        raise MXNetError(f"Custom: cannot find custom operator {op_type!r} "
                         f"(registered: {sorted(_REGISTRY)})")
    return _REGISTRY[op_type](**{k: str(v) for k, v in kwargs.items()})


def _shape_list(shapes, what, n, op_type):
    shapes = list(shapes)
    if len(shapes) != n:
        raise MXNetError(f"Custom {op_type!r}: infer_shape returned {len(shapes)} {what} shapes, "
                         f"expected {n}")
    return [tuple(int(d) for d in s) for s in shapes]


class _CustomNode(_autograd.Function):
    """One call of a custom op: the forward runs ``op.forward``; the recorded gradient runs
    ``op.backward``."""

    def __init__(self, op_type, prop, n_args):
        super().__init__()
        self.op_type, self.prop, self.n_args = op_type, prop, n_args

    def forward(self, *inputs):
        prop, op_type = self.prop, self.op_type
        args, aux = list(inputs[:self.n_args]), list(inputs[self.n_args:])
        n_out, n_aux = len(prop.list_outputs()), len(prop.list_auxiliary_states())
        if len(aux) != n_aux:
            raise MXNetError(f"Custom {op_type!r}: expected {len(prop.list_arguments())} inputs "
                             f"and {n_aux} auxiliary states, got {len(inputs)} arrays")
        shapes = prop.infer_shape([list(x.shape) for x in args])
        out_shapes = _shape_list(shapes[1], "output", n_out, op_type)
        types = prop.infer_type([_np.dtype(x.dtype).type for x in args])
        out_types = list(types[1])
        if len(out_types) != n_out:
            raise MXNetError(f"Custom {op_type!r}: infer_type returned {len(out_types)} output "
                             f"types, expected {n_out}")
        codes = [_DTYPE_CODES.get(_np.dtype(x.dtype).name, -1) for x in args]
        self.op = prop.create_operator(current_context(), [list(x.shape) for x in args], codes)
        outs = [_nd.zeros(s, dtype=_np.dtype(t).name)
                for s, t in zip(out_shapes, out_types, strict=True)]
        self.op.forward(is_train=int(_autograd.is_training()), req=["write"] * n_out,
                        in_data=args, out_data=outs, aux=aux)
        self.in_data, self.out_data, self.aux = args, outs, aux
        return outs[0] if n_out == 1 else tuple(outs)

    def backward(self, *out_grads):
        in_grad = [_nd.zeros(x.shape, dtype=x.dtype) for x in self.in_data]
        self.op.backward(req=["write"] * len(in_grad), out_grad=list(out_grads),
                         in_data=self.in_data, out_data=self.out_data, in_grad=in_grad,
                         aux=self.aux)
        return tuple(in_grad) + (None,) * len(self.aux)


def _custom_nd(*inputs, op_type=None, name=None, out=None, **kwargs):
    """``nd.Custom``: runs the custom operator registered as ``op_type`` on ``inputs`` (arguments
    then auxiliary states, positionally or by their names); other keywords go to the property's
    ``__init__`` as strings. Returns one NDArray, or a list for several outputs."""
    arrays = {k: kwargs.pop(k) for k in list(kwargs) if isinstance(kwargs[k], NDArray)}
    prop = _make_prop(op_type, kwargs)
    names = list(prop.list_arguments()) + list(prop.list_auxiliary_states())
    inputs = list(inputs)
    for k in names[len(inputs):]:
        if k in arrays:
            inputs.append(arrays.pop(k))
    if arrays or len(inputs) != len(names):
        raise MXNetError(f"Custom {op_type!r}: expected inputs {names}, got {len(inputs)} "
                         f"positional arrays and unknown array keywords {sorted(arrays)}")
    for i, x in enumerate(inputs):
        if not isinstance(x, NDArray):
            raise TypeError(f"Custom {op_type!r}: input {names[i]} must be an NDArray, "
                            f"got {type(x).__name__}")
    res = _CustomNode(op_type, prop, len(prop.list_arguments()))(*inputs)
    outs = [res] if isinstance(res, NDArray) else list(res)
    if out is not None:
        targets = [out] if isinstance(out, NDArray) else list(out)
        for t, y in zip(targets, outs, strict=True):
            t[:] = y
        return out
    return outs[0] if len(outs) == 1 else outs


def _custom_sym(*args, **kwargs):
    """``sym.Custom``: not supported yet (custom ops run imperatively through ``nd.Custom``)."""
    raise NotImplementedError(
        "sym.Custom is not supported yet: a Python custom operator cannot run inside a bound "
        "executor; use nd.Custom (imperative, differentiable with autograd)")
