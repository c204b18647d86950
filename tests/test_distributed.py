"""Data-parallel training over MPI (ferrograd.distributed, kv 'dist_sync').

Each multi-process test runs a worker script from ``tests/dist_workers`` under ``mpiexec -n 2``
with a time limit, so a hang fails instead of blocking the suite. Without mpi4py or mpiexec (the
``distributed`` extra) these tests are skipped with the reason.
"""

import os
import subprocess
import sys

import ferrograd
import pytest
from ferrograd.distributed import launch

WORKERS = os.path.join(os.path.dirname(__file__), "dist_workers")
PACKAGE_ROOT = os.path.dirname(os.path.dirname(ferrograd.__file__))
TIMEOUT = 180  # seconds for a whole job; the machine is shared and slow

try:
    import mpi4py  # noqa: F401

    HAVE_MPI4PY = True
except ImportError:
    HAVE_MPI4PY = False
MPIEXEC = launch.find_mpiexec()

pytestmark = pytest.mark.skipif(
    not (HAVE_MPI4PY and MPIEXEC),
    reason="needs the 'distributed' extra (mpi4py and an MPI runtime with mpiexec)",
)


def run_job(script, *args, n=2, env=None, timeout=TIMEOUT):
    """Runs ``script`` on ``n`` processes; returns the CompletedProcess (fails on a hang)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = PACKAGE_ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    cmd = [MPIEXEC, "-n", str(n), sys.executable, os.path.join(WORKERS, script), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=full_env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        pytest.fail(f"{script} did not finish within {timeout} s (a hang)")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def assert_all_ok(res, n=2):
    assert res.returncode == 0, f"exit {res.returncode}\n{res.stdout}\n{res.stderr}"
    for r in range(n):
        assert f"OK {r}" in res.stdout, f"{res.stdout}\n{res.stderr}"


def test_collectives_every_dtype():
    assert_all_ok(run_job("collectives.py"))


@pytest.mark.parametrize("kind,optimizer,overlap,bucket_mb", [
    ("dist_sync", "sgd", "0", "25"),
    ("dist_sync", "adam", "1", "0.0001"),  # tiny buckets: several allreduces during backward
    ("horovod", "sgd", "1", "25"),
])
def test_gluon_trainer_dist_sync_equals_one_process(kind, optimizer, overlap, bucket_mb):
    env = {"FERROGRAD_DIST_OVERLAP": overlap, "FERROGRAD_DIST_BUCKET_MB": bucket_mb}
    assert_all_ok(run_job("train_gluon.py", kind, optimizer, env=env))


@pytest.mark.parametrize("bucket_mb", ["0", "25"])
def test_gradients_written_after_backward_are_reduced_again_on_every_worker(bucket_mb):
    assert_all_ok(run_job("overlap_edits.py", env={"FERROGRAD_DIST_BUCKET_MB": bucket_mb}))


def test_module_fit_dist_sync_equals_one_process():
    assert_all_ok(run_job("train_module.py"))


def test_kvstore_api(tmp_path):
    assert_all_ok(run_job("kvstore_api.py", str(tmp_path)))


def test_raising_worker_ends_every_worker_with_a_clear_error():
    res = run_job("raising.py", timeout=90)
    assert res.returncode != 0
    assert "worker 1 of 2 raised an uncaught exception" in res.stderr, res.stderr
    assert "worker one failed on purpose" in res.stderr
    assert "should never complete" not in res.stdout


def test_launch_runs_the_script_on_n_processes(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text("from ferrograd import distributed as d\n"
                      "import sys\n"
                      "print(f'rank {d.rank()} of {d.size()} args {sys.argv[1:]}')\n")
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    res = subprocess.run([sys.executable, "-m", "ferrograd.distributed.launch", "-n", "2",
                          str(script), "--lr", "0.1"], capture_output=True, text=True,
                         env=env, timeout=TIMEOUT)
    assert res.returncode == 0, res.stderr
    for r in range(2):
        assert f"rank {r} of 2 args ['--lr', '0.1']" in res.stdout


def test_launch_command_line():
    args = launch.parse(["-n", "4", "--mpi-args", "-launcher fork", "train.py", "--epochs", "3"])
    cmd = launch.build_command(args, "/x/mpiexec")
    assert cmd[:3] == ["/x/mpiexec", "-n", "4"]
    assert cmd[3:5] == ["-launcher", "fork"]
    assert cmd[5:] == [sys.executable, "train.py", "--epochs", "3"]
    with pytest.raises(SystemExit):
        launch.parse(["-n", "0", "train.py"])
