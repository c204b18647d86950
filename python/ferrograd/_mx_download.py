"""Downloading test data (MXNet's ``test_utils.download`` and the dataset helpers built on it).

Plain HTTP(S) through ``urllib``. A download is written to a temporary file next to the target
and renamed when complete, so an interrupted download never leaves a truncated file that a later
call would take for the real one.
"""

import bz2
import gzip
import http.client
import logging
import os
import shutil
import struct
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile

import numpy as np

__all__ = ["download", "get_mnist", "get_mnist_pkl", "get_mnist_ubyte", "get_cifar10",
           "get_zip_data", "get_bz2_data"]

_CHUNK = 1 << 16
_PROGRESS_AFTER = 2.0  # seconds: shorter downloads print nothing
_RETRY_DELAY = 0.5  # seconds between attempts


class _Progress:
    """Prints ``name: 12.3 MiB of 40.0 MiB (30%)`` to stderr about once a second, starting only
    once a download has run for a couple of seconds."""

    def __init__(self, name, total):
        self.name, self.total = name, total
        self.start = self.last = time.monotonic()
        self.shown = False

    def update(self, done):
        now = time.monotonic()
        if now - self.start < _PROGRESS_AFTER or now - self.last < 1.0:
            return
        self.last, self.shown = now, True
        line = f"{self.name}: {done / 2**20:.1f} MiB"
        if self.total:
            line += f" of {self.total / 2**20:.1f} MiB ({100 * done // self.total}%)"
        print("\r" + line, end="", file=sys.stderr, flush=True)

    def finish(self):
        if self.shown:
            print(file=sys.stderr, flush=True)


def _fetch(url, target, timeout, ssl_context=None):
    """Downloads ``url`` into ``target`` (via a temporary file in the same directory)."""
    with urllib.request.urlopen(url, timeout=timeout, context=ssl_context) as response:
        total = int(response.headers.get("Content-Length") or 0)
        progress = _Progress(os.path.basename(target), total)
        fd, tmp = tempfile.mkstemp(prefix=".download-", dir=os.path.dirname(target) or ".")
        try:
            with os.fdopen(fd, "wb") as out:
                done = 0
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    done += len(chunk)
                    progress.update(done)
            progress.finish()
            if total and done != total:
                raise OSError(f"download: {url} ended after {done} of {total} bytes")
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise


def _permanent(error):
    """HTTP client errors (404, 403, ...) do not go away by retrying; timeouts and 429 may."""
    return (isinstance(error, urllib.error.HTTPError) and 400 <= error.code < 500
            and error.code not in (408, 429))


def download(url, fname=None, dirname=None, overwrite=False, retries=5, timeout=60):
    """Downloads ``url`` and returns the path of the file written.

    ``fname`` defaults to the last part of the URL. With ``dirname`` the file goes to
    ``dirname/fname`` (the directory is created); without it, to ``fname`` as given. An existing
    file is kept and returned unless ``overwrite=True``. Network failures are retried up to
    ``retries`` more times; an HTTP error such as 404 fails at once. Failures raise ``OSError``
    naming the URL.
    """
    if not isinstance(retries, int) or retries < 0:
        raise ValueError(f"download: retries must be an integer >= 0, got {retries!r}")
    if fname is None:
        fname = url.split("?")[0].split("/")[-1]
        if not fname:
            raise ValueError(f"download: cannot guess a file name from {url!r}; pass fname=")
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    if not overwrite and os.path.exists(fname):
        logging.info("%s exists, skipping download", fname)
        return fname
    for attempt in range(retries + 1):
        try:
            _fetch(url, fname, timeout)
            break
        except (OSError, http.client.HTTPException) as e:
            if isinstance(e, urllib.error.HTTPError):
                reason = f"HTTP {e.code} {e.reason}"
            else:
                reason = str(getattr(e, "reason", None) or e)
            if _permanent(e) or attempt == retries:
                raise OSError(f"download: could not fetch {url}: {reason}") from e
            print(f"download of {url} failed ({reason}), retrying, {retries - attempt} "
                  f"attempt{'s' if retries - attempt > 1 else ''} left", file=sys.stderr)
            time.sleep(_RETRY_DELAY)
    logging.info("downloaded %s into %s successfully", url, fname)
    return fname


_MNIST_URL = "http://data.mxnet.io/data/mnist/"


def _read_mnist(label_url, image_url):
    with gzip.open(download(label_url)) as f:
        struct.unpack(">II", f.read(8))
        label = np.frombuffer(f.read(), dtype=np.int8)
    with gzip.open(download(image_url)) as f:
        _, _, rows, cols = struct.unpack(">IIII", f.read(16))
        image = np.frombuffer(f.read(), dtype=np.uint8).reshape(len(label), 1, rows, cols)
    return label, image.astype(np.float32) / 255


def get_mnist():
    """Downloads MNIST (into the current directory) and returns ``{'train_data', 'train_label',
    'test_data', 'test_label'}``: images ``(N, 1, 28, 28)`` float32 in [0, 1], labels int8."""
    train_lbl, train_img = _read_mnist(_MNIST_URL + "train-labels-idx1-ubyte.gz",
                                       _MNIST_URL + "train-images-idx3-ubyte.gz")
    test_lbl, test_img = _read_mnist(_MNIST_URL + "t10k-labels-idx1-ubyte.gz",
                                     _MNIST_URL + "t10k-images-idx3-ubyte.gz")
    return {"train_data": train_img, "train_label": train_lbl,
            "test_data": test_img, "test_label": test_lbl}


def _zip_into_data(url, wanted):
    """Downloads the zip at ``url`` into ``data/`` and extracts it there, unless every file in
    ``wanted`` (paths under ``data/``) already exists."""
    os.makedirs("data", exist_ok=True)
    if all(os.path.exists(os.path.join("data", w)) for w in wanted):
        return
    with zipfile.ZipFile(download(url, dirname="data")) as zf:
        zf.extractall("data")


def get_mnist_pkl():
    """Downloads ``data/mnist.pkl.gz`` unless it exists."""
    os.makedirs("data", exist_ok=True)
    if not os.path.exists(os.path.join("data", "mnist.pkl.gz")):
        download("http://deeplearning.net/data/mnist/mnist.pkl.gz", dirname="data")


def get_mnist_ubyte():
    """Downloads and extracts the raw MNIST files into ``data/`` unless they exist."""
    _zip_into_data("http://data.mxnet.io/mxnet/data/mnist.zip",
                   ["train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                    "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"])


def get_cifar10():
    """Downloads and extracts CIFAR-10 (RecordIO files) into ``data/cifar/`` unless present."""
    _zip_into_data("http://data.mxnet.io/mxnet/data/cifar10.zip",
                   ["cifar/train.rec", "cifar/test.rec", "cifar/train.lst", "cifar/test.lst"])


def get_zip_data(data_dir, url, data_origin_name):
    """Downloads the zip ``url`` as ``data_dir/data_origin_name`` and extracts it into
    ``data_dir``, unless that zip file is already there."""
    archive = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(archive):
        download(url, fname=data_origin_name, dirname=data_dir)
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(path=data_dir)


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """Downloads the bz2 file ``url`` and decompresses it to ``data_dir/data_name`` (the
    compressed ``data_origin_name`` is removed afterwards), unless ``data_name`` exists."""
    target = os.path.join(data_dir, data_name)
    if os.path.exists(target):
        return
    archive = download(url, fname=data_origin_name, dirname=data_dir)
    with bz2.BZ2File(archive, "rb") as src, open(target, "wb") as out:
        shutil.copyfileobj(src, out)
    os.remove(archive)
