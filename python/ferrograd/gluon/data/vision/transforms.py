"""``vision.transforms``: image transforms on NDArrays in MXNet's layouts — images are HWC
(uint8 or float), batches NHWC; ``ToTensor`` turns them into CHW/NCHW float32 in [0, 1].

Geometry (resize, crop) runs in NumPy on the sample; random choices use Python's ``random``
module as MXNet's ``mx.image`` helpers do.

Transforms that act on each sample alone, with the same shapes in and out (``Cast``,
``ToTensor``, ``Normalize``, the random flips, and ``Compose`` of those), also have
``_apply_batch``: the stacked result of the transform on each sample of an NHWC batch, in one
operation. The DataLoader uses it for datasets of arrays (``dataset.take_batch``); the random
flips draw one number per sample, in sample order."""

import math
import random

import numpy as np

from .... import ndarray as nd
from .... import symbol as sym
from ....image import _resize_array
from ...block import Block, HybridBlock
from ...nn import Sequential

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Resize", "CenterCrop", "CropResize",
           "RandomResizedCrop", "RandomFlipLeftRight", "RandomFlipTopBottom",
           "RandomBrightness", "RandomContrast", "RandomSaturation", "RandomLighting",
           "RandomColorJitter", "RandomApply"]


def _check_image(name, x, ndims=(3, 4)):
    if not isinstance(x, nd.NDArray):
        raise TypeError(f"{name}: expected an NDArray image, got {type(x).__name__}")
    if x.ndim not in ndims:
        raise ValueError(f"{name}: expected an image of {' or '.join(map(str, ndims))} dims "
                         f"(HWC or NHWC), got shape {x.shape}")


class Compose(Sequential):
    """Applies ``transforms`` in order."""

    def __init__(self, transforms):
        super().__init__()
        for t in transforms:
            if isinstance(t, Block):
                self.add(t)
            elif not callable(t):
                raise TypeError(f"Compose: a transform must be a Block or a callable, got "
                                f"{type(t).__name__}")
        self._order = list(transforms)

    def forward(self, x, *args):
        for t in self._order:
            x = t(x)
        return x

    def _apply_batch(self, x):
        for t in self._order:
            apply = getattr(t, "_apply_batch", None)
            x = None if apply is None else apply(x)
            if x is None:
                return None
        return x


class _ImperativeTransform(HybridBlock):
    """A transform that MXNet makes a ``HybridBlock`` but that runs here in NumPy or with
    Python's random choices: it accepts ``hybridize()`` (and a place in a ``HybridSequential``)
    and always runs imperatively on NDArrays."""

    def forward(self, x, *args):
        if isinstance(x, sym.Symbol):
            raise NotImplementedError(f"{type(self).__name__}: symbolic execution is not "
                                      "supported; apply the transform to NDArrays")
        return self._apply(x)

    def _apply(self, x):
        raise NotImplementedError


class _ArrayTransform(HybridBlock):
    """A parameter-free HybridBlock transform: on a single NDArray, outside a hybridized
    graph, it calls ``hybrid_forward`` directly (per-sample transforms run thousands of times
    per epoch in DataLoader workers)."""

    def forward(self, x, *args):
        if not args and isinstance(x, nd.NDArray) and not getattr(self, "_active", False):
            return self.hybrid_forward(nd, x)
        return super().forward(x, *args)


class Cast(_ArrayTransform):
    """Casts to ``dtype``."""

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, self._dtype)

    def _apply_batch(self, x):
        return nd.cast(x, self._dtype)


class ToTensor(_ArrayTransform):
    """HWC (or NHWC) values in [0, 255] to CHW (NCHW) float32 in [0, 1] (``image.to_tensor``,
    one pass)."""

    def hybrid_forward(self, F, x):
        return F.image.to_tensor(x)

    def _apply_batch(self, x):
        return nd.image.to_tensor(x) if x.ndim == 4 else None


