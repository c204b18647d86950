"""Running unmodified MXNet code (issue 14): ``compat.install_as_mxnet`` and
``python -m ferrograd.run_as_mxnet``. Each case runs in a fresh interpreter."""

import os
import subprocess
import sys
import textwrap

import pytest

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


def run(args, cwd=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=ENV,
                          cwd=cwd, timeout=120)


def run_code(code):
    return run(["-c", textwrap.dedent(code)])


MXNET_SCRIPT = """\
import sys
import mxnet as mx
from mxnet import nd, autograd
import mxnet.ndarray as nd2
from mxnet.test_utils import assert_almost_equal
x = nd.array([1.0, 2.0, 3.0])
x.attach_grad()
with autograd.record():
    y = (x * x).sum()
y.backward()
assert_almost_equal(x.grad, [2.0, 4.0, 6.0])
print(mx.__name__, nd2 is nd, x.grad.asnumpy().tolist(), sys.argv[1:], __name__)
"""


def test_run_as_mxnet_runs_a_script_as_main_with_its_arguments(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(MXNET_SCRIPT)
    out = run(["-m", "ferrograd.run_as_mxnet", str(script), "--epochs", "3"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ferrograd True [2.0, 4.0, 6.0] ['--epochs', '3'] __main__"


def test_run_as_mxnet_puts_the_script_directory_first_on_the_path(tmp_path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    script = tmp_path / "main.py"
    script.write_text("import sys, helper_mod\nprint(helper_mod.VALUE + 1, sys.argv[0])\n")
    out = run(["-m", "ferrograd.run_as_mxnet", str(script)])  # cwd is elsewhere
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["42", str(script)]


def test_run_as_mxnet_propagates_failures_and_exit_codes(tmp_path):
    failing = tmp_path / "fail.py"
    failing.write_text("import mxnet\nraise ValueError('boom')\n")
    out = run(["-m", "ferrograd.run_as_mxnet", str(failing)])
    assert out.returncode == 1 and "ValueError: boom" in out.stderr
    exiting = tmp_path / "exit.py"
    exiting.write_text("import sys\nsys.exit(3)\n")
    assert run(["-m", "ferrograd.run_as_mxnet", str(exiting)]).returncode == 3


def test_run_as_mxnet_usage_errors(tmp_path):
    out = run(["-m", "ferrograd.run_as_mxnet"])
    assert out.returncode == 2 and "usage:" in out.stderr
    out = run(["-m", "ferrograd.run_as_mxnet", str(tmp_path / "nope.py")])
    assert out.returncode == 2 and "can't open file" in out.stderr


def test_run_as_mxnet_runs_a_module(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "tool.py").write_text(
        "import sys\nfrom mxnet import nd\nprint(nd.ones((2,)).sum().asscalar(), sys.argv[1:],"
        " __name__)\n")
    out = run(["-m", "ferrograd.run_as_mxnet", "-m", "pkg.tool", "a"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2.0 ['a'] __main__"


def test_install_as_mxnet_aliases_modules_and_later_submodules():
    out = run_code("""
        import sys
        import ferrograd
        from ferrograd.compat import install_as_mxnet, is_installed
        install_as_mxnet()
        install_as_mxnet()  # idempotent
        import mxnet
        assert mxnet is ferrograd and is_installed()
        assert sum(type(f).__name__ == "_MXNetAliasFinder" for f in sys.meta_path) == 1
        import mxnet.contrib.autograd as cag
        from mxnet.util import np_shape
        import mxnet.test_utils
        assert cag is ferrograd.contrib.autograd and np_shape is ferrograd.util.np_shape
        assert sys.modules["mxnet.test_utils"] is ferrograd.test_utils
        # the ferrograd modules keep their own identity
        assert ferrograd.contrib.autograd.__spec__.name == "ferrograd.contrib.autograd"
        assert mxnet.__name__ == "ferrograd"
        print("ok")
        """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_a_module_ferrograd_lacks_is_a_clear_module_not_found_error():
    out = run_code("""
        from ferrograd.compat import install_as_mxnet
        install_as_mxnet()
        try:
            import mxnet.no_such_module
        except ModuleNotFoundError as e:
            print(e.name, "|", e)
        """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "mxnet.no_such_module | No module named 'mxnet.no_such_module': ferrograd has no "
        "'ferrograd.no_such_module' module (running MXNet code through "
        "ferrograd.compat.install_as_mxnet)")


def test_install_refuses_when_a_real_mxnet_is_loaded(tmp_path):
    fake = tmp_path / "mxnet"
    fake.mkdir()
    (fake / "__init__.py").write_text("REAL = True\n")
    out = subprocess.run(
        [sys.executable, "-c",
         "import mxnet\nfrom ferrograd.compat import install_as_mxnet\n"
         "try:\n    install_as_mxnet()\nexcept RuntimeError as e:\n    print(e)\n"],
        capture_output=True, text=True, timeout=120,
        env={**ENV, "PYTHONPATH": os.pathsep.join([str(tmp_path), ENV["PYTHONPATH"]])})
    assert out.returncode == 0, out.stderr
    assert "a real 'mxnet' module is already imported" in out.stdout
    assert str(fake) in out.stdout


@pytest.mark.parametrize("code", ["import mxnet.ndarray as nd; print(nd.__name__)",
                                  "from mxnet import nd; print(nd.__name__)"])
def test_alias_wins_over_an_installed_mxnet(tmp_path, code):
    fake = tmp_path / "mxnet"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise SystemExit('the real mxnet was imported')\n")
    out = subprocess.run(
        [sys.executable, "-c", f"import ferrograd.compat as c; c.install_as_mxnet(); {code}"],
        capture_output=True, text=True, timeout=120,
        env={**ENV, "PYTHONPATH": os.pathsep.join([str(tmp_path), ENV["PYTHONPATH"]])})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ferrograd.ndarray"
