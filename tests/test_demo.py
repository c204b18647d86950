"""The demo: a CNN trained on the digits with Gluon and with Module.fit (short runs)."""

import sys
import types

import pytest

pytest.importorskip("sklearn")

from ferrograd import demo  # noqa: E402


@pytest.fixture(scope="module")
def digits():
    return demo.load_digits()


def _check_history(history, epochs):
    assert len(history["loss"]) == len(history["test_acc"]) == epochs
    assert history["loss"][-1] < history["loss"][0]
    assert history["train_acc"][-1] > history["train_acc"][0]
    assert 0 < history["step_time"] < 1.0


def test_gluon_training_learns_the_digits(digits):
    train, test = digits
    net, history = demo.train_gluon(train, test, epochs=3, quiet=True)
    _check_history(history, 3)
    assert history["test_acc"][-1] > 0.93
    assert history["test_acc"][-1] == pytest.approx(demo.accuracy_gluon(net, test))


def test_module_training_learns_the_digits(digits):
    train, test = digits
    mod, history = demo.train_module(train, test, epochs=3, quiet=True)
    _check_history(history, 3)
    assert history["test_acc"][-1] > 0.93
    assert sorted(mod.get_params()[1]) == [  # BatchNorm's moving statistics are auxiliary
        n for n in sorted(mod.symbol.list_auxiliary_states())]


def test_plot_writes_the_curves(tmp_path, monkeypatch):
    """With a stand-in matplotlib that records the calls (matplotlib is an optional extra)."""
    calls = []

    class Axes:
        def __getattr__(self, name):
            return lambda *a, **k: calls.append(name)

    class Figure:
        def tight_layout(self):
            pass

        def savefig(self, path, dpi):
            calls.append(("savefig", path))

    pyplot = types.SimpleNamespace(subplots=lambda *a, **k: (Figure(), (Axes(), Axes())),
                                   close=lambda fig: None)
    matplotlib = types.SimpleNamespace(use=lambda backend: None, pyplot=pyplot)
    monkeypatch.setitem(sys.modules, "matplotlib", matplotlib)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    history = {"loss": [1.0, 0.5], "train_acc": [0.5, 0.9], "test_acc": [0.6, 0.95]}
    path = str(tmp_path / "curves.png")
    demo.plot({"Gluon": history, "Module": history}, path)
    assert calls.count("plot") == 6 and ("savefig", path) in calls


def test_command_line(capsys, monkeypatch):
    monkeypatch.setattr(demo, "train_gluon", lambda *a: (None, _FAKE))
    monkeypatch.setattr(demo, "train_module", lambda *a: (None, _FAKE))
    demo.main(["--epochs", "1", "--quiet"])
    out = capsys.readouterr().out
    assert "gluon : test accuracy 97.50%, 2.00 ms per training step" in out
    assert "module: test accuracy 97.50%" in out


_FAKE = {"loss": [0.1], "train_acc": [0.9], "test_acc": [0.975], "step_time": 0.002}


def test_plot_without_matplotlib_is_a_clear_usage_error(capsys, monkeypatch):
    monkeypatch.setattr(demo.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(demo, "train_gluon", lambda *a: pytest.fail("trained before the check"))
    with pytest.raises(SystemExit) as exc:
        demo.main(["--plot", "curves.png"])
    assert exc.value.code == 2
    assert "--plot needs matplotlib: pip install 'ferrograd[demo]'" in capsys.readouterr().err
