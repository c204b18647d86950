"""``gluon.utils``: splitting batches across contexts, gradient clipping, and downloads with a
SHA-1 check (used by the model store)."""

import hashlib
import http.client
import os
import ssl
import sys
import time
import urllib.error
import warnings

import numpy as np

from .. import ndarray as nd
from .._mx_download import _RETRY_DELAY, _fetch, _permanent
from ..base import MXNetError

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download",
           "replace_file", "shape_is_known"]


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Splits ``data`` into ``num_slice`` parts along ``batch_axis`` (always a list).

    With ``even_split=False`` the first ``size % num_slice`` parts get one extra element.
    """
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            f"data with shape {data.shape} cannot be evenly split into {num_slice} slices along "
            f"axis {batch_axis}. Use a batch size that's multiple of {num_slice} or set "
            "even_split=False to allow uneven partitioning of data.")
    step, extra = divmod(size, num_slice)
    bounds = np.cumsum([0] + [step + 1] * extra + [step] * (num_slice - extra))
    # Basic slicing keeps the array's class (an ``mx.np.ndarray`` stays one).
    lead = (slice(None),) * batch_axis
    return [data[lead + (slice(int(bounds[i]), int(bounds[i + 1])),)] for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Splits ``data`` (an NDArray or anything ``nd.array`` takes) into ``len(ctx_list)`` parts
    along ``batch_axis`` and copies part ``i`` to ``ctx_list[i]``."""
    if not isinstance(data, nd.NDArray):
        data = nd.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    parts = split_data(data, len(ctx_list), batch_axis, even_split)
    return [part.as_in_context(ctx) for part, ctx in zip(parts, ctx_list, strict=True)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scales ``arrays`` in place so that their joint 2-norm is at most ``max_norm``.

    Returns the norm before scaling: a float, or (with ``check_isfinite=False``, which avoids
    the synchronising read) a shape-(1,) NDArray.
    """
    if not arrays:
        raise ValueError("clip_global_norm: arrays must hold at least one NDArray")
    ctx = arrays[0].context
    squares = []
    for arr in arrays:
        flat = arr.reshape((-1,))
        squares.append(nd.dot(flat, flat).as_in_context(ctx))
    total = nd.sqrt(nd.add_n(*squares))
    if check_isfinite and not np.isfinite(total.asscalar()):
        warnings.warn(UserWarning("nan or inf is detected. Clipping results will be undefined."),
                      stacklevel=2)
    scale = nd.min(nd.concat(max_norm / (total + 1e-8), nd.ones(1, ctx=ctx), dim=0))
    for arr in arrays:
        arr *= scale.as_in_context(arr.context)
    return total.asscalar() if check_isfinite else total


def check_sha1(filename, sha1_hash):
    """True when the SHA-1 of the file's content is ``sha1_hash`` (hex digits)."""
    digest = hashlib.sha1()
    with open(filename, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest() == sha1_hash


def replace_file(src, dst):
    """Moves ``src`` onto ``dst`` atomically (same file system); on failure ``src`` is removed."""
    try:
        os.replace(src, dst)
    except OSError as e:
        try:
            os.remove(src)
        except OSError:
            pass
        raise OSError(f"Moving downloaded temp file - {src}, to {dst} failed. Please retry the "
                      "download.") from e


def _remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Downloads ``url`` and returns the local file name.

    ``path`` is a file name or an existing directory (default: the URL's last part in the
    current directory). An existing file is kept unless ``overwrite`` or its content does not
    match ``sha1_hash``. The data is written to a temporary file and renamed when complete; a
    download whose SHA-1 differs from ``sha1_hash`` is deleted. Network failures and checksum
    mismatches are retried ``retries`` times; an HTTP client error (404, ...) fails at once.
    Raises ``MXNetError`` (a ``RuntimeError``) for a failed download and ``UserWarning`` (MXNet's
    type) for a checksum mismatch.
    """
    if path is None:
        fname = url.split("/")[-1]
        if not fname:
            raise ValueError(f"download: cannot construct a file name from the URL {url!r}; "
                             "please set the `path` option")
    else:
        path = os.path.expanduser(path)
        fname = os.path.join(path, url.split("/")[-1]) if os.path.isdir(path) else path
    if not isinstance(retries, int) or retries < 0:
        raise ValueError(f"download: retries should be an integer >= 0, got {retries!r}")
    if not (overwrite or not os.path.exists(fname)
            or (sha1_hash and not check_sha1(fname, sha1_hash))):
        return fname
    ssl_context = None
    if not verify_ssl:
        warnings.warn("Unverified HTTPS request is being made (verify_ssl=False). Adding "
                      "certificate verification is strongly advised.", stacklevel=2)
        ssl_context = ssl._create_unverified_context()
    os.makedirs(os.path.dirname(os.path.abspath(fname)), exist_ok=True)
    for attempt in range(retries + 1):
        print(f"Downloading {fname} from {url}...", file=sys.stderr)
        try:
            _fetch(url, fname, timeout=60, ssl_context=ssl_context)
            if sha1_hash and not check_sha1(fname, sha1_hash):
                _remove_quietly(fname)
                raise UserWarning(f"File {fname} is downloaded but the content hash does not "
                                  f"match (expected SHA-1 {sha1_hash}); the file was removed. "
                                  "The repo may be outdated or the download incomplete. If the "
                                  "repo URL is overridden (MXNET_GLUON_REPO), consider "
                                  "switching to the default repo.")
            return fname
        except (OSError, http.client.HTTPException, UserWarning) as e:
            last = attempt == retries
            if isinstance(e, urllib.error.HTTPError):
                reason = f"HTTP {e.code} {e.reason}"
            else:
                reason = str(getattr(e, "reason", None) or e)
            if isinstance(e, UserWarning):
                if last:
                    raise
            elif last or _permanent(e):
                raise MXNetError(f"Failed downloading url {url}: {reason}") from e
            left = retries - attempt
            print(f"download failed due to {reason}, retrying, {left} attempt"
                  f"{'s' if left > 1 else ''} left", file=sys.stderr)
            time.sleep(_RETRY_DELAY)
    raise AssertionError("unreachable")


def _get_repo_url():
    """The base URL of Gluon's dataset and model repository (``MXNET_GLUON_REPO``), ending in
    ``/``."""
    repo = os.environ.get("MXNET_GLUON_REPO",
                          "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/")
    return repo if repo.endswith("/") else repo + "/"


def _get_repo_file_url(namespace, filename):
    return f"{_get_repo_url()}{namespace}/{filename}"


def _brief_print_list(lst, limit=7):
    """``'a', 'b', ..., 'z'``: at most ``limit`` quoted items."""
    lst = list(lst)
    if len(lst) > limit:
        return (_brief_print_list(lst[:limit // 2], limit) + ", ..., "
                + _brief_print_list(lst[-limit // 2:], limit))
    return ", ".join(f"'{item}'" for item in lst)


def shape_is_known(shape):
    """False when ``shape`` is None or has an unknown (0) dimension."""
    if shape is None or len(shape) == 0:
        return False
    for dim in shape:
        if dim == 0:
            return False
        if dim < 0:
            raise AssertionError(f"shape dimension size cannot be less than 0, while received "
                                 f"{dim}")
    return True