class Normalize(_ArrayTransform):
    """``(x - mean[c]) / std[c]`` per channel of a CHW (or NCHW) tensor; ``mean``/``std`` are
    numbers or one value per channel (``image.normalize``, one pass). With single numbers it
    also takes tensors of other ranks."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean = mean
        self._std = std
        # The op's keywords, made once: single values as numbers (cheaper to pass than tuples).
        self._kwargs = {k: vals[0] if len(vals) == 1 else vals for k, vals in (
            ("mean", tuple(float(v) for v in np.asarray(mean, dtype=np.float64).ravel())),
            ("std", tuple(float(v) for v in np.asarray(std, dtype=np.float64).ravel())))}
        self._scalar = not any(isinstance(v, tuple) for v in self._kwargs.values())

    def hybrid_forward(self, F, x):
        if self._scalar and (F is not nd or x.ndim not in (3, 4)):
            return (x - self._kwargs["mean"]) / self._kwargs["std"]
        return F.image.normalize(x, **self._kwargs)

    def _apply_batch(self, x):
        sample_ndim = x.ndim - 1
        if self._scalar and sample_ndim not in (3, 4):
            return (x - self._kwargs["mean"]) / self._kwargs["std"]
        return nd.image.normalize(x, **self._kwargs) if sample_ndim == 3 else None


def _resize_np(img, width, height, interpolation):
    if img.ndim == 4:
        return np.stack([_resize_np(i, width, height, interpolation) for i in img])
    squeeze = img.ndim == 2
    if squeeze:
        img = img[:, :, None]
    out = _resize_array(img, height, width, 0 if interpolation == 0 else 1)
    return out[:, :, 0] if squeeze else out


def _to_nd(array, like):
    return nd.array(array, dtype=array.dtype, ctx=like.context)


def _size_pair(name, size):
    if isinstance(size, (int, np.integer)):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise ValueError(f"{name}: size must be an int or a (width, height) pair, got {size!r}")


class Resize(_ImperativeTransform):
    """Resizes an HWC (or NHWC) image to ``size`` = (width, height), or an int: a square, or
    with ``keep_ratio`` the shorter side (the other keeps the aspect ratio)."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._keep = keep_ratio
        self._size = size
        self._interpolation = interpolation

    def _apply(self, x):
        _check_image("Resize", x)
        h, w = x.shape[-3], x.shape[-2]
        if isinstance(self._size, (int, np.integer)):
            if self._keep:
                if h > w:
                    out_w, out_h = int(self._size), int(self._size * h / w)
                else:
                    out_w, out_h = int(self._size * w / h), int(self._size)
            else:
                out_w = out_h = int(self._size)
        else:
            out_w, out_h = _size_pair("Resize", self._size)
        return _to_nd(_resize_np(x.asnumpy(), out_w, out_h, self._interpolation), x)


def _fixed_crop(img, x0, y0, w, h, size=None, interpolation=1):
    out = img[..., y0:y0 + h, x0:x0 + w, :]
    if size is not None and (w, h) != tuple(size):
        out = _resize_np(out, size[0], size[1], interpolation)
    return out


def _scale_down(src_size, size):
    """(w, h) = ``size`` shrunk, keeping its aspect ratio, to fit inside ``src_size``."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def _center_crop(img, size, interpolation):
    h, w = img.shape[-3], img.shape[-2]
    new_w, new_h = _scale_down((w, h), size)
    x0 = (w - new_w) // 2
    y0 = (h - new_h) // 2
    return _fixed_crop(img, x0, y0, new_w, new_h, size, interpolation)


class CenterCrop(Block):
    """The centre ``size`` = (width, height) (or square int) region; an image smaller than that
    gives its largest centred region of that aspect ratio, resized up."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        self._size = _size_pair("CenterCrop", size)
        self._interpolation = interpolation

    def forward(self, x):
        _check_image("CenterCrop", x)
        return _to_nd(_center_crop(x.asnumpy(), self._size, self._interpolation), x)


class CropResize(_ImperativeTransform):
    """The region at (x, y) of ``width`` x ``height``, resized to ``size`` if given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._box = (x, y, width, height)
        self._size = None if size is None else _size_pair("CropResize", size)
        self._interpolation = 1 if interpolation is None else interpolation

    def _apply(self, x):
        _check_image("CropResize", x)
        x0, y0, w, h = self._box
        if x0 + w > x.shape[-2] or y0 + h > x.shape[-3]:
            raise ValueError(f"CropResize: box {self._box} (x, y, width, height) exceeds the "
                             f"image of shape {x.shape}")
        return _to_nd(_fixed_crop(x.asnumpy(), x0, y0, w, h, self._size, self._interpolation),
                      x)


class RandomResizedCrop(Block):
    """A random region covering ``scale`` of the area with aspect ratio in ``ratio``
    (log-uniform), resized to ``size``; falls back to a centre crop after 10 tries."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        self._size = _size_pair("RandomResizedCrop", size)
        self._scale = scale
        self._ratio = ratio
        self._interpolation = interpolation

    def forward(self, x):
        _check_image("RandomResizedCrop", x, ndims=(3,))
        img = x.asnumpy()
        h, w = img.shape[:2]
        area = h * w
        log_ratio = (math.log(self._ratio[0]), math.log(self._ratio[1]))
        for _ in range(10):
            target_area = random.uniform(*self._scale) * area
            aspect = math.exp(random.uniform(*log_ratio))
            new_w = int(round(math.sqrt(target_area * aspect)))
            new_h = int(round(math.sqrt(target_area / aspect)))
            if 0 < new_w <= w and 0 < new_h <= h:
                x0 = random.randint(0, w - new_w)
                y0 = random.randint(0, h - new_h)
                return _to_nd(_fixed_crop(img, x0, y0, new_w, new_h, self._size,
                                          self._interpolation), x)
        return _to_nd(_center_crop(img, self._size, self._interpolation), x)


