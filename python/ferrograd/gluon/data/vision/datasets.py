"""``vision`` datasets read from MXNet's standard files under ``root`` (downloaded from the
Gluon repository into ``root`` when missing, as MXNet does): MNIST and Fashion-MNIST (gzip IDX
files), CIFAR-10 and CIFAR-100 (binary batches), plus ``ImageRecordDataset`` and
``ImageFolderDataset``."""

import gzip
import hashlib
import os
import struct
import tarfile

import numpy as np

from .... import ndarray as nd
from ..dataset import Dataset, RecordFileDataset, _DownloadedDataset

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset",
           "ImageFolderDataset"]


def _data_dir():
    return os.getenv("MXNET_HOME", os.path.join(os.path.expanduser("~"), ".mxnet"))


def _default_root(name):
    return os.path.join(_data_dir(), "datasets", name)


# Defaults evaluated at import, as MXNet's signatures do.
_MNIST_ROOT = _default_root("mnist")
_FASHION_ROOT = _default_root("fashion-mnist")
_CIFAR10_ROOT = _default_root("cifar10")
_CIFAR100_ROOT = _default_root("cifar100")


def _repo_file_url(namespace, filename):
    repo = os.environ.get("MXNET_GLUON_REPO",
                          "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/")
    if not repo.endswith("/"):
        repo += "/"
    return f"{repo}gluon/dataset/{namespace}/{filename}"


def _sha1_matches(path, sha1):
    digest = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest() == sha1


def _fetch(root, namespace, filename, sha1):
    """``root/filename``, downloaded when missing or when its SHA-1 differs."""
    from .... import _mx_download
    path = os.path.join(root, filename)
    if os.path.exists(path) and (sha1 is None or _sha1_matches(path, sha1)):
        return path
    _mx_download.download(_repo_file_url(namespace, filename), fname=filename, dirname=root,
                          overwrite=True)
    if sha1 is not None and not _sha1_matches(path, sha1):
        raise OSError(f"{path}: downloaded file does not match its SHA-1 {sha1}")
    return path


def _read_idx(path, dims):
    with gzip.open(path, "rb") as fin:
        header = fin.read(4 * (dims + 1))
        if len(header) < 4 * (dims + 1):
            raise ValueError(f"{path}: truncated IDX header")
        magic, *shape = struct.unpack(">" + "I" * (dims + 1), header)
        if magic != 0x800 + dims:
            raise ValueError(f"{path}: not an IDX file of {dims}-D unsigned bytes (magic "
                             f"{magic:#x})")
        data = np.frombuffer(fin.read(), dtype=np.uint8)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: IDX header says shape {tuple(shape)} but holds {data.size} "
                         "bytes")
    return data.reshape(shape)


class MNIST(_DownloadedDataset):
    """MNIST handwritten digits: samples are (28, 28, 1) uint8 NDArrays and int32 labels.
    ``transform(data, label)`` is applied per sample."""

    _namespace = "mnist"
    _files = {True: (("train-images-idx3-ubyte.gz", "6c95f4b05d2bf285e1bfb0e7960c31bd3b3f8a7d"),
                     ("train-labels-idx1-ubyte.gz", "2a80914081dc54586dbdf242f9805a6b8d2a15fc")),
              False: (("t10k-images-idx3-ubyte.gz", "c3a25af1f52dad7f726cce8cacb138654b760d48"),
                      ("t10k-labels-idx1-ubyte.gz", "763e7fa3757d93b0cdec073cef058b2004252c17"))}

    def __init__(self, root=_MNIST_ROOT, train=True,
                 transform=None):
        self._train = train
        super().__init__(root, transform)

    def _get_data(self):
        (data_name, data_sha1), (label_name, label_sha1) = self._files[bool(self._train)]
        data_file = _fetch(self._root, self._namespace, data_name, data_sha1)
        label_file = _fetch(self._root, self._namespace, label_name, label_sha1)
        label = _read_idx(label_file, 1).astype(np.int32)
        data = _read_idx(data_file, 3)
        if data.shape[0] != label.shape[0]:
            raise ValueError(f"{self._namespace}: {data.shape[0]} images but {label.shape[0]} "
                             "labels")
        self._data = nd.array(data.reshape(data.shape + (1,)), dtype=np.uint8)
        self._label = label


class FashionMNIST(MNIST):
    """Fashion-MNIST (Zalando's article images), a drop-in replacement for MNIST."""

    _namespace = "fashion-mnist"
    _files = {True: (("train-images-idx3-ubyte.gz", "0cf37b0d40ed5169c6b3aba31069a9770ac9043d"),
                     ("train-labels-idx1-ubyte.gz", "236021d52f1e40852b06a4c3008d8de8aef1e40b")),
              False: (("t10k-images-idx3-ubyte.gz", "626ed6a7c06dd17c0eec72fa3be1740f146a2863"),
                      ("t10k-labels-idx1-ubyte.gz", "17f9ab60e7257a1620f4ad76bbbaf857c3920701"))}

    def __init__(self, root=_FASHION_ROOT, train=True,
                 transform=None):
        super().__init__(root, train, transform)


