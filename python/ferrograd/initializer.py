"""``mx.init`` / ``mx.initializer``: how parameters get their first values.

An initializer is called as ``init(desc, arr)`` with a parameter name (``InitDesc``) and the
array to fill in place. With no explicit per-parameter initializer the name's suffix picks the rule
(``weight`` -> ``_init_weight``, ``bias``/``beta``/``running_mean`` -> 0, ``gamma``/``running_var``
-> 1). Random draws use ``mx.random`` so ``mx.random.seed`` makes them reproducible.
"""

import json
import math
import re

import numpy as np

from . import ndarray as nd
from .ndarray import random as _random

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Uniform", "Normal", "Zero",
           "One", "Constant", "Xavier", "MSRAPrelu", "Orthogonal", "Bilinear", "LSTMBias", "Mixed",
           "Load"]

_REGISTRY = {}


class InitDesc(str):
    """A parameter name carrying ``attrs`` (``{'__init__': init}`` selects an initializer)."""

    def __new__(cls, name, attrs=None, global_init=None):
        desc = super().__new__(cls, name)
        desc.attrs = attrs or {}
        desc.global_init = global_init
        return desc


def register(klass):
    """Class decorator: make ``klass`` creatable by its lower-cased name (``create('xavier')``)."""
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise TypeError(f"register: {klass!r} is not an Initializer subclass")
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*names):
    """Class decorator: extra registry names for an initializer (``'zeros'`` for ``Zero``)."""
    def wrap(klass):
        for n in names:
            _REGISTRY[n.lower()] = klass
        return klass
    return wrap


def create(init, **kwargs):
    """An Initializer from an instance (returned as is), a registered name or its ``dumps()``."""
    if isinstance(init, Initializer):
        return init
    if isinstance(init, type) and issubclass(init, Initializer):
        return init(**kwargs)
    if isinstance(init, str):
        if init.startswith("["):
            name, args = json.loads(init)
            return create(name, **args)
        klass = _REGISTRY.get(init.lower())
        if klass is None:
            raise ValueError(f"Cannot find initializer '{init}'. Registered: {sorted(_REGISTRY)}")
        return klass(**kwargs)
    raise TypeError("create: expected an Initializer, its class or name, got "
                    f"{type(init).__name__}")


def _fill(arr, value):
    """Write ``value`` (NDArray or scalar) into ``arr`` in place, keeping ``arr``'s dtype."""
    if isinstance(value, nd.NDArray):
        value = value.astype(arr.dtype) if value.dtype != arr.dtype else value
    arr[:] = value


def _rms_text(arr):
    return f"{float(nd.norm(arr).asscalar()) / math.sqrt(arr.size):.5f}"


class Initializer:
    """Base class; subclasses override ``_init_weight`` (and optionally others)."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Print a line with each initialised array's norm when ``verbose``."""
        self._verbose = verbose
        self._print_func = print_func or _rms_text
        return self

    def dumps(self):
        """``'["name", {kwargs}]'``, which ``create`` reads back."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __repr__(self):
        return self.dumps()

    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self.dumps() == other.dumps()

    def __hash__(self):
        return hash(self.dumps())

    def __call__(self, desc, arr):
        if not isinstance(desc, InitDesc):
            desc = InitDesc(str(desc))
        if desc.global_init is None:
            desc.global_init = self
        chosen = desc.attrs.get("__init__", "")
        if chosen:
            # An initializer named for this one parameter fills it whatever its name says.
            create(chosen)._init_weight(desc, arr)
        else:
            self._dispatch_by_name(desc, arr)
        if self._verbose and self._print_func is not None:
            print(f"Initialized {desc} as {chosen or self}: {self._print_func(arr)}")

    def _dispatch_by_name(self, name, arr):
        if name.endswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.endswith("bias"):
            self._init_bias(name, arr)
        elif name.endswith("gamma"):
            self._init_gamma(name, arr)
        elif name.endswith("beta"):
            self._init_beta(name, arr)
        elif name.endswith("weight"):
            self._init_weight(name, arr)
        elif name.endswith(("running_mean", "moving_mean", "moving_inv_var", "moving_avg", "min")):
            self._init_zero(name, arr)
        elif name.endswith(("running_var", "moving_var", "max")):
            self._init_one(name, arr)
        else:
            self._init_default(name, arr)

    def _init_bilinear(self, _, arr):
        shape = arr.shape
        weight = np.zeros(int(np.prod(shape)), dtype="float32")
        f = np.ceil(shape[3] / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        for i in range(weight.size):
            x = i % shape[3]
            y = (i // shape[3]) % shape[2]
            weight[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
        _fill(arr, nd.array(weight.reshape(shape)))

    def _init_zero(self, _, arr):
        _fill(arr, 0.0)

    def _init_one(self, _, arr):
        _fill(arr, 1.0)

    def _init_bias(self, _, arr):
        _fill(arr, 0.0)

    def _init_gamma(self, _, arr):
        _fill(arr, 1.0)

    def _init_beta(self, _, arr):
        _fill(arr, 0.0)

    def _init_weight(self, name, arr):
        raise NotImplementedError(f"{type(self).__name__} must override _init_weight "
                                  f"(parameter {name})")

    def _init_default(self, name, _):
        raise ValueError(
            f"Unknown initialization pattern for {name}. Default initialization is now limited to "
            '"weight", "bias", "gamma" (1.0), and "beta" (0.0). '
            "Please use mx.sym.Variable(init=mx.init.*) to set initialization pattern")


@register
@alias("zeros")
class Zero(Initializer):
    """Fills with 0."""

    def _init_weight(self, _, arr):
        _fill(arr, 0.0)


@register
@alias("ones")
class One(Initializer):
    """Fills with 1."""

    def _init_weight(self, _, arr):
        _fill(arr, 1.0)


@register
class Constant(Initializer):
    """Fills with ``value`` (a scalar, or an array broadcast to the parameter's shape)."""

    def __init__(self, value):
        # The recorded kwargs are what dumps() writes, so arrays are kept there as lists.
        listed = value
        if isinstance(value, nd.NDArray):
            listed = value.asnumpy().tolist()
        elif isinstance(value, np.ndarray):
            listed = value.tolist()
        super().__init__(value=listed)
        self.value = value

    def _init_weight(self, name, arr):
        value = self.value
        if isinstance(value, (list, tuple, np.ndarray)):
            value = nd.array(np.asarray(value, dtype=np.dtype(arr.dtype)))
        if isinstance(value, nd.NDArray) and value.shape != arr.shape:
            value = value.broadcast_to(arr.shape)
        _fill(arr, value)


@register
class Uniform(Initializer):
    """Draws from U(-scale, scale)."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        _fill(arr, _random.uniform(-self.scale, self.scale, shape=arr.shape))


@register
class Normal(Initializer):
    """Draws from N(0, sigma^2)."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        _fill(arr, _random.normal(0, self.sigma, shape=arr.shape))


@register
class Xavier(Initializer):
    """Glorot init: scale = sqrt(magnitude / factor), factor = fan_in, fan_out or their mean;
    uniform draws from U(-scale, scale), gaussian from N(0, scale^2)."""

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError(f"Xavier initializer cannot be applied to vector {name}. "
                             "It requires at least 2D.")
        receptive = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        factors = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}
        if self.factor_type not in factors:
            raise ValueError(f"Xavier: incorrect factor_type '{self.factor_type}' "
                             "(expected 'avg', 'in' or 'out')")
        scale = math.sqrt(self.magnitude / factors[self.factor_type])
        if self.rnd_type == "uniform":
            _fill(arr, _random.uniform(-scale, scale, shape=shape))
        elif self.rnd_type == "gaussian":
            _fill(arr, _random.normal(0, scale, shape=shape))
        else:
            raise ValueError(f"Xavier: unknown rnd_type '{self.rnd_type}' "
                             "(expected 'uniform' or 'gaussian')")