class _RandomFlip(_ImperativeTransform):
    _flip = None  # the nd.image flip op's name

    def _apply(self, x):
        _check_image(type(self).__name__, x)
        if random.random() < 0.5:
            return getattr(nd.image, self._flip)(x)
        return x

    _batch_axis = None  # the flipped axis of an NHWC batch

    def _apply_batch(self, x):
        if x.ndim != 4:
            return None
        chosen = np.fromiter((random.random() < 0.5 for _ in range(x.shape[0])), dtype=bool,
                             count=x.shape[0])
        if not chosen.any():
            return x
        # In NumPy: choosing between each image and its mirror is one pass there.
        images = x.asnumpy()
        flipped = np.where(chosen[:, None, None, None], np.flip(images, axis=self._batch_axis),
                           images)
        return nd.from_numpy(flipped, zero_copy=False).as_in_context(x.context)


class RandomFlipLeftRight(_RandomFlip):
    """Mirrors the image horizontally with probability 0.5."""

    _flip = "flip_left_right"
    _batch_axis = 2


class RandomFlipTopBottom(_RandomFlip):
    """Flips the image vertically with probability 0.5."""

    _flip = "flip_top_bottom"
    _batch_axis = 1


_GRAY = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _blend(x, other, alpha):
    out = x.asnumpy().astype(np.float32) * alpha + other * (1 - alpha)
    if np.issubdtype(x.dtype, np.integer):
        out = np.clip(np.rint(out), 0, 255)
    return _to_nd(out.astype(x.dtype), x)


class RandomBrightness(_ImperativeTransform):
    """Scales the pixel values by ``1 + uniform(-brightness, brightness)``."""

    def __init__(self, brightness):
        super().__init__()
        self._args = (max(0, 1 - brightness), 1 + brightness)

    def _apply(self, x):
        return _blend(x, 0.0, random.uniform(*self._args))


class RandomContrast(_ImperativeTransform):
    """Blends with the image's mean gray level by ``1 + uniform(-contrast, contrast)``."""

    def __init__(self, contrast):
        super().__init__()
        self._args = (max(0, 1 - contrast), 1 + contrast)

    def _apply(self, x):
        _check_image("RandomContrast", x, ndims=(3,))
        gray = float((x.asnumpy().astype(np.float32) * _GRAY).sum(axis=-1).mean())
        return _blend(x, gray, random.uniform(*self._args))


class RandomSaturation(_ImperativeTransform):
    """Blends with each pixel's gray level by ``1 + uniform(-saturation, saturation)``."""

    def __init__(self, saturation):
        super().__init__()
        self._args = (max(0, 1 - saturation), 1 + saturation)

    def _apply(self, x):
        _check_image("RandomSaturation", x, ndims=(3,))
        gray = (x.asnumpy().astype(np.float32) * _GRAY).sum(axis=-1, keepdims=True)
        return _blend(x, gray, random.uniform(*self._args))


_EIGVAL = np.array([55.46, 4.794, 1.148], dtype=np.float32)
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]], dtype=np.float32)


class RandomLighting(_ImperativeTransform):
    """AlexNet-style PCA lighting noise with strength ``alpha`` (added per RGB channel)."""

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def _apply(self, x):
        _check_image("RandomLighting", x, ndims=(3,))
        weights = np.random.normal(0, self._alpha, size=(3,)).astype(np.float32)
        rgb = _EIGVEC @ (weights * _EIGVAL)
        out = x.asnumpy().astype(np.float32) + rgb
        if np.issubdtype(x.dtype, np.integer):
            out = np.clip(np.rint(out), 0, 255)
        return _to_nd(out.astype(x.dtype), x)


class RandomColorJitter(_ImperativeTransform):
    """Random brightness, contrast and saturation changes in random order (hue is not
    supported yet and must be 0)."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        if hue:
            raise NotImplementedError("RandomColorJitter: hue jitter is not supported yet")
        self._steps = [cls(v) for cls, v in ((RandomBrightness, brightness),
                                             (RandomContrast, contrast),
                                             (RandomSaturation, saturation)) if v]

    def _apply(self, x):
        for step in random.sample(self._steps, len(self._steps)):
            x = step(x)
        return x


class RandomApply(Sequential):
    """Applies ``transforms`` (in order) with probability ``p``, else returns the input."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x, *args):
        if self.p < random.random():
            return x
        return self.transforms(x)
