"""gluon.model_zoo.model_store and gluon.utils.download against a local HTTP server (127.0.0.1):
cache hits without network, downloads with SHA-1 checks, failures that leave no file behind,
and ``pretrained=True`` end to end."""

import hashlib
import http.server
import io
import os
import threading
import zipfile

import ferrograd as mx
import numpy as np
import pytest
from ferrograd.base import MXNetError
from ferrograd.gluon import utils
from ferrograd.gluon.model_zoo import model_store, vision

DATA = os.path.join(os.path.dirname(__file__), "data", "model_zoo")
UNREACHABLE = "http://127.0.0.1:9/"  # the discard port: nothing listens, any request fails


def sha1(data):
    return hashlib.sha1(data).hexdigest()


def zipped(name, data):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(name, data)
    return buf.getvalue()


class _Handler(http.server.BaseHTTPRequestHandler):
    files = {}  # path -> bytes
    requests = []

    def do_GET(self):  # noqa: N802 - http.server's naming
        _Handler.requests.append(self.path)
        body = _Handler.files.get(self.path)
        if self.path.startswith("/truncated/"):
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"only a few bytes")
            return
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
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def served(server):
    _Handler.files.clear()
    _Handler.requests.clear()
    return server


@pytest.fixture
def tiny_model(monkeypatch):
    """A fake model 'tinynet' whose published file is ``CONTENT``."""
    content = b"tiny model parameters"
    monkeypatch.setitem(model_store._model_sha1, "tinynet", sha1(content))
    return "tinynet", content, f"tinynet-{sha1(content)[:8]}"


def test_short_hash_and_unknown_model():
    assert model_store.short_hash("resnet18_v1") == "a0666292"
    assert model_store.short_hash("mobilenetv2_0.25") == "ae8f9392"
    with pytest.raises(ValueError, match="Pretrained model for resnet19_v1 is not available."):
        model_store.get_model_file("resnet19_v1")


def test_cache_hit_needs_no_network(tmp_path, monkeypatch, tiny_model):
    name, content, file_name = tiny_model
    (tmp_path / f"{file_name}.params").write_bytes(content)
    monkeypatch.setenv("MXNET_GLUON_REPO", UNREACHABLE)
    assert model_store.get_model_file(name, root=str(tmp_path)) == str(
        tmp_path / f"{file_name}.params")


def test_default_root_follows_mxnet_home(tmp_path, monkeypatch, tiny_model):
    name, content, file_name = tiny_model
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / f"{file_name}.params").write_bytes(content)
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    monkeypatch.setenv("MXNET_GLUON_REPO", UNREACHABLE)
    assert mx.base.data_dir() == str(tmp_path)
    assert model_store.get_model_file(name) == str(tmp_path / "models" / f"{file_name}.params")
    monkeypatch.delenv("MXNET_HOME")
    assert mx.base.data_dir() == os.path.join(os.path.expanduser("~"), ".mxnet")


def test_download_unzips_and_verifies(tmp_path, monkeypatch, served, tiny_model):
    name, content, file_name = tiny_model
    _Handler.files[f"/gluon/models/{file_name}.zip"] = zipped(f"{file_name}.params", content)
    monkeypatch.setenv("MXNET_GLUON_REPO", served)  # no trailing slash: one is added
    root = tmp_path / "store"  # created on demand
    path = model_store.get_model_file(name, root=str(root))
    assert path == str(root / f"{file_name}.params")
    assert (root / f"{file_name}.params").read_bytes() == content
    assert os.listdir(root) == [f"{file_name}.params"]  # no zip, no temporary directory
    assert _Handler.requests == [f"/gluon/models/{file_name}.zip"]
    # The second call is a cache hit.
    model_store.get_model_file(name, root=str(root))
    assert len(_Handler.requests) == 1


def test_stale_cached_file_is_replaced(tmp_path, monkeypatch, served, tiny_model):
    name, content, file_name = tiny_model
    (tmp_path / f"{file_name}.params").write_bytes(b"corrupted")
    _Handler.files[f"/gluon/models/{file_name}.zip"] = zipped(f"{file_name}.params", content)
    monkeypatch.setenv("MXNET_GLUON_REPO", served + "/")
    model_store.get_model_file(name, root=str(tmp_path))
    assert (tmp_path / f"{file_name}.params").read_bytes() == content


def test_checksum_mismatch_raises_and_leaves_nothing(tmp_path, monkeypatch, served, tiny_model):
    name, _, file_name = tiny_model
    _Handler.files[f"/gluon/models/{file_name}.zip"] = zipped(f"{file_name}.params", b"other")
    monkeypatch.setenv("MXNET_GLUON_REPO", served)
    with pytest.raises(ValueError, match="Downloaded file has different hash.*'tinynet'"):
        model_store.get_model_file(name, root=str(tmp_path))
    assert os.listdir(tmp_path) == []