@register
class MSRAPrelu(Xavier):
    """He init for PReLU nets: gaussian Xavier with magnitude 2 / (1 + slope^2)."""

    def __init__(self, factor_type="avg", slope=0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Orthogonal(Initializer):
    """``scale`` times an orthonormal basis (from the SVD of a random matrix), reshaped."""

    def __init__(self, scale=1.414, rand_type="uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, name, arr):
        rows = arr.shape[0]
        cols = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            draw = _random.uniform(-1.0, 1.0, shape=(rows, cols))
        elif self.rand_type == "normal":
            draw = _random.normal(0.0, 1.0, shape=(rows, cols))
        else:
            raise ValueError(f"Orthogonal: unknown rand_type '{self.rand_type}' "
                             "(expected 'uniform' or 'normal')")
        u, _, v = np.linalg.svd(draw.asnumpy().astype(np.float64), full_matrices=False)
        basis = u if u.shape == (rows, cols) else v
        _fill(arr, nd.array((self.scale * basis).reshape(arr.shape), dtype=arr.dtype))


@register
class Bilinear(Initializer):
    """Bilinear upsampling kernel for a (.., .., h, w) deconvolution weight."""

    def _init_weight(self, name, arr):
        self._init_bilinear(name, arr)


@register
class LSTMBias(Initializer):
    """Zero bias except the forget gate (second quarter, MXNet's i, f, c, o order)."""

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        hidden = arr.shape[0] // 4
        values = np.zeros(arr.shape, dtype=np.float32)
        values[hidden:2 * hidden] = self.forget_bias
        _fill(arr, nd.array(values, dtype=arr.dtype))


class Mixed:
    """The first initializer whose regex pattern matches the parameter name is used."""

    def __init__(self, patterns, initializers):
        if len(patterns) != len(initializers):
            raise ValueError(f"Mixed: {len(patterns)} patterns but {len(initializers)} "
                             "initializers")
        self.map = [(re.compile(p), create(i)) for p, i in zip(patterns, initializers, strict=True)]

    def __call__(self, name, arr):
        for pattern, init in self.map:
            if pattern.match(name):
                init(name, arr)
                return
        raise ValueError(f"Parameter name {name} did not match any pattern. Consider add a "
                         '".*" pattern at the and with default Initializer.')


class Load:
    """Initialise from a dict of arrays (``arg:``/``aux:`` prefixes stripped), falling back to
    ``default_init`` for names not in it."""

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            if not hasattr(nd, "load"):
                raise NotImplementedError("init.Load from a file needs nd.load, which ferrograd "
                                          "does not have yet; pass a dict of NDArrays")
            param = nd.load(param)
        if not isinstance(param, dict):
            raise TypeError(f"init.Load: expected a dict of arrays or a file name, got "
                            f"{type(param).__name__}")
        self.param = {}
        for key, value in param.items():
            key = key[4:] if key.startswith(("arg:", "aux:")) else key
            self.param[key] = value if isinstance(value, nd.NDArray) else nd.array(value)
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        if name in self.param:
            loaded = self.param[name]
            if loaded.shape != arr.shape:
                raise ValueError(f"Parameter {name} cannot be initialized from loading. Shape "
                                 f"mismatch, target {arr.shape} vs loaded {loaded.shape}")
            _fill(arr, loaded)
            if self.verbose:
                print(f"Initialized {name} by loading")
        else:
            if self.default_init is None:
                raise ValueError(f"Cannot Initialize {name}. Not found in loaded param and no "
                                 "default Initializer is provided.")
            self.default_init(name, arr)
            if self.verbose:
                print(f"Initialized {name} by default")
