"""``gluon.Parameter``, ``gluon.Constant`` and ``gluon.ParameterDict``.

A Parameter owns one data array per context plus its gradient buffers. Its shape may hold 0 for
dimensions not known yet; ``initialize`` then defers the work until the first forward pass fills
them in (``allow_deferred_init``).
"""

import re
import warnings
from collections import OrderedDict

import numpy as np

from .. import autograd
from .. import initializer as _init
from .. import ndarray as nd
from .. import symbol as _sym
from ..base import MXNetError
from ..context import Context, cpu, current_context

__all__ = ["DeferredInitializationError", "Parameter", "Constant", "ParameterDict"]

_GRAD_REQS = ("write", "add", "null")

# Bumped whenever any Parameter's arrays or grad_req change, so a hybridized block's bound
# executors can tell in O(1) that nothing they hold has moved (see gluon/_hybrid.py).
_generation = [0]


def _changed():
    _generation[0] += 1


class DeferredInitializationError(MXNetError):
    """A parameter's data was asked for before the first forward pass fixed its shape."""


class ParameterShapeError(MXNetError, AssertionError):
    """A shape that disagrees with a parameter's known shape (an AssertionError in MXNet too)."""


def _not_initialized(name):
    return RuntimeError(
        f"Parameter '{name}' has not been initialized. Note that you should initialize parameters "
        "and create Trainer with Block.collect_params() instead of Block.params because the later "
        "does not include Parameters of nested child Blocks")


def _ctx_list(ctx):
    if ctx is None:
        return [current_context()]
    if isinstance(ctx, Context):
        return [ctx]
    return list(ctx)


def _on_context(arr, ctx):
    """``arr`` reporting ``ctx`` as its context (ferrograd keeps every cpu(i) in one memory, so
    the copy alone would say cpu(0))."""
    if arr.context != ctx:
        arr._set_context(ctx)
    return arr


