"""Saving and loading parameters in MXNet's ``.params`` format (the one ``nd.save`` writes).

``Block.save_parameters`` keys arrays by attribute path (``0.weight``, ``encoder.bias``);
``ParameterDict.save`` (and files from ``save_params``/``export``) key them by parameter name.
Loading checks every name, shape and dtype first and only then writes, so a bad file leaves the
parameters untouched.
"""

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..context import Context, cpu


def _brief(names, limit=5):
    names = list(names)
    shown = ", ".join(f"'{n}'" for n in names[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}]"


def _load_dict(filename):
    loaded = nd.load(filename)
    if isinstance(loaded, list):
        if loaded:
            raise MXNetError(f"'{filename}' holds an unnamed list of arrays, not named parameters")
        return {}
    return loaded


def _prepare(param, data, cast_dtype, dtype_source):
    """Check ``data`` fits ``param``; return (array to load, shape, dtype) without changing it."""
    if dtype_source not in ("current", "saved"):
        raise ValueError(f"dtype_source must be 'current' or 'saved', got '{dtype_source}'")
    shape = param.shape
    if shape:
        if len(shape) != len(data.shape) or any(
                mine not in (0, saved) for mine, saved in zip(shape, data.shape, strict=False)):
            raise MXNetError(f"Failed loading Parameter '{param.name}' from saved params: shape "
                             f"incompatible expected {shape} vs saved {data.shape}")
        shape = tuple(saved if mine == 0 else mine
                      for mine, saved in zip(shape, data.shape, strict=True))
    else:  # no shape declared (a SymbolBlock's variables): the file decides
        shape = tuple(data.shape)
    dtype = param.dtype
    if np.dtype(dtype) != np.dtype(data.dtype):
        if not cast_dtype:
            raise MXNetError(f"Failed loading Parameter '{param.name}' from saved params: dtype "
                             f"incompatible expected {np.dtype(dtype).name} vs saved "
                             f"{np.dtype(data.dtype).name}. Set cast_dtype=True to cast the "
                             "dtype of saved params.")
        if dtype_source == "current":
            data = data.astype(dtype)
        else:
            dtype = data.dtype
    return data, shape, dtype


def _apply(param, data, shape, dtype, ctx):
    param.shape = shape
    if np.dtype(param.dtype) != np.dtype(dtype):
        param.cast(dtype)
    if isinstance(ctx, Context):
        ctx = [ctx]
    if param._data is None:
        if param._deferred_init:
            ctx = param._deferred_init[1]
        elif ctx is None:
            ctx = [cpu()]
        param._deferred_init = ()
        param._init_impl(data, ctx)
    else:
        param.set_data(data)


def load_into(params, loaded, filename, ctx, allow_missing, ignore_extra, cast_dtype,
              dtype_source, where):
    """Load ``loaded`` (name -> NDArray) into ``params`` (name -> Parameter), all or nothing."""
    if not allow_missing:
        for name in params:
            if name not in loaded:
                raise MXNetError(f"Parameter '{name}' is missing in file '{filename}', which "
                                 f"contains parameters: {_brief(loaded)}. Set allow_missing=True "
                                 "to ignore missing parameters.")
    if not ignore_extra:
        for name in loaded:
            if name not in params:
                raise MXNetError(f"Parameter '{name}' loaded from file '{filename}' is not "
                                 f"present in {where}, which contains parameters "
                                 f"{_brief(params)}. Set ignore_extra=True to ignore.")
    ready = [(params[name], *_prepare(params[name], data, cast_dtype, dtype_source))
             for name, data in loaded.items() if name in params]
    for param, data, shape, dtype in ready:
        _apply(param, data, shape, dtype, ctx)


def collect_with_prefix(block, prefix=""):
    """name -> Parameter keyed by attribute path (``0.weight``) as ``save_parameters`` writes."""
    custom = getattr(block, "_collect_params_with_prefix", None)
    if custom is not None:  # a block with its own file keys (gluon.rnn's fused layers)
        return custom(prefix)
    if prefix:
        prefix += "."
    out = {prefix + key: p for key, p in block._reg_params.items()}
    for name, child in block._children.items():
        out.update(collect_with_prefix(child, prefix + name))
    return out


def save_block(block, filename, deduplicate=False):
    params = collect_with_prefix(block)
    if deduplicate:
        first = {}
        for key, p in params.items():
            first.setdefault(id(p), key)
        params = {key: p for key, p in params.items() if first[id(p)] == key}
    nd.save(filename, {key: p._reduce() for key, p in params.items()})


def load_block(block, filename, ctx, allow_missing, ignore_extra, cast_dtype, dtype_source):
    loaded = _load_dict(filename)
    params = collect_with_prefix(block)
    if not loaded and not params:
        return
    if loaded and not any("." in key for key in loaded):
        # A file keyed by full parameter names (save_params / ParameterDict.save).
        block.collect_params().load(filename, ctx, allow_missing, ignore_extra, block.prefix,
                                    cast_dtype, dtype_source)
        return
    # A shared Parameter reachable under several paths is saved once by deduplicate=True; the
    # other paths are not missing when the file holds that Parameter under any of its paths.
    in_file = {id(params[key]) for key in loaded if key in params}
    params = {key: p for key, p in params.items() if key in loaded or id(p) not in in_file}
    load_into(params, loaded, filename, ctx, allow_missing, ignore_extra, cast_dtype,
              dtype_source, "the Block")


def save_dict(pdict, filename, strip_prefix=""):
    arrays = {}
    for p in pdict.values():
        if not p.name.startswith(strip_prefix):
            raise ValueError(f"Prefix '{strip_prefix}' is to be striped before saving, but "
                             f"Parameter's name '{p.name}' does not start with '{strip_prefix}'.")
        arrays[p.name[len(strip_prefix):]] = p._reduce()
    nd.save(filename, arrays)


def load_dict(pdict, filename, ctx, allow_missing, ignore_extra, restore_prefix, cast_dtype,
              dtype_source):
    if restore_prefix:
        for name in pdict.keys():
            if not name.startswith(restore_prefix):
                raise ValueError(f"restore_prefix is '{restore_prefix}' but Parameter name "
                                 f"'{name}' does not start with '{restore_prefix}'")
    loaded = {}
    for key, value in _load_dict(filename).items():
        key = key[4:] if key.startswith(("arg:", "aux:")) else key
        loaded[restore_prefix + key] = value
    load_into(dict(pdict.items()), loaded, filename, ctx, allow_missing, ignore_extra,
              cast_dtype, dtype_source, "ParameterDict")
