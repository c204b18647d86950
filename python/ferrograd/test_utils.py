"""``ferrograd.test_utils``: helpers for testing gradients.

For now this module re-exports Chainer-style checkers from :mod:`ferrograd.gradient_check`
(:func:`check_backward`, :func:`check_double_backward`, :func:`numerical_grad`,
:func:`assert_allclose` and :class:`NondifferentiableError`). MXNet's own ``test_utils`` checkers
(``assert_almost_equal``, ``check_numeric_gradient``, ``check_symbolic_forward``/``backward``, ...)
will be added here later (issue 5).
"""

from .gradient_check import (
    NondifferentiableError,
    assert_allclose,
    check_backward,
    check_double_backward,
    numerical_grad,
)

__all__ = ["NondifferentiableError", "assert_allclose", "check_backward", "check_double_backward",
           "numerical_grad"]