class CIFAR10(_DownloadedDataset):
    """CIFAR-10: samples are (32, 32, 3) uint8 NDArrays and int32 labels, read from the
    binary batches (``data_batch_1.bin`` ... ``test_batch.bin``) in ``root``."""

    _namespace = "cifar10"
    _archive = ("cifar-10-binary.tar.gz", "fab780a1e191a7eda0f345501ccd62d20f7ed891")
    _train_files = [("data_batch_1.bin", "aadd24acce27caa71bf4b10992e9e7b2d74c2540"),
                    ("data_batch_2.bin", "c0ba65cce70568cd57b4e03e9ac8d2a5367c1795"),
                    ("data_batch_3.bin", "1dd00a74ab1d17a6e7d73e185b69dbf31242f295"),
                    ("data_batch_4.bin", "aab85764eb3584312d3c7f65fd2fd016e36a258e"),
                    ("data_batch_5.bin", "26e2849e66a845b7f1e4614ae70f4889ae604628")]
    _test_files = [("test_batch.bin", "67eb016db431130d61cd03c7ad570b013799c88c")]
    _label_bytes = 1

    def __init__(self, root=_CIFAR10_ROOT, train=True,
                 transform=None):
        self._train = train
        super().__init__(root, transform)

    def _label_column(self):
        return 0

    def _read_batch(self, filename):
        record = 3072 + self._label_bytes
        with open(filename, "rb") as fin:
            raw = np.frombuffer(fin.read(), dtype=np.uint8)
        if raw.size % record:
            raise ValueError(f"{filename}: size {raw.size} is not a multiple of the {record}-byte "
                             "CIFAR record")
        raw = raw.reshape(-1, record)
        images = raw[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return images, raw[:, self._label_column()].astype(np.int32)

    def _get_data(self):
        files = self._train_files + self._test_files
        present = all(os.path.exists(os.path.join(self._root, name)) for name, _ in files)
        if not present:
            archive = _fetch(self._root, self._namespace, *self._archive)
            with tarfile.open(archive) as tar:
                try:
                    tar.extractall(self._root, filter="data")
                except TypeError:  # Python without extraction filters
                    tar.extractall(self._root)
            # The archive holds the batches in a sub-directory; MXNet reads them from root.
            for dirpath, _, names in os.walk(self._root):
                for name, _ in files:
                    if name in names and dirpath != self._root:
                        os.replace(os.path.join(dirpath, name), os.path.join(self._root, name))
        chosen = self._train_files if self._train else self._test_files
        parts = [self._read_batch(os.path.join(self._root, name)) for name, _ in chosen]
        data = np.concatenate([p[0] for p in parts])
        self._data = nd.array(np.ascontiguousarray(data), dtype=np.uint8)
        self._label = np.concatenate([p[1] for p in parts])


class CIFAR100(CIFAR10):
    """CIFAR-100: coarse (20 classes) or, with ``fine_label``, fine (100 classes) labels."""

    _namespace = "cifar100"
    _archive = ("cifar-100-binary.tar.gz", "a0bb982c76b83111308126cc779a992fa506b90b")
    _train_files = [("train.bin", "e207cd2e05b73b1393c74c7f5e7bea451d63e08e")]
    _test_files = [("test.bin", "8fb6623e830365ff53cf14adec797474f5478006")]
    _label_bytes = 2

    def __init__(self, root=_CIFAR100_ROOT,
                 fine_label=False, train=True, transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _label_column(self):
        return int(bool(self._fine_label))


def _decode_image(buf, flag):
    try:
        from PIL import Image
    except ImportError as err:
        raise ImportError("decoding images needs Pillow (pip install pillow)") from err
    import io
    img = Image.open(io.BytesIO(buf))
    img = img.convert("RGB" if flag else "L")
    array = np.asarray(img, dtype=np.uint8)
    if array.ndim == 2:
        array = array[:, :, None]
    return nd.array(array, dtype=np.uint8)


class ImageRecordDataset(RecordFileDataset):
    """Images packed with ``recordio.pack_img`` in a ``.rec`` file: samples are (HWC uint8
    image, label). ``flag`` 1 decodes colour, 0 grayscale."""

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        from .... import recordio
        header, img = recordio.unpack(super().__getitem__(idx))
        image = _decode_image(img, self._flag)
        if self._transform is not None:
            return self._transform(image, header.label)
        return image, header.label


class ImageFolderDataset(Dataset):
    """Images in ``root/<class name>/<file>``: samples are (image, class index) with classes
    in sorted order (``synsets``)."""

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = [".jpg", ".jpeg", ".png"]
        self.synsets = []
        self.items = []
        for folder in sorted(os.listdir(self._root)):
            path = os.path.join(self._root, folder)
            if not os.path.isdir(path):
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                if os.path.splitext(filename)[1].lower() in self._exts:
                    self.items.append((os.path.join(path, filename), label))

    def __getitem__(self, idx):
        path, label = self.items[idx]
        with open(path, "rb") as f:
            image = _decode_image(f.read(), self._flag)
        if self._transform is not None:
            return self._transform(image, label)
        return image, label

    def __len__(self):
        return len(self.items)
