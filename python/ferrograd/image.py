"""``mx.image``: MXNet 1.x's image helpers (a first part: decoding and resizing).

MXNet decodes and resizes with OpenCV. ferrograd resizes itself in NumPy (nearest and bilinear, as
OpenCV's ``INTER_NEAREST``/``INTER_LINEAR`` place pixel centres) and decodes with Pillow when it
is installed (``pip install pillow``); without Pillow, decoding raises a clear ``MXNetError``.
Images are ``(height, width, channels)`` uint8 arrays, as in MXNet.
"""

import io as _io

import numpy as _np

from . import ndarray as _nd
from .base import MXNetError

__all__ = ["imdecode", "imread", "imresize"]

# OpenCV's interpolation codes that MXNet accepts: 0 nearest, 1 bilinear, 2 bicubic, 3 area,
# 4 Lanczos.
_INTERP_NAMES = {0: "nearest", 1: "bilinear", 2: "bicubic", 3: "area", 4: "lanczos"}


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        raise MXNetError("mx.image: decoding images needs Pillow, which is not installed "
                         "(pip install pillow)") from None
    return Image


def imdecode(buf, flag=1, to_rgb=1, out=None):
    """Decodes an encoded image (bytes, bytearray, or a uint8 NDArray/array of its bytes) into a
    ``(height, width, 3)`` uint8 NDArray (``flag=0``: ``(height, width, 1)`` grayscale).
    ``to_rgb=0`` gives OpenCV's BGR channel order. Bad data raises ``MXNetError``."""
    if isinstance(buf, _nd.NDArray):
        buf = buf.asnumpy()
    if isinstance(buf, _np.ndarray):
        buf = buf.astype(_np.uint8).tobytes()
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError(f"imdecode: buf must be bytes or a uint8 array, got {type(buf).__name__}")
    if len(buf) == 0:
        raise MXNetError("imdecode: the buffer is empty")
    image = _pillow()
    try:
        img = image.open(_io.BytesIO(bytes(buf)))
        img = img.convert("L" if flag == 0 else "RGB")
    except Exception as e:  # noqa: BLE001 - Pillow raises several types for bad data
        raise MXNetError(f"imdecode: cannot decode the image data ({e})") from None
    arr = _np.asarray(img, dtype=_np.uint8)
    if flag == 0:
        arr = arr[:, :, None]
    elif not to_rgb:
        arr = arr[:, :, ::-1]
    res = _nd.array(_np.ascontiguousarray(arr), dtype="uint8")
    if out is not None:
        out[:] = res
        return out
    return res


def imread(filename, flag=1, to_rgb=1, out=None):
    """Reads and decodes the image file ``filename`` (see :func:`imdecode`)."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
    except OSError as e:
        raise MXNetError(f"imread: cannot read {filename!r} ({e.strerror})") from None
    return imdecode(data, flag, to_rgb, out)


def _source_coords(n_out, n_in):
    """Pixel-centre mapping of output positions onto input coordinates (OpenCV's convention)."""
    x = (_np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    return _np.clip(x, 0, n_in - 1)


def _resize_array(a, h, w, interp):
    """An HWC NumPy image resized to ``h`` × ``w``: ``interp`` 0 nearest, 1 bilinear with
    pixel-centre alignment (OpenCV's conventions), computed in float64, integers rounded back."""
    if interp == 0:
        rows = _np.minimum((_np.arange(h) * a.shape[0]) // h, a.shape[0] - 1)
        cols = _np.minimum((_np.arange(w) * a.shape[1]) // w, a.shape[1] - 1)
        return a[rows][:, cols]
    y, x = _source_coords(h, a.shape[0]), _source_coords(w, a.shape[1])
    y0, x0 = _np.floor(y).astype(int), _np.floor(x).astype(int)
    y1, x1 = _np.minimum(y0 + 1, a.shape[0] - 1), _np.minimum(x0 + 1, a.shape[1] - 1)
    fy, fx = (y - y0)[:, None, None], (x - x0)[None, :, None]
    f = a.astype(_np.float64)
    top = f[y0][:, x0] * (1 - fx) + f[y0][:, x1] * fx
    bottom = f[y1][:, x0] * (1 - fx) + f[y1][:, x1] * fx
    res = top * (1 - fy) + bottom * fy
    if _np.issubdtype(a.dtype, _np.integer):
        res = _np.clip(_np.rint(res), _np.iinfo(a.dtype).min, _np.iinfo(a.dtype).max)
    return res.astype(a.dtype)


def imresize(src, w, h, interp=1, out=None):
    """``src`` (``(height, width, channels)``) resized to ``h`` rows and ``w`` columns. ``interp``
    is OpenCV's code; ferrograd computes 0 (nearest) and 1 (bilinear) itself, 2-4 need Pillow,
    anything else raises ``MXNetError``."""
    if interp not in _INTERP_NAMES:
        raise MXNetError(f"imresize: interp={interp} is not a valid interpolation (0 nearest, "
                         "1 bilinear, 2 bicubic, 3 area, 4 lanczos)")
    w, h = int(w), int(h)
    if w <= 0 or h <= 0:
        raise MXNetError(f"imresize: target size must be positive, got w={w}, h={h}")
    if src.ndim != 3:
        raise MXNetError(f"imresize: src must be (height, width, channels), got shape {src.shape}")
    a = src.asnumpy()
    dtype = a.dtype
    if interp in (0, 1):
        res = _resize_array(a, h, w, interp)
    else:
        image = _pillow()
        modes = {2: image.BICUBIC, 3: image.BOX, 4: image.LANCZOS}
        chans = [_np.asarray(image.fromarray(a[:, :, c].astype(_np.float32), mode="F")
                             .resize((w, h), modes[interp])) for c in range(a.shape[2])]
        res = _np.stack(chans, axis=2).astype(dtype)
    result = _nd.array(_np.ascontiguousarray(res), dtype=dtype)
    if out is not None:
        out[:] = result
        return out
    return result
