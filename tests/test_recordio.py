"""mx.recordio against files written by MXNet 1.9.1 (tests/fixtures/recordio, from
gen_mxnet_recordio.py): byte-identical writing, reading, the index, pack/unpack, and corrupt
files."""

import json
import os
import pickle
import struct

import numpy as np
import pytest
from ferrograd import recordio

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "recordio")
with open(os.path.join(FIX, "payloads.json")) as _f:
    PAYLOADS = [bytes.fromhex(h) for h in json.load(_f)]


def _read_all(reader):
    out = []
    while (rec := reader.read()) is not None:
        out.append(rec)
    return out


def test_writes_the_bytes_mxnet_writes(tmp_path):
    path = tmp_path / "out.rec"
    writer = recordio.MXRecordIO(str(path), "w")
    for p in PAYLOADS:
        writer.write(p)
    writer.close()
    with open(os.path.join(FIX, "plain.rec"), "rb") as f:
        assert path.read_bytes() == f.read()


def test_reads_mxnet_files():
    reader = recordio.MXRecordIO(os.path.join(FIX, "plain.rec"), "r")
    assert _read_all(reader) == PAYLOADS
    reader.reset()
    assert reader.read() == PAYLOADS[0]
    reader.close()


def test_indexed_read_and_write(tmp_path):
    reader = recordio.MXIndexedRecordIO(os.path.join(FIX, "indexed.idx"),
                                        os.path.join(FIX, "indexed.rec"), "r")
    assert reader.keys == [10 * (i + 1) for i in range(len(PAYLOADS))]
    for i in reversed(range(len(PAYLOADS))):
        assert reader.read_idx(10 * (i + 1)) == PAYLOADS[i]
    with pytest.raises(KeyError, match="11"):
        reader.read_idx(11)
    idx, rec = tmp_path / "x.idx", tmp_path / "x.rec"
    writer = recordio.MXIndexedRecordIO(str(idx), str(rec), "w")
    for i, p in enumerate(PAYLOADS):
        writer.write_idx(10 * (i + 1), p)
    writer.close()
    with open(os.path.join(FIX, "indexed.idx")) as f:
        assert idx.read_text() == f.read()
    # A pickled reader reopens its file (DataLoader workers).
    clone = pickle.loads(pickle.dumps(reader))
    assert clone.read_idx(30) == PAYLOADS[2]


def test_split_record_layout(tmp_path):
    """A payload with the magic number at an aligned offset is stored as two parts."""
    path = tmp_path / "s.rec"
    magic = struct.pack("<I", 0xCED7230A)
    writer = recordio.MXRecordIO(str(path), "w")
    writer.write(b"abcd" + magic + b"efg")
    writer.close()
    raw = path.read_bytes()
    first = struct.unpack("<II", raw[:8])
    assert first == (0xCED7230A, (1 << 29) | 4)
    second = struct.unpack("<II", raw[12:20])
    assert second == (0xCED7230A, (3 << 29) | 3)
    assert len(raw) % 4 == 0


def test_pack_unpack_match_mxnet():
    with open(os.path.join(FIX, "packed.json")) as f:
        cases = json.load(f)
    for case in cases:
        header = recordio.IRHeader(*case["header"])
        data = bytes.fromhex(case["data"])
        packed = recordio.pack(header, data)
        assert packed.hex() == case["packed"]
        got_header, got_data = recordio.unpack(packed)
        assert got_data == data
        np.testing.assert_array_equal(np.asarray(got_header.label, dtype=np.float32),
                                      np.asarray(case["header"][1], dtype=np.float32))


def test_corrupt_files_raise(tmp_path):
    bad = tmp_path / "bad.rec"
    bad.write_bytes(b"\x00" * 12)
    with pytest.raises(OSError, match="bad magic"):
        recordio.MXRecordIO(str(bad), "r").read()
    with open(os.path.join(FIX, "plain.rec"), "rb") as f:
        raw = f.read()
    truncated = tmp_path / "trunc.rec"
    truncated.write_bytes(raw[:10])
    with pytest.raises(OSError, match="declares"):
        recordio.MXRecordIO(str(truncated), "r").read()
    with pytest.raises(ValueError, match="header"):
        recordio.unpack(b"short")
    with pytest.raises(ValueError, match="flag"):
        recordio.MXRecordIO(str(bad), "x")


def test_pack_img_round_trip():
    pytest.importorskip("PIL")
    img = (np.arange(4 * 5 * 3) % 256).astype(np.uint8).reshape(4, 5, 3)
    packed = recordio.pack_img((0, 2.0, 1, 0), img, img_fmt=".png")
    header, out = recordio.unpack_img(packed)
    assert header.label == 2.0
    np.testing.assert_array_equal(out, img)
