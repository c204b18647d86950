"""``mx.recordio``: MXNet's RecordIO files (``.rec``, with an optional ``.idx`` text index).

A record on disk is a 4-byte magic number, a 4-byte word holding a 3-bit continuation flag and a
29-bit length, then the payload padded to 4 bytes. A payload that contains the magic number at a
4-byte-aligned offset is split there (the magic dropped) into parts flagged 1 (first), 2 (middle)
and 3 (last), so that a reader can always resynchronise on the magic; flag 0 is a whole record.
Bytes are little-endian, as MXNet writes them on every platform it supports.
"""

import numbers
import os
import struct
from collections import namedtuple

import numpy as np

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img",
           "unpack_img"]

_MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_LEN_MASK = (1 << 29) - 1


def _padding(n):
    return (-n) % 4


def _encode(buf):
    """The on-disk bytes of one record."""
    data = bytes(buf)
    if len(data) > _LEN_MASK:
        raise ValueError(f"MXRecordIO.write: a record holds at most {_LEN_MASK} bytes, got "
                         f"{len(data)}")
    out = []
    start = 0
    aligned_end = len(data) - len(data) % 4
    pos = data.find(_MAGIC_BYTES)
    while 0 <= pos < aligned_end:
        if pos % 4 == 0:
            flag = 1 if start == 0 else 2
            out.append(struct.pack("<II", _MAGIC, (flag << 29) | (pos - start)))
            out.append(data[start:pos])
            start = pos + 4
            pos = data.find(_MAGIC_BYTES, start)
        else:
            pos = data.find(_MAGIC_BYTES, pos + 1)
    flag = 3 if start else 0
    out.append(struct.pack("<II", _MAGIC, (flag << 29) | (len(data) - start)))
    out.append(data[start:])
    out.append(b"\0" * _padding(len(data)))
    return b"".join(out)