class Parameter:
    """A named weight. ``shape`` may contain 0 (unknown until the first forward)."""

    def __init__(self, name, grad_req="write", shape=None, dtype=np.float32, lr_mult=1.0,
                 wd_mult=1.0, init=None, allow_deferred_init=False, differentiable=True,
                 stype="default", grad_stype="default"):
        self.name = name
        self._shape = None
        self.shape = shape
        self.dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.init = init
        self.allow_deferred_init = allow_deferred_init
        self._differentiable = differentiable
        for what, value in (("stype", stype), ("grad_stype", grad_stype)):
            if value not in ("default", "row_sparse", "csr"):
                raise ParameterShapeError(f"{what} for Parameter '{name}' must be one of "
                                          f"'default', 'row_sparse', or 'csr', but got '{value}'")
        self._stype = stype
        self._grad_stype = grad_stype
        self._data = None
        self._grad = None
        self._ctx_list = None
        self._deferred_init = ()
        self._var = None
        self._trainer = None
        self._grad_req = None
        self.grad_req = grad_req

    def __repr__(self):
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"

    # -- attributes -------------------------------------------------------------------------
    @property
    def shape(self):
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        if new_shape is None:
            self._shape = None
            return
        if isinstance(new_shape, int):
            new_shape = (new_shape,)
        new_shape = tuple(int(d) for d in new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        compatible = len(self._shape) == len(new_shape) and all(
            old in (0, -1, new) for old, new in zip(self._shape, new_shape, strict=True))
        if not compatible:
            raise ParameterShapeError(
                f"Parameter '{self.name}': expected shape {new_shape} is incompatible with the "
                f"known shape {self._shape}")
        self._shape = new_shape

    @property
    def grad_req(self):
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        if req not in _GRAD_REQS:
            raise ValueError(f"Parameter '{self.name}': grad_req must be one of {_GRAD_REQS}, "
                             f"got {req!r}")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        _changed()
        if self._data is None:
            return
        if req == "null":
            self._grad = None
            self._data = [d.detach() for d in self._data]
        else:
            self._init_grad()

    @property
    def stype(self):
        return self._stype

    @property
    def grad_stype(self):
        return self._grad_stype

    # -- initialisation ---------------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False):
        """Create the data on ``ctx`` filled by ``init`` (else ``self.init``, else
        ``default_init``, else Uniform). Deferred while the shape still has unknown dims."""
        if default_init is None:
            default_init = _init.Uniform()
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter '{self.name}' is already initialized, ignoring. "
                          "Set force_reinit=True to re-initialize.", stacklevel=2)
            return
        self._data = self._grad = None
        _changed()
        ctx = _ctx_list(ctx)
        if init is None:
            init = default_init if self.init is None else self.init
        if not self.shape or np.prod(self.shape) <= 0:
            if self.allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise ValueError(f"Cannot initialize Parameter '{self.name}' because it has invalid "
                             f"shape: {self.shape}.")
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self):
        """Run a deferred ``initialize`` now that the shape is known."""
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        if not self.shape or np.prod(self.shape) <= 0:
            raise ValueError(f"Cannot initialize Parameter '{self.name}' because it has invalid "
                             f"shape: {self.shape}. Please specify in_units, in_channels, etc for "
                             "`Block`s.")
        self._deferred_init = ()
        with autograd.pause():
            if data is None:
                data = nd.zeros(self.shape, dtype=self.dtype, ctx=cpu())
                _init.create(default_init)(_init.InitDesc(self.name, {"__init__": init}), data)
            self._init_impl(data, ctx)

    def _init_impl(self, data, ctx_list):
        self._ctx_list = list(ctx_list)
        self._data = [_on_context(data.copyto(c), c) for c in self._ctx_list]
        if self._stype != "default":  # sparse weights are held as sparse arrays
            self._data = [_on_context(d.tostype(self._stype), d.context) for d in self._data]
        _changed()
        self._init_grad()

    def _grads_as_rows(self):
        """Whether the gradient is read from the data array's rows: row_sparse on one device.
        (On several devices each device has a row_sparse buffer linked to its data array's
        rows, which the Trainer's sum across devices can overwrite, as in MXNet.)"""
        return self._grad_stype == "row_sparse" and self._data is not None \
            and len(self._data) == 1

    def _linked_rows(self):
        """Whether each device has a row_sparse gradient buffer linked to its rows."""
        return self._grad_stype == "row_sparse" and self._data is not None \
            and len(self._data) > 1

    def _init_grad(self):
        if self.grad_req == "null":
            self._grad = None
            return
        if self._grads_as_rows():
            # The gradient lives with each data array as rows (no dense buffer): _grad holds
            # the data arrays and _sparse_grad reads their gradients.
            from ..ndarray.sparse_grad import mark_row_sparse
            for d in self._data:
                mark_row_sparse(d, self.grad_req)
            self._grad = list(self._data)
            return
        if self._linked_rows():
            from ..ndarray import sparse
            self._grad = [_on_context(sparse.zeros("row_sparse", d.shape, dtype=d.dtype),
                                      d.context) for d in self._data]
        else:
            self._grad = [_on_context(nd.zeros_like(d), d.context) for d in self._data]
        autograd.mark_variables(self._data, self._grad, self.grad_req)

    # -- access -----------------------------------------------------------------------------
    def _check_and_get(self, arrays, ctx):
        if arrays is not None:
            if ctx is list:
                return arrays
            if ctx is None:
                if len(arrays) == 1:
                    return arrays[0]
                ctx = current_context()
            for c, arr in zip(self._ctx_list, arrays, strict=True):
                if c == ctx:
                    return arr
            raise RuntimeError(f"Parameter '{self.name}' was not initialized on context {ctx}. "
                               f"It was only initialized on {self._ctx_list}.")
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because initialization was "
                "deferred. Actual initialization happens during the first forward pass. Please "
                "pass one batch of data through the network before accessing Parameters. You can "
                "also avoid deferred initialization by specifying in_units, num_features, etc., "
                "for "
                "network layers.")
        raise _not_initialized(self.name)

    def data(self, ctx=None):
        """The data array on ``ctx`` (the only one when initialised on one context)."""
        if self._stype != "default":
            raise RuntimeError(f"Cannot return a copy of Parameter '{self.name}' on ctx {ctx} "
                               f"via data() because its storage type is {self._stype}. Please "
                               "use row_sparse_data() instead.")
        return self._check_and_get(self._data, ctx)

    def list_data(self):
        if self._stype != "default":
            raise RuntimeError(f"Cannot return copies of Parameter '{self.name}' on all "
                               f"contexts via list_data() because its storage type is "
                               f"{self._stype}. Please use row_sparse_data() instead.")
        return self._check_and_get(self._data, list)

    def _reduce(self):
        """The value (first context) for saving, whatever the declared storage type."""
        return self._check_and_get(self._data, list)[0]

    def row_sparse_data(self, row_id):
        """The row_sparse weight on ``row_id``'s context, with (at least) the rows ``row_id``
        brought up to date from the Trainer's kvstore."""
        self._check_row_sparse("row_sparse_data()", "a copy of Parameter", row_id)
        out = self._check_and_get(self._data, row_id.context)
        self._trainer._row_sparse_pull(self, out, row_id)
        return out

    def list_row_sparse_data(self, row_id):
        """:meth:`row_sparse_data` on every context."""
        self._check_row_sparse("list_row_sparse_data()", "copies of Parameter", row_id)
        outs = self._check_and_get(self._data, list)
        for out in outs:
            self._trainer._row_sparse_pull(self, out, row_id)
        return outs

    def _check_row_sparse(self, method, what, row_id):
        if self._stype != "row_sparse":
            raise RuntimeError(f"Cannot return {what} '{self.name}' via {method} because its "
                               f"storage type is {self._stype}. Please use data() instead.")
        if self._trainer is None:
            raise RuntimeError(f"Cannot get row_sparse data for Parameter '{self.name}' when no "
                               "Trainer is created with it.")

    def grad(self, ctx=None):
        if self._data is not None and self._grad is None:
            raise RuntimeError(f"Cannot get gradient array for Parameter '{self.name}' because "
                               "grad_req='null'")
        return self._sparse_grad(self._check_and_get(self._grad, ctx))

    def list_grad(self):
        if self._data is not None and self._grad is None:
            raise RuntimeError(f"Cannot get gradient array for Parameter '{self.name}' because "
                               "grad_req='null'")
        return [self._sparse_grad(g) for g in self._check_and_get(self._grad, list)]

    def _sparse_grad(self, g):
        """A gradient buffer in the declared ``grad_stype`` (a view: writes reach the buffer)."""
        if self._grads_as_rows():  # g is the data array holding the rows
            return g.grad
        from ..ndarray.sparse_storage import sparse_view
        return sparse_view(g, self._grad_stype)

    def list_ctx(self):
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise _not_initialized(self.name)
        return self._ctx_list

    def _set_trainer(self, trainer):
        """Records the Trainer updating this Parameter (one only for sparse Parameters)."""
        if self._stype != "default" and self._trainer and trainer and self._trainer is not trainer:
            raise RuntimeError(f"Failed to set the trainer for Parameter '{self.name}' because it "
                               "was already set. More than one trainers for a "
                               f"{self._stype} Parameter is not supported.")
        self._trainer = trainer

    def set_data(self, data):
        """Overwrite the values on every context (shape must agree with the known shape)."""
        trainer = self._trainer
        if trainer is not None and trainer._kv_initialized and trainer._update_on_kvstore:
            trainer._reset_kvstore()  # the kvstore holds the old values
        if not isinstance(data, nd.NDArray):
            data = nd.array(np.asarray(data), dtype=self.dtype)
        self.shape = data.shape
        if self._data is None:
            if not self._deferred_init:
                raise _not_initialized(self.name)
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        for arr in self._data:
            arr[:] = data.astype(arr.dtype) if data.dtype != arr.dtype else data

    def zero_grad(self):
        """Set every gradient buffer to 0 (no-op for grad_req='null' or before init)."""
        if self._grad is None:
            return
        if self._grads_as_rows() or self._linked_rows():  # as MXNet: no stored rows are left
            from ..ndarray.sparse_grad import clear_rows
            for d in self._data:
                clear_rows(d)
            if self._grads_as_rows():
                return
        for g in self._grad:
            g[:] = 0

    def reset_ctx(self, ctx):
        """Move the data (and fresh gradients) to ``ctx``."""
        ctx = _ctx_list(ctx)
        if self._data is not None:
            with autograd.pause():
                self._init_impl(self._data[0], ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise ValueError(f"Cannot reset context for Parameter '{self.name}' because it has "
                             "not been initialized.")

    def cast(self, dtype):
        """Change the dtype of data and gradients."""
        self.dtype = dtype
        if self._data is None:
            return
        with autograd.pause():
            self._data = [d.astype(dtype) for d in self._data]
            _changed()
            self._init_grad()

    def var(self):
        """The symbol variable standing for this parameter (cached)."""
        if self._var is None:
            sparse = {"stype": self._stype} if self._stype != "default" else {}
            self._var = _sym.var(self.name, shape=self.shape, dtype=self.dtype,
                                 lr_mult=self.lr_mult, wd_mult=self.wd_mult, init=self.init,
                                 **sparse)
        return self._var


class _ConstantInit(_init.Initializer):
    """Copies a fixed value into the parameter."""

    def __init__(self, value):
        super().__init__()
        self.value = value

    def _init_weight(self, _, arr):
        _init._fill(arr, self.value)


class Constant(Parameter):
    """A parameter that never changes: grad_req is always 'null'."""

    def __init__(self, name, value):
        if not isinstance(value, nd.NDArray):
            value = nd.array(np.asarray(value))
        self.value = value
        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype,
                         init=_ConstantInit(value))

    def __repr__(self):
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def grad_req(self):
        return "null"

    @grad_req.setter
    def grad_req(self, req):
        if req != "null":
            warnings.warn(f'Constant parameter "{self.name}" does not support grad_req other than '
                          f'"null", and new value "{req}" is ignored.', stacklevel=2)
        self._grad_req = "null"


