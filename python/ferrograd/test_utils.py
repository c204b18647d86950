"""``ferrograd.test_utils``: MXNet's ``mx.test_utils`` namespace, plus Chainer's checkers.

* MXNet helpers, implemented in :mod:`ferrograd._mx_compare`: contexts and tolerance
  tables (:func:`default_context`, :func:`get_tols`, ...), random data (:func:`random_arrays`,
  :func:`rand_ndarray`, ...) and comparisons (:func:`assert_almost_equal`, :func:`almost_equal`,
  :func:`same_array`, :func:`environment`, ...).
* MXNet's symbolic checkers, implemented in :mod:`ferrograd._mx_checkers`:
  :func:`simple_forward`, :func:`check_symbolic_forward`, :func:`check_symbolic_backward`,
  :func:`numeric_grad` (native finite differences), :func:`check_numeric_gradient` and
  :func:`check_consistency`.
* Chainer-style gradient checkers re-exported from :mod:`ferrograd.gradient_check`:
  :func:`check_backward`, :func:`check_double_backward`, :func:`numerical_grad` and
  :class:`NondifferentiableError`.

* The rest of MXNet's helpers: statistics of random generators (:func:`verify_generator`,
  :func:`gen_buckets_probs_with_ppf`, ...; :mod:`ferrograd._mx_stats`), downloads
  (:func:`download`, :func:`get_mnist`, ...; :mod:`ferrograd._mx_download`) and small
  utilities (:func:`discard_stderr`, :func:`np_reduce`, :func:`random_sample`, ...;
  :mod:`ferrograd._mx_misc`).

Like MXNet's module this one has no ``__all__``: ``from mxnet.test_utils import *`` hands out
every public global, including the modules and classes MXNet's tests use unqualified (``mx``,
``np``, ``npt``, ``rnd``, ``ss``, ``sys``, ``os``, ``NDArray``, ``Context``, ``Symbol``, ...).
Keep helper imports here underscore-prefixed unless MXNet's module has the name too.

Note: ``test_utils.assert_allclose`` is **MXNet's** ``assert_allclose(a, b, rtol=1e-07, atol=0,
equal_nan=True)``, as this is MXNet's namespace. Chainer's ``assert_allclose(x, y, atol=1e-5,
rtol=1e-4, verbose=True)`` stays available as :func:`ferrograd.gradient_check.assert_allclose`.
"""

# Everything imported here is re-exported by the star import (there is no __all__).
# ruff: noqa: F401
# modules and names MXNet's test_utils has as globals (star-imported by user tests)
import bz2
import errno
import gzip
import importlib as _importlib
import importlib.util as _importlib_util
import json
import logging
import numbers
import os
import platform
import struct
import sys
import time
import traceback
import types as _types
import zipfile
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np
import numpy.random as rnd
import numpy.testing as npt

import ferrograd as mx

from ._ferrograd import NDArray
from ._mx_checkers import (
    check_consistency,
    check_numeric_gradient,
    check_symbolic_backward,
    check_symbolic_forward,
    numeric_grad,
    simple_forward,
)
from ._mx_compare import (
    almost_equal,
    almost_equal_ignore_nan,
    assert_allclose,
    assert_almost_equal,
    assert_almost_equal_ignore_nan,
    assert_almost_equal_with_err,
    assert_exception,
    collapse_sum_like,
    default_atols,
    default_context,
    default_dtype,
    default_numeric_eps,
    default_rtols,
    effective_dtype,
    environment,
    find_max_violation,
    get_atol,
    get_etol,
    get_rtol,
    get_tolerance,
    get_tols,
    rand_ndarray,
    rand_shape_2d,
    rand_shape_3d,
    rand_shape_nd,
    random_arrays,
    random_uniform_arrays,
    retry,
    same,
    same_array,
    set_default_context,
)
from ._mx_download import (
    download,
    get_bz2_data,
    get_cifar10,
    get_mnist,
    get_mnist_pkl,
    get_mnist_ubyte,
    get_zip_data,
)
from ._mx_misc import (
    assign_each,
    assign_each2,
    checkShapes,
    compare_ndarray_tuple,
    create_2d_tensor,
    create_sparse_array,
    create_sparse_array_zd,
    create_vector,
    discard_stderr,
    get_cuda_compute_capability,
    get_identity_mat,
    get_identity_mat_batch,
    has_tvm_ops,
    is_aarch64_run,
    is_cd_run,
    is_op_runnable,
    list_gpus,
    locationError,
    new_matrix_with_real_eigvals_2d,
    new_matrix_with_real_eigvals_nd,
    new_orthonormal_matrix_2d,
    new_sym_matrix_with_real_eigvals_2d,
    new_sym_matrix_with_real_eigvals_nd,
    np_reduce,
    rand_coord_2d,
    rand_sparse_ndarray,
    random_sample,
    same_symbol_structure,
    shuffle_csr_column_indices,
)
from ._mx_optim_compare import compare_optimizer, compare_optimizer_noise_seeded
from ._mx_stats import (
    chi_square_check,
    gen_buckets_probs_with_ppf,
    mean_check,
    var_check,
    verify_generator,
)
from .context import Context, current_context
from .gradient_check import (
    NondifferentiableError,
    check_backward,
    check_double_backward,
    numerical_grad,
)
from .ndarray import array
from .runtime import Features
from .symbol import Symbol
from .util import getenv, setenv, use_np


class _LazyModule(_types.ModuleType):
    """A module imported on first attribute access (SciPy costs ~0.5 s to import)."""

    def __getattr__(self, name):
        real = _importlib.import_module(self.__name__)
        self.__dict__.update(real.__dict__)
        return getattr(real, name)


# MXNet's ``ss`` is scipy.stats, or None without SciPy
ss = _LazyModule("scipy.stats") if _importlib_util.find_spec("scipy") else None
