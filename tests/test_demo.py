"""The demo's training functions reach high accuracy on the digits (both paths, same model)."""

import numpy as np
import pytest

pytest.importorskip("sklearn")

from ferrograd import demo  # noqa: E402


def test_both_paths_learn_the_digits():
    train, test = demo.load_digits()
    params, _ = demo.train_autograd(train, epochs=4, quiet=True)
    exe, _ = demo.train_executor(train, epochs=4, quiet=True)
    acc_ag, acc_ex = demo.accuracy_autograd(params, test), demo.accuracy_executor(exe, test)
    assert acc_ag > 0.9 and acc_ex > 0.9
    # Same initial weights, batches and updates: the two paths learn the same weights.
    np.testing.assert_allclose(exe.arg_dict["fc2_weight"].asnumpy(),
                               params["fc2_weight"].asnumpy(), rtol=1e-3, atol=1e-4)


def test_gradient_checks_pass():
    train, _ = demo.load_digits()
    demo.check_gradients(train)
