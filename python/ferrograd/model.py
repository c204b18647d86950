"""``mx.model``: MXNet 1.x checkpoints (``prefix-symbol.json`` and ``prefix-%04d.params``).

A checkpoint's parameter file is an NDArray file (``nd.save``) of a dict whose keys are
``arg:<name>`` for arguments and ``aux:<name>`` for auxiliary states, as MXNet writes them
(``Module.save_checkpoint``, ``HybridBlock.export``).
"""

import logging
from collections import namedtuple

from . import ndarray as nd
from . import symbol as sym
from .base import ValueError_

BatchEndParam = namedtuple("BatchEndParam", ["epoch", "nbatch", "eval_metric", "locals"])


def _params_name(prefix, epoch):
    return f"{prefix}-{epoch:04d}.params"


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Writes ``prefix-symbol.json`` (unless ``symbol`` is None) and ``prefix-%04d.params``."""
    if symbol is not None:
        symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
    save_dict = {f"arg:{k}": v for k, v in arg_params.items()}
    save_dict.update({f"aux:{k}": v for k, v in aux_params.items()})
    param_name = _params_name(prefix, epoch)
    nd.save(param_name, save_dict)
    logging.info('Saved checkpoint to "%s"', param_name)


def load_params(prefix, epoch):
    """``(arg_params, aux_params)`` from ``prefix-%04d.params``; keys of other kinds are skipped."""
    param_name = _params_name(prefix, epoch)
    save_dict = nd.load(param_name)
    arg_params, aux_params = {}, {}
    if not save_dict:
        logging.warning("Params file '%s' is empty", param_name)
        return arg_params, aux_params
    if not isinstance(save_dict, dict):
        raise ValueError_(f"load_params: '{param_name}' holds a list of arrays, not the "
                          "'arg:'/'aux:' dict of a checkpoint")
    for key, value in save_dict.items():
        kind, sep, name = key.partition(":")
        if not sep:
            raise ValueError_(f"load_params: key {key!r} in '{param_name}' is not of the form "
                              "'arg:<name>' or 'aux:<name>'")
        if kind == "arg":
            arg_params[name] = value
        elif kind == "aux":
            aux_params[name] = value
    return arg_params, aux_params


def load_checkpoint(prefix, epoch):
    """``(symbol, arg_params, aux_params)`` from a checkpoint written by ``save_checkpoint``."""
    symbol = sym.load(f"{prefix}-symbol.json")
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
