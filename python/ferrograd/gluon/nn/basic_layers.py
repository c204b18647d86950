"""Containers and basic layers of ``gluon.nn``: Sequential, Dense, Dropout, Flatten, Lambda, ..."""

import warnings

from ... import ndarray as nd
from ...base import MXNetError
from ..block import Block, HybridBlock, _indent

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "Embedding", "Flatten", "Lambda",
           "HybridLambda", "Identity"]


def _children_repr(block):
    lines = [f"  ({key}): {_indent(repr(child), 2)}" for key, child in block._children.items()]
    return "{}(\n{}\n)".format(block.__class__.__name__, "\n".join(lines))


class _SequentialMixin:
    def add(self, *blocks):
        """Append blocks; they run in the order added."""
        for block in blocks:
            self.register_child(block)

    def __repr__(self):
        return _children_repr(self)

    def _run_children(self, x, args):
        """Feeds each child the previous one's output; a tuple/list output passes its first
        element as ``x`` and the rest as extra arguments."""
        for block in self._children.values():
            x = block(x, *args)
            args = ()
            if isinstance(x, (tuple, list)):
                x, args = x[0], tuple(x[1:])
        return (x,) + args if args else x

    def __getitem__(self, key):
        children = list(self._children.values())[key]
        if not isinstance(key, slice):
            return children
        out = type(self)(prefix=self._prefix)
        with out.name_scope():
            out.add(*children)
        return out

    def __len__(self):
        return len(self._children)


class Sequential(_SequentialMixin, Block):
    """Runs its children one after another."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybridize(self, active=True, **kwargs):
        """As Block.hybridize; warns when every child could live in a HybridSequential."""
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(f"All children of this Sequential layer '{self.prefix}' are "
                          "HybridBlocks. Consider using HybridSequential for the best "
                          "performance.", stacklevel=2)
        super().hybridize(active, **kwargs)

    def forward(self, x, *args):
        return self._run_children(x, args)


class HybridSequential(_SequentialMixin, HybridBlock):
    """Sequential whose children are all HybridBlocks."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args):
        return self._run_children(x, args)


class Dense(HybridBlock):
    """Fully connected layer: ``activation(dot(x, weight.T) + bias)``.

    ``weight`` has shape ``(units, in_units)``; ``in_units=0`` is inferred at the first forward.
    With ``flatten`` all axes but the first are collapsed; otherwise the last axis is the input.
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32",
                 weight_initializer=None, bias_initializer="zeros", in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units),
                                          init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(units,), init=bias_initializer,
                                            dtype=dtype, allow_deferred_init=True)
            else:
                self.bias = None
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def hybrid_forward(self, F, x, weight, bias=None):
        out = F.FullyConnected(x, weight, bias, no_bias=bias is None, num_hidden=self._units,
                               flatten=self._flatten, name="fwd")
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        shape = self.weight.shape
        in_units = shape[1] if len(shape) > 1 and shape[1] else None
        act = repr(self.act) if self.act is not None else "linear"
        return f"{self.__class__.__name__}({in_units} -> {shape[0]}, {act})"


class Dropout(HybridBlock):
    """Zeroes a fraction ``rate`` of inputs while training (``autograd.record()``), scaling the
    rest by ``1/(1-rate)``; identity at inference. ``axes`` shares the mask along those axes."""

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x) if hasattr(F, "identity") else x

    def __repr__(self):
        return f"{self.__class__.__name__}(p = {self._rate}, axes={self._axes})"


class Embedding(HybridBlock):
    """Looks up rows of ``weight`` (``input_dim x output_dim``) by integer index; with
    ``sparse_grad`` the weight's gradient is row_sparse (the rows looked up)."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 sparse_grad=False, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype}
        if sparse_grad:  # the backward then sends the weight its rows only
            self._kwargs["sparse_grad"] = True
        self.weight = self.params.get("weight", shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      allow_deferred_init=True,
                                      grad_stype="row_sparse" if sparse_grad else "default")

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self):
        k = self._kwargs
        return f"{self.__class__.__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class Flatten(HybridBlock):
    """Collapses all axes but the first: ``(N, a, b, ...) -> (N, a*b*...)``."""

    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return self.__class__.__name__


class Identity(HybridBlock):
    """Returns its input unchanged."""

    def hybrid_forward(self, F, x):
        return x


def _resolve_function(function, module, what):
    if isinstance(function, str):
        if not hasattr(module, function):
            raise MXNetError(f"{what}: function name '{function}' is not found in "
                             f"{module.__name__}.")
        return getattr(module, function)
    if callable(function):
        return function
    raise ValueError(f"{what}: unrecognized function in lambda: {function} of type "
                     f"{type(function)}")


class Lambda(Block):
    """Wraps a function ``f(*inputs)`` (or the name of an ``mx.nd`` function) as a Block."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        self._func = _resolve_function(function, nd, "Lambda")
        self._func_name = function if isinstance(function, str) else function.__name__

    def forward(self, *args):
        return self._func(*args)

    def __repr__(self):
        return f"{self.__class__.__name__}({self._func_name})"


class HybridLambda(HybridBlock):
    """Wraps ``f(F, *inputs)`` (or the name of a function present in both nd and sym)."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            _resolve_function(function, nd, "HybridLambda")
            name = function
            self._func = lambda F, *args: getattr(F, name)(*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = function.__name__
        else:
            raise ValueError(f"HybridLambda: unrecognized function: {function} of type "
                             f"{type(function)}")

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return f"{self.__class__.__name__}({self._func_name})"


from .activations import Activation  # noqa: E402  (Dense builds an Activation child)