def test_missing_file_on_server_raises_and_leaves_nothing(tmp_path, monkeypatch, served,
                                                          tiny_model):
    name, _, file_name = tiny_model
    monkeypatch.setenv("MXNET_GLUON_REPO", served)
    with pytest.raises(MXNetError, match=f"Failed downloading url .*/gluon/models/{file_name}"
                                         r"\.zip: HTTP 404"):
        model_store.get_model_file(name, root=str(tmp_path))
    assert os.listdir(tmp_path) == []
    assert len(_Handler.requests) == 1  # a 404 is not retried


def test_archive_without_the_file_raises(tmp_path, monkeypatch, served, tiny_model):
    name, content, file_name = tiny_model
    _Handler.files[f"/gluon/models/{file_name}.zip"] = zipped("wrong-name.params", content)
    monkeypatch.setenv("MXNET_GLUON_REPO", served)
    with pytest.raises(MXNetError, match=f"does not contain {file_name}.params"):
        model_store.get_model_file(name, root=str(tmp_path))
    assert os.listdir(tmp_path) == []
    _Handler.files[f"/gluon/models/{file_name}.zip"] = b"not a zip"
    with pytest.raises(MXNetError, match="is not a zip archive"):
        model_store.get_model_file(name, root=str(tmp_path))
    assert os.listdir(tmp_path) == []


def test_purge_removes_only_params_files(tmp_path):
    (tmp_path / "a-12345678.params").write_bytes(b"a")
    (tmp_path / "notes.txt").write_bytes(b"b")
    model_store.purge(root=str(tmp_path))
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_pretrained_true_downloads_and_loads(tmp_path, monkeypatch, served):
    """mobilenet0.25 with 10 classes, weights written by MXNet, served as the published file
    (the SHA-1 table entry is pointed at that file)."""
    with open(os.path.join(DATA, "mobilenet0.25_c10.params"), "rb") as f:
        weights = f.read()
    monkeypatch.setitem(model_store._model_sha1, "mobilenet0.25", sha1(weights))
    file_name = f"mobilenet0.25-{sha1(weights)[:8]}"
    _Handler.files[f"/gluon/models/{file_name}.zip"] = zipped(f"{file_name}.params", weights)
    monkeypatch.setenv("MXNET_GLUON_REPO", served)
    net = vision.get_model("mobilenet0.25", pretrained=True, classes=10, root=str(tmp_path),
                           ctx=mx.cpu())
    data = np.load(os.path.join(DATA, "mobilenet0.25_c10.npz"))
    np.testing.assert_allclose(net(mx.nd.array(data["x"])).asnumpy(), data["y"], rtol=1e-4,
                               atol=1e-4)
    # Again from the cache, through the class-level helper.
    net = vision.mobilenet0_25(pretrained=True, classes=10, root=str(tmp_path))
    assert len(_Handler.requests) == 1


def test_utils_download_paths_and_cache(tmp_path, served):
    _Handler.files["/files/a.bin"] = b"abc"
    url = served + "/files/a.bin"
    assert utils.download(url, path=str(tmp_path)) == str(tmp_path / "a.bin")  # a directory
    assert (tmp_path / "a.bin").read_bytes() == b"abc"
    target = tmp_path / "sub" / "b.bin"
    assert utils.download(url, path=str(target), sha1_hash=sha1(b"abc")) == str(target)
    _Handler.files["/files/a.bin"] = b"new"
    utils.download(url, path=str(target))  # exists: kept
    assert target.read_bytes() == b"abc"
    utils.download(url, path=str(target), sha1_hash=sha1(b"new"))  # stale: fetched again
    assert target.read_bytes() == b"new"
    target.write_bytes(b"old")
    utils.download(url, path=str(target), overwrite=True)
    assert utils.check_sha1(str(target), sha1(b"new"))
    assert not utils.check_sha1(str(target), sha1(b"abc"))


def test_utils_download_failures_leave_no_file(tmp_path, served):
    _Handler.files["/files/a.bin"] = b"abc"
    target = tmp_path / "a.bin"
    with pytest.raises(UserWarning, match="content hash does not match"):
        utils.download(served + "/files/a.bin", path=str(target), sha1_hash="0" * 40,
                       retries=0)
    assert os.listdir(tmp_path) == []
    with pytest.raises(MXNetError, match="Failed downloading url .*truncated"):
        utils.download(served + "/truncated/a.bin", path=str(target), retries=0)
    assert os.listdir(tmp_path) == []
    with pytest.raises(MXNetError, match="HTTP 404"):
        utils.download(served + "/missing.bin", path=str(target))
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="retries"):
        utils.download(served + "/files/a.bin", path=str(target), retries=-1)
    with pytest.raises(ValueError, match="file name"):
        utils.download(served + "/files/")


class _Asked(Exception):
    pass


@pytest.mark.parametrize("name", sorted(model_store._model_sha1))
def test_pretrained_asks_the_store_for_the_models_own_file(name, monkeypatch):
    asked = []

    def fake_get_model_file(model_name, root=None):
        asked.append((model_name, root))
        raise _Asked

    monkeypatch.setattr(model_store, "get_model_file", fake_get_model_file)
    with pytest.raises(_Asked):
        vision.get_model(name, pretrained=True, root="/some/root")
    assert asked == [(name, "/some/root")]
