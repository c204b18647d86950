"""``mx.init`` / ``mx.initializer``: how parameters get their first values.

An initializer is called as ``init(desc, arr)`` with a parameter name (``InitDesc``) and the
array to fill in place. With no explicit per-parameter initializer the name's suffix picks the rule
(``weight`` -> ``_init_weight``, ``bias``/``beta``/``running_mean`` -> 0, ``gamma``/``running_var``
-> 1). Random draws use ``mx.random`` so ``mx.random.seed`` makes them reproducible.
"""

import json
import math

import numpy as np

from . import ndarray as nd
from .ndarray import random as _random

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Uniform", "Normal", "Zero",
           "One", "Constant", "Xavier"]

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
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, name, arr):
        value = self.value
        if isinstance(value, (list, tuple, np.ndarray)):
            value = nd.array(np.asarray(value, dtype=np.dtype(arr.dtype)))
        if isinstance(value, nd.NDArray) and value.shape != arr.shape:
            value = value.broadcast_to(arr.shape)
        _fill(arr, value)

    def dumps(self):
        val = self.value
        if isinstance(val, nd.NDArray):
            val = val.asnumpy().tolist()
        elif isinstance(val, np.ndarray):
            val = val.tolist()
        return json.dumps([self.__class__.__name__.lower(), {"value": val}])


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
