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

Note: ``test_utils.assert_allclose`` is **MXNet's** ``assert_allclose(a, b, rtol=1e-07, atol=0,
equal_nan=True)``, as this is MXNet's namespace. Chainer's ``assert_allclose(x, y, atol=1e-5,
rtol=1e-4, verbose=True)`` stays available as :func:`ferrograd.gradient_check.assert_allclose`.
"""

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
from .gradient_check import (
    NondifferentiableError,
    check_backward,
    check_double_backward,
    numerical_grad,
)

__all__ = ["NondifferentiableError", "check_backward", "check_double_backward", "numerical_grad"]
__all__ += [
    "default_context", "set_default_context", "default_dtype", "default_rtols", "default_atols",
    "default_numeric_eps", "effective_dtype", "get_tolerance", "get_tols", "get_rtol", "get_atol",
    "get_etol", "random_arrays", "random_uniform_arrays", "rand_ndarray", "rand_shape_2d",
    "rand_shape_3d", "rand_shape_nd", "same", "almost_equal", "almost_equal_ignore_nan",
    "find_max_violation", "assert_almost_equal", "assert_allclose",
    "assert_almost_equal_with_err", "assert_almost_equal_ignore_nan", "assert_exception",
    "retry", "same_array", "collapse_sum_like", "environment",
]
__all__ += ["simple_forward", "check_symbolic_forward", "check_symbolic_backward", "numeric_grad",
            "check_numeric_gradient", "check_consistency"]
