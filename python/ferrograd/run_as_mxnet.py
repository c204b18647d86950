"""Run an MXNet program unchanged on ferrograd.

    python -m ferrograd.run_as_mxnet script.py [args ...]
    python -m ferrograd.run_as_mxnet -m package.module [args ...]

The program runs as ``__main__`` with ``import mxnet`` resolving to ferrograd
(:func:`ferrograd.compat.install_as_mxnet`), and with ``sys.argv`` and ``sys.path[0]`` set as
``python script.py [args ...]`` (or ``python -m package.module``) would set them.
"""

import os
import runpy
import sys

from .compat import install_as_mxnet

_USAGE = ("usage: python -m ferrograd.run_as_mxnet script.py [args ...]\n"
          "       python -m ferrograd.run_as_mxnet -m module [args ...]")


def main(argv):
    """Runs the program named in ``argv`` (this module's arguments, without its own name)."""
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(_USAGE, file=sys.stderr if not argv or argv[0] == "-m" else sys.stdout)
        return 2 if not argv or argv[0] == "-m" else 0
    install_as_mxnet()
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]  # runpy puts the module's file name in argv[0]
        sys.path[0] = os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    if not os.path.exists(script):
        print(f"run_as_mxnet: can't open file {script!r}: no such file", file=sys.stderr)
        return 2
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
