"""Running unmodified MXNet code: make ``import mxnet`` load ferrograd.

``install_as_mxnet()`` puts an import hook first on ``sys.meta_path`` that resolves ``mxnet``
to ``ferrograd`` and every ``mxnet.X.Y`` to ``ferrograd.X.Y``, including submodules imported
later (``import mxnet.ndarray``, ``from mxnet.gluon import nn``). The aliases are the ferrograd
module objects themselves, so ``mxnet.nd.NDArray is ferrograd.nd.NDArray``. A module ferrograd
does not have raises ``ModuleNotFoundError`` naming it.

``python -m ferrograd.run_as_mxnet script.py [args]`` runs a script with the hook installed.
"""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

__all__ = ["install_as_mxnet", "is_installed"]

_ALIAS, _TARGET = "mxnet", "ferrograd"


def _target_name(fullname):
    return _TARGET + fullname[len(_ALIAS):]


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system the already-imported ferrograd module."""

    def __init__(self, target):
        self._target = target
        self._real_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self._target)
        self._real_spec = module.__spec__
        return module

    def exec_module(self, module):
        # the import system has just set module.__spec__ to the alias spec: put ferrograd's
        # back, so the module's own relative imports and reloads keep working
        module.__spec__ = self._real_spec


class _MXNetAliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``mxnet`` and ``mxnet.*`` as the matching ferrograd modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _ALIAS and not fullname.startswith(_ALIAS + "."):
            return None
        real = _target_name(fullname)
        loaded = sys.modules.get(real)
        real_spec = loaded.__spec__ if loaded is not None else importlib.util.find_spec(real)
        if real_spec is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: ferrograd has no {real!r} module "
                "(running MXNet code through ferrograd.compat.install_as_mxnet)", name=fullname)
        spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(real))
        if real_spec.submodule_search_locations is not None:
            spec.submodule_search_locations = []  # a package: mxnet.X.Y may follow
        return spec


def is_installed():
    """Whether the ``mxnet`` alias is installed in this interpreter."""
    return any(isinstance(f, _MXNetAliasFinder) for f in sys.meta_path)


def install_as_mxnet():
    """Makes ``import mxnet`` (and every ``mxnet.*`` submodule) load ferrograd.

    Call it before the code that imports ``mxnet``. Calling it again does nothing. If a real
    MXNet is already imported, mixing the two would give arrays from both libraries, so this
    raises ``RuntimeError`` instead.
    """
    if is_installed():
        return
    loaded = sys.modules.get(_ALIAS)
    if loaded is not None and loaded is not importlib.import_module(_TARGET):
        raise RuntimeError(
            "install_as_mxnet: a real 'mxnet' module is already imported "
            f"(from {getattr(loaded, '__file__', '?')}); call install_as_mxnet() before "
            "anything imports mxnet, or run the program with python -m ferrograd.run_as_mxnet")
    sys.meta_path.insert(0, _MXNetAliasFinder())
