"""``python -m ferrograd.distributed.launch -n N [--hostfile FILE] script.py [args...]``.

A thin wrapper over MPI's own launcher: it finds ``mpiexec`` (next to this Python first, where
the ``mpich`` wheel installs it, then on ``PATH``) and runs ``mpiexec -n N python script.py
args...`` with this Python. Anything MPI-specific beyond ``-n`` and ``--hostfile`` goes through
``--mpi-args "..."``. The exit status is mpiexec's.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys


def find_mpiexec():
    """The path of ``mpiexec``, or None."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return shutil.which("mpiexec") or shutil.which("mpirun")


def build_command(args, mpiexec):
    cmd = [mpiexec, "-n", str(args.n)]
    if args.hostfile:
        cmd += ["-f" if _is_mpich(mpiexec) else "--hostfile", args.hostfile]
    cmd += shlex.split(args.mpi_args or "")
    if args.module:
        cmd += [sys.executable, "-m", args.script]
    else:
        cmd += [sys.executable, args.script]
    return cmd + list(args.script_args)


def _is_mpich(mpiexec):
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return True
    return "HYDRA" in out.stdout or "mpich" in out.stdout.lower()


def parse(argv):
    p = argparse.ArgumentParser(
        prog="python -m ferrograd.distributed.launch",
        description="Runs a training script on N processes through mpiexec.")
    p.add_argument("-n", "--num-processes", dest="n", type=int, required=True,
                   help="number of processes (workers)")
    p.add_argument("--hostfile", help="MPI hostfile listing the machines (one 'host:slots' "
                   "per line for MPICH)")
    p.add_argument("--mpi-args", default="", help="extra arguments for mpiexec, quoted")
    p.add_argument("-m", dest="module", action="store_true",
                   help="the script is a module name (python -m)")
    p.add_argument("--dry-run", action="store_true", help="print the command and exit")
    p.add_argument("script", help="the training script")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="the script's arguments")
    args = p.parse_args(argv)
    if args.n < 1:
        p.error(f"-n must be at least 1, got {args.n}")
    return args


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    mpiexec = find_mpiexec()
    if mpiexec is None:
        sys.stderr.write("ferrograd.distributed.launch: mpiexec not found; install the MPI "
                         "runtime with pip install 'ferrograd[distributed]'\n")
        return 2
    cmd = build_command(args, mpiexec)
    if args.dry_run:
        print(shlex.join(cmd))
        return 0
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