def _merge_shapes(name, have, want):
    """Known dims of either shape win over 0 (unknown); known dims must agree."""
    want = (want,) if isinstance(want, int) else tuple(want)
    if len(have) != len(want) or any(h and w and h != w for h, w in zip(have, want, strict=False)):
        raise ParameterShapeError(f"Parameter '{name}': desired shape {want} is incompatible "
                                  f"with the stored shape {have}")
    return tuple(h or w for h, w in zip(have, want, strict=True))


def _same_initializer(a, b):
    try:
        return _init.create(a).dumps() == _init.create(b).dumps()
    except (TypeError, ValueError):
        return False


class ParameterDict:
    """An ordered name -> Parameter map whose ``get`` adds ``prefix`` and creates on demand;
    ``shared`` is another dict to take existing parameters from (weight sharing)."""

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        body = "\n".join(f"  {p!r}" for p in self.values())
        head = f"{self._prefix} " if self._prefix else ""
        return f"{head}(\n{body}\n)"

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        return self._params.items()

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    @property
    def prefix(self):
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name, **kwargs):
        """The parameter ``prefix + name``, created with ``kwargs`` if missing; an existing one
        must agree with ``kwargs`` (0 dims in its shape are filled in)."""
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            param = Parameter(full, **kwargs)
            self._params[full] = param
            return param
        for key, want in kwargs.items():
            have = getattr(param, key, None)
            if have is None:
                setattr(param, key, want)
                continue
            if key == "shape" and want is not None:
                param.shape = _merge_shapes(full, have, want)
                continue
            if key == "dtype" and np.dtype(want) == np.dtype(have):
                continue
            if key == "init" and _same_initializer(want, have):
                continue
            if want is not None and want != have:
                raise MXNetError(f"Cannot retrieve Parameter '{full}' because desired attribute "
                                 f"does not match with stored for attribute '{key}': desired "
                                 f"'{want}' vs stored '{have}'.")
        return param

    def get_constant(self, name, value=None):
        """The constant ``prefix + name``, created from ``value`` if missing."""
        full = self._prefix + name
        param = self._get_impl(full)
        if param is None:
            if value is None:
                raise KeyError(f"No constant named '{full}'. Please specify value if you want to "
                               "create a new constant.")
            param = Constant(full, value)
            self._params[full] = param
        elif value is not None and not isinstance(param, Constant):
            raise MXNetError(f"Parameter '{full}' already exists but it is not a constant.")
        return param

    def update(self, other):
        """Add ``other``'s parameters; the same name must mean the same Parameter object."""
        for key, value in other.items():
            if key in self._params and self._params[key] is not value:
                raise MXNetError(f"Cannot update self with other because they have different "
                                 f"Parameters with the same name '{key}'")
        for key, value in other.items():
            self._params[key] = value

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False):
        """Initialise every parameter; ``init`` is the default for those without their own."""
        init = _init.Uniform() if init is None else _init.create(init)
        if verbose:
            init.set_verbosity(verbose=verbose)
        for param in self.values():
            param.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        for param in self.values():
            param.zero_grad()

    def reset_ctx(self, ctx):
        for param in self.values():
            param.reset_ctx(ctx)

    def list_ctx(self):
        seen = []
        for param in self.values():
            for c in param.list_ctx():
                if c not in seen:
                    seen.append(c)
        return seen

    def setattr(self, name, value):
        """Set attribute ``name`` (e.g. ``grad_req``, ``lr_mult``) on every parameter."""
        for param in self.values():
            setattr(param, name, value)

    def save(self, filename, strip_prefix=""):
        """Write every parameter's data to ``filename`` keyed by name minus ``strip_prefix``."""
        from . import _serialization
        _serialization.save_dict(self, filename, strip_prefix)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix="", cast_dtype=False, dtype_source="current"):
        """Load a file written by ``save`` (keys get ``restore_prefix`` prepended)."""
        from . import _serialization
        _serialization.load_dict(self, filename, ctx, allow_missing, ignore_extra,
                                 restore_prefix, cast_dtype, dtype_source)

    def _select(self, select):
        """A new dict (same prefix) with the parameters whose names match regex ``select``."""
        if select is None:
            return self
        pattern = re.compile(select)
        out = ParameterDict(self._prefix)
        out._params.update((k, v) for k, v in self.items() if pattern.match(k))
        return out
