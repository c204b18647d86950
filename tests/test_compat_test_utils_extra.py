"""The rest of MXNet's ``test_utils`` (issue 14): the star-import namespace, downloads, stderr
silencing, reductions, sampling, generator statistics, sparse placeholders, test matrices."""

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import ferrograd as mx
import numpy as np
import pytest
from ferrograd import nd
from ferrograd import test_utils as tu

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "mxnet_compat_names.json").read_text())

# MXNet names deliberately absent: they need modules ferrograd does not have (mx.io, Gluon,
# optimizers, the model zoo, the symbolic NumPy front end) or a third-party package (requests)
ABSENT = {"DummyIter", "get_mnist_iterator", "download_model", "get_im2rec_path",
          "check_gluon_hybridize_consistency", "compare_optimizer", "check_speed", "np_symbol",
          "requests"}


# ----------------------------------------------------------------------------------------------
# namespace


def test_star_import_gives_mxnets_globals():
    star = {}
    exec("from ferrograd.test_utils import *", star)
    missing = set(FIXTURE["test_utils_star"]) - ABSENT - set(star)
    assert not missing
    assert star["mx"] is mx and star["np"] is np and star["sys"] is sys and star["os"] is os
    assert star["NDArray"] is nd.NDArray and star["array"] is nd.array
    assert star["rnd"] is np.random and star["Context"] is mx.Context


def test_ss_is_scipy_stats_loaded_on_first_use():
    pytest.importorskip("scipy")
    assert abs(tu.ss.norm.ppf(0.975) - 1.959964) < 1e-6


def test_importing_ferrograd_does_not_import_scipy():
    code = "import sys, ferrograd; print('scipy.stats' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------------------------
# download, against a local HTTP server