class MXRecordIO:
    """Sequential reader (``flag='r'``) or writer (``flag='w'``) of a RecordIO file."""

    def __init__(self, uri, flag):
        self.uri = str(uri)
        self.flag = flag
        self.handle = None
        self.pid = None
        self.is_open = False
        self.open()

    def open(self):
        """Opens the file (truncating it for writing)."""
        if self.flag == "w":
            self.handle = open(self.uri, "wb")  # noqa: SIM115 - closed by close()
            self.writable = True
        elif self.flag == "r":
            self.handle = open(self.uri, "rb")  # noqa: SIM115 - closed by close()
            self.writable = False
        else:
            raise ValueError(f"MXRecordIO: invalid flag {self.flag!r}; use 'r' or 'w'")
        self.pid = os.getpid()
        self.is_open = True

    def __del__(self):
        self.close()

    def __getstate__(self):
        # A pickled reader reopens the file in the new process.
        state = self.__dict__.copy()
        state["is_open"] = False
        state["handle"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.flag == "r":
            self.open()

    def _check_pid(self, allow_reset=False):
        if self.pid != os.getpid():
            if not allow_reset:
                raise RuntimeError("MXRecordIO: forbidden operation in a forked process "
                                   f"(the file {self.uri} was opened by process {self.pid})")
            self.reset()

    def close(self):
        """Closes the file (a no-op when closed)."""
        if not getattr(self, "is_open", False):
            return
        self.handle.close()
        self.handle = None
        self.is_open = False
        self.pid = None

    def reset(self):
        """Closes and reopens: a reader starts again from the first record."""
        self.close()
        self.open()

    def write(self, buf):
        """Appends one record holding the bytes ``buf``."""
        if not self.writable:
            raise RuntimeError(f"MXRecordIO.write: {self.uri} is open for reading")
        self._check_pid()
        self.handle.write(_encode(buf))

    def tell(self):
        """The byte offset where the next record starts."""
        return self.handle.tell()

    def _read_part(self):
        start = self.handle.tell()
        head = self.handle.read(8)
        if not head:
            return None, None
        if len(head) < 8:
            raise OSError(f"MXRecordIO: {self.uri} is corrupt: truncated record header at byte "
                          f"{start}")
        magic, lrec = struct.unpack("<II", head)
        if magic != _MAGIC:
            raise OSError(f"MXRecordIO: {self.uri} is corrupt: bad magic number {magic:#010x} "
                          f"at byte {start} (expected {_MAGIC:#010x})")
        flag, length = lrec >> 29, lrec & _LEN_MASK
        payload = self.handle.read(length)
        if len(payload) < length:
            raise OSError(f"MXRecordIO: {self.uri} is corrupt: record at byte {start} declares "
                          f"{length} bytes but the file ends after {len(payload)}")
        self.handle.read(_padding(length))
        return flag, payload

    def read(self):
        """The next record's bytes, or None at the end of the file."""
        if self.writable:
            raise RuntimeError(f"MXRecordIO.read: {self.uri} is open for writing")
        self._check_pid(allow_reset=True)
        flag, payload = self._read_part()
        if flag is None or flag == 0:
            return payload
        if flag != 1:
            raise OSError(f"MXRecordIO: {self.uri} is corrupt: record continuation (flag {flag}) "
                          "without a first part")
        parts = [payload]
        while flag != 3:
            flag, payload = self._read_part()
            if flag not in (2, 3):
                raise OSError(f"MXRecordIO: {self.uri} is corrupt: split record is not "
                              "continued")
            parts.append(payload)
        return _MAGIC_BYTES.join(parts)


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an index file of ``key<TAB>offset`` lines, for random access with
    ``read_idx(key)``; keys are converted with ``key_type``."""

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = str(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx = {}
        self.keys = []
        self.fidx = open(self.idx_path, self.flag)  # noqa: SIM115 - closed by close()
        if not self.writable:
            for lineno, line in enumerate(iter(self.fidx.readline, ""), 1):
                fields = line.strip().split("\t")
                if not fields[0]:
                    continue
                if len(fields) < 2:
                    raise OSError(f"MXIndexedRecordIO: {self.idx_path} line {lineno} is not "
                                  f"'key<TAB>offset': {line.strip()!r}")
                key = self.key_type(fields[0])
                self.idx[key] = int(fields[1])
                self.keys.append(key)

    def close(self):
        if not getattr(self, "is_open", False):
            return
        super().close()
        self.fidx.close()
        self.fidx = None

    def __getstate__(self):
        state = super().__getstate__()
        state["fidx"] = None
        return state

    def seek(self, idx):
        """Moves the reader to the record with key ``idx``."""
        if self.writable:
            raise RuntimeError(f"MXIndexedRecordIO.seek: {self.uri} is open for writing")
        self._check_pid(allow_reset=True)
        if idx not in self.idx:
            raise KeyError(f"MXIndexedRecordIO: no record with key {idx!r} in {self.idx_path}")
        self.handle.seek(self.idx[idx])

    def tell(self):
        return super().tell()

    def read_idx(self, idx):
        """The record with key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Appends a record and indexes it under key ``idx``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """Image record header: ``flag`` (0, or the number of float labels stored
before the payload), ``label`` (a float, or an array of ``flag`` floats), ``id``, ``id2``."""
_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """A record's bytes: ``header`` (an ``IRHeader`` or 4-tuple) then the bytes ``s``. An array
    label is stored as float32 values after the header (``flag`` = their count)."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s):
    """``(IRHeader, payload bytes)`` of a record made by ``pack``."""
    if len(s) < _IR_SIZE:
        raise ValueError(f"recordio.unpack: a record needs at least {_IR_SIZE} header bytes, got "
                         f"{len(s)}")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise ValueError(f"recordio.unpack: header announces {header.flag} float labels but "
                             f"only {len(s)} bytes follow")
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def _image_backend():
    try:
        import cv2
        return "cv2", cv2
    except ImportError:
        pass
    try:
        from PIL import Image
        return "pil", Image
    except ImportError:
        raise ImportError("recordio.pack_img/unpack_img need OpenCV (cv2) or Pillow") from None


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """``pack`` of ``img`` (a NumPy HWC array in OpenCV's BGR order, or HW) encoded as JPEG or
    PNG."""
    kind, lib = _image_backend()
    fmt = img_fmt.lower()
    if fmt not in (".jpg", ".jpeg", ".png"):
        raise ValueError(f"recordio.pack_img: img_fmt must be '.jpg', '.jpeg' or '.png', got "
                         f"{img_fmt!r}")
    img = np.asarray(img)
    if kind == "cv2":
        if fmt in (".jpg", ".jpeg"):
            params = [lib.IMWRITE_JPEG_QUALITY, quality]
        else:
            params = [lib.IMWRITE_PNG_COMPRESSION, quality]
        ok, buf = lib.imencode(fmt, img, params)
        if not ok:
            raise ValueError("recordio.pack_img: failed to encode the image")
        return pack(header, buf.tobytes())
    import io
    rgb = img[:, :, ::-1] if img.ndim == 3 else img
    out = io.BytesIO()
    image = lib.fromarray(np.ascontiguousarray(rgb.astype(np.uint8)))
    if fmt == ".png":
        image.save(out, format="PNG", compress_level=min(int(quality), 9))
    else:
        image.save(out, format="JPEG", quality=int(quality))
    return pack(header, out.getvalue())


def unpack_img(s, iscolor=-1):
    """``(IRHeader, image)`` with the image decoded to a NumPy array (BGR for colour, as
    OpenCV); ``iscolor`` 1 colour, 0 grayscale, -1 as stored."""
    header, s = unpack(s)
    kind, lib = _image_backend()
    if kind == "cv2":
        img = lib.imdecode(np.frombuffer(s, dtype=np.uint8), iscolor)
        return header, img
    import io
    image = lib.open(io.BytesIO(s))
    if iscolor == 1:
        image = image.convert("RGB")
    elif iscolor == 0:
        image = image.convert("L")
    img = np.asarray(image)
    if img.ndim == 3:
        img = img[:, :, ::-1][:, :, :3] if img.shape[2] >= 3 else img
    return header, np.ascontiguousarray(img)