class _Handler(http.server.BaseHTTPRequestHandler):
    files = {"/data.bin": bytes(range(256)) * 40, "/v2/data.bin": b"second version"}

    def do_GET(self):  # noqa: N802 - http.server's name
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_download_names_the_file_after_the_url(server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    got = tu.download(server + "/data.bin")
    assert got == "data.bin"
    assert (tmp_path / "data.bin").read_bytes() == _Handler.files["/data.bin"]
    assert [p.name for p in tmp_path.iterdir()] == ["data.bin"]  # no temporary left behind


def test_download_into_dirname_creates_it(server, tmp_path):
    target = tmp_path / "a" / "b"
    got = tu.download(server + "/data.bin", fname="x.bin", dirname=str(target))
    assert got == os.path.join(str(target), "x.bin")
    assert Path(got).read_bytes() == _Handler.files["/data.bin"]


def test_download_keeps_an_existing_file_unless_overwrite(server, tmp_path):
    fname = str(tmp_path / "data.bin")
    Path(fname).write_bytes(b"old")
    assert tu.download(server + "/v2/data.bin", fname=fname) == fname
    assert Path(fname).read_bytes() == b"old"
    tu.download(server + "/v2/data.bin", fname=fname, overwrite=True)
    assert Path(fname).read_bytes() == b"second version"


def test_download_404_fails_at_once_with_the_url(server, tmp_path, capsys):
    fname = str(tmp_path / "missing.bin")
    with pytest.raises(OSError, match=r"could not fetch http://127\.0\.0\.1:\d+/missing: "
                                      r"HTTP 404"):
        tu.download(server + "/missing", fname=fname, retries=3)
    assert "retrying" not in capsys.readouterr().err  # a 404 is not retried
    assert not os.path.exists(fname) and os.listdir(tmp_path) == []


def test_download_retries_network_errors_then_raises(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("ferrograd._mx_download._RETRY_DELAY", 0)
    with pytest.raises(OSError, match="could not fetch http://127.0.0.1:9/x"):
        tu.download("http://127.0.0.1:9/x", fname=str(tmp_path / "x"), retries=2)
    assert capsys.readouterr().err.count("retrying") == 2


def test_download_rejects_bad_arguments():
    with pytest.raises(ValueError, match="retries"):
        tu.download("http://127.0.0.1/x", retries=-1)
    with pytest.raises(ValueError, match="fname"):
        tu.download("http://127.0.0.1/")


def test_download_progress_is_printed_only_for_long_downloads(capsys, monkeypatch):
    from ferrograd import _mx_download

    clock = iter([0.0, 0.5, 3.0, 3.2, 4.5])
    monkeypatch.setattr(_mx_download.time, "monotonic", lambda: next(clock))
    progress = _mx_download._Progress("f.bin", 4 * 2**20)
    progress.update(2**20)  # 0.5 s: too early
    progress.update(2 * 2**20)  # 3.0 s: shown
    progress.update(3 * 2**20)  # 3.2 s: less than a second since the last line
    progress.update(4 * 2**20)  # 4.5 s: shown
    progress.finish()
    err = capsys.readouterr().err
    assert err == "\rf.bin: 2.0 MiB of 4.0 MiB (50%)\rf.bin: 4.0 MiB of 4.0 MiB (100%)\n"


def test_get_bz2_data_decompresses_into_data_dir(server, tmp_path):
    import bz2

    payload = b"line one\nline two\n"
    _Handler.files["/d.bz2"] = bz2.compress(payload)
    tu.get_bz2_data(str(tmp_path), "d.txt", server + "/d.bz2", "d.bz2")
    assert (tmp_path / "d.txt").read_bytes() == payload
    assert not (tmp_path / "d.bz2").exists()


# ----------------------------------------------------------------------------------------------
# small helpers


def test_discard_stderr_silences_python_and_native_writes(tmp_path):
    code = ("import os, sys\nfrom ferrograd.test_utils import discard_stderr\n"
            "with discard_stderr():\n"
            "    print('hidden-py', file=sys.stderr); sys.stderr.flush()\n"
            "    os.write(2, b'hidden-fd')\n"
            "print('shown', file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, check=True)
    assert out.stderr == "shown\n"


def test_discard_stderr_restores_stderr_after_an_error():
    before = sys.stderr
    with pytest.raises(KeyError), tu.discard_stderr():
        raise KeyError("x")
    assert sys.stderr is before


@pytest.mark.parametrize("axis", [None, 1, (0, 2), [-1, 0], (-2, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_np_reduce_matches_numpy(axis, keepdims):
    x = np.arange(24.0).reshape(2, 3, 4)
    want = np.sum(x, axis=tuple(axis) if isinstance(axis, list) else axis, keepdims=keepdims)
    got = tu.np_reduce(x, axis, keepdims, np.sum)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(tu.np_reduce(x, axis, keepdims, np.max),
                                  np.max(x, axis=tuple(axis) if isinstance(axis, list) else axis,
                                         keepdims=keepdims))


def test_np_reduce_rejects_out_of_range_axes():
    with pytest.raises(ValueError, match="axis 3"):
        tu.np_reduce(np.ones((2, 2)), 3, False, np.sum)


def test_random_sample_draws_distinct_elements_and_follows_the_numpy_seed():
    pop = list(range(10))
    np.random.seed(4)
    a = tu.random_sample(pop, 4)
    np.random.seed(4)
    assert tu.random_sample(pop, 4) == a
    assert len(set(a)) == 4 and set(a) <= set(pop) and pop == list(range(10))
    arr = np.arange(5)
    tu.random_sample(arr, 5)
    np.testing.assert_array_equal(arr, np.arange(5))  # an array population is not shuffled
    with pytest.raises(ValueError, match="k must be in"):
        tu.random_sample(pop, 11)


def test_device_queries():
    assert tu.is_op_runnable() is True
    assert tu.has_tvm_ops() is False and list(tu.list_gpus()) == []
    with pytest.raises(ValueError, match="gpu context"):
        tu.get_cuda_compute_capability(mx.cpu())
    try:
        tu.set_default_context(mx.gpu(0))
        assert tu.is_op_runnable() is False
    finally:
        tu.set_default_context(mx.cpu(0))


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_sparse_helpers_make_arrays_of_that_storage(stype):
    arr, parts = tu.rand_sparse_ndarray((3, 3), stype, density=1.0)
    assert arr.stype == stype and arr.shape == (3, 3) and (arr.asnumpy() != 0).all()
    assert tu.create_sparse_array((3, 3), stype).stype == stype
    assert tu.rand_ndarray((3, 3), stype).stype == stype
    with pytest.raises(ValueError, match="bogus"):
        tu.rand_sparse_ndarray((3, 3), "bogus")


def test_assign_each_and_create_helpers():
    x = np.array([[1.0, 4.0], [9.0, 16.0]])
    np.testing.assert_array_equal(tu.assign_each(x, np.sqrt), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(tu.assign_each2(x, x, lambda a, b: a - b), np.zeros((2, 2)))
    np.testing.assert_array_equal(tu.create_2d_tensor(3, 2).asnumpy(), [[0, 0], [1, 1], [2, 2]])
    assert tu.create_vector(4).asnumpy().tolist() == [0, 1, 2, 3]
    assert tu.create_vector(4).dtype == np.int64
    np.testing.assert_array_equal(tu.get_identity_mat_batch(2).asnumpy(), [np.eye(2)] * 2)


def test_test_matrices_have_the_promised_properties():
    np.random.seed(1)
    q = tu.new_orthonormal_matrix_2d(4)
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-10)
    s = tu.new_sym_matrix_with_real_eigvals_nd((2, 3, 3))
    assert s.shape == (2, 3, 3)
    np.testing.assert_allclose(s, np.swapaxes(s, -1, -2), atol=1e-10)
    m = tu.new_matrix_with_real_eigvals_2d(4)
    eig = np.linalg.eigvals(m)
    assert np.all(np.abs(eig.imag) < 1e-8) and np.all(np.abs(eig.real) <= 10)


def test_same_symbol_structure():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    assert tu.same_symbol_structure(a + b, b + a)
    assert not tu.same_symbol_structure(a + b, a * b)
    assert not tu.same_symbol_structure(a + b, mx.sym.exp(a + b))


def test_compare_ndarray_tuple_recurses():
    tu.compare_ndarray_tuple((nd.ones((2,)), (np.zeros(1),)), (np.ones(2), (np.zeros(1),)))
    with pytest.raises(AssertionError):
        tu.compare_ndarray_tuple((nd.ones((2,)),), (np.zeros(2),))


# ----------------------------------------------------------------------------------------------
# statistics of generators


def test_gen_buckets_probs_with_ppf():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: 10 * q, 4)
    assert buckets == [(0, 2.5), (2.5, 5.0), (5.0, 7.5), (7.5, 10.0)]
    assert probs == [0.25] * 4
    with pytest.raises(ValueError, match="nbuckets"):
        tu.gen_buckets_probs_with_ppf(lambda q: q, 0)


def test_chi_square_counts_continuous_and_discrete_buckets():
    pytest.importorskip("scipy")
    samples = np.array([0.1, 0.2, 0.5, 0.9, 0.95, 1.5])  # 1.5 lies outside every bucket
    p, obs, exp = tu.chi_square_check(lambda n: samples, [(0.0, 0.5), (0.5, 1.0)],
                                      [0.5, 0.5], nsamples=6)
    assert obs.tolist() == [2, 3] and exp.tolist() == [3, 3]
    # scipy's Pearson test on the counts, expected rescaled to the 5 counted samples
    assert p == pytest.approx(tu.ss.chisquare([2, 3], [2.5, 2.5])[1])
    _, obs, _ = tu.chi_square_check(lambda n: nd.array([0, 1, 1, 2]), [0, 1, 2],
                                    [0.25, 0.5, 0.25], nsamples=4)
    assert obs.tolist() == [1, 2, 1]


def test_verify_generator_accepts_a_right_and_rejects_a_wrong_generator():
    pytest.importorskip("scipy")
    np.random.seed(3)
    buckets, probs = tu.gen_buckets_probs_with_ppf(functools.partial(tu.ss.norm.ppf), 5)
    normal = functools.partial(np.random.normal, 0.0, 1.0)
    assert len(tu.verify_generator(normal, buckets, probs, nsamples=20000, nrepeat=3)) == 3
    shifted = functools.partial(np.random.normal, 0.3, 1.0)
    with pytest.raises(AssertionError, match="Generator test fails"):
        tu.verify_generator(shifted, buckets, probs, nsamples=20000, nrepeat=3)


def test_mean_and_var_checks():
    np.random.seed(5)
    normal = functools.partial(np.random.normal, 2.0, 3.0)
    assert tu.mean_check(normal, 2.0, 3.0, nsamples=100000)
    assert not tu.mean_check(normal, 2.5, 3.0, nsamples=100000)
    assert tu.var_check(normal, 3.0, nsamples=100000)
    assert not tu.var_check(normal, 3.5, nsamples=100000)
