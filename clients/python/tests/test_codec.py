"""The codec against the golden vectors of protocol/testdata (PROTOCOL.md section 11), and round trips."""
import json
import math
import os
import struct

import msgpack
import numpy as np
import pytest

from conftest import TESTDATA
from herd import _codec
from herd._codec import Tensor, pack, unpack

with open(os.path.join(TESTDATA, "index.json")) as f:
    INDEX = json.load(f)
GOOD = [v for v in INDEX if v["kind"] in ("request", "reply")]
CANONICAL = [v for v in GOOD if v["canonical"]]
BAD = [v for v in INDEX if v["kind"] == "bad_request"]


def load(name):
    with open(os.path.join(TESTDATA, name + ".msgpack"), "rb") as f:
        b = f.read()
    with open(os.path.join(TESTDATA, name + ".json")) as f:
        j = json.load(f)
    return b, j


def readable(o):
    """Decoded (tensors=False) content -> the JSON form of the golden files."""
    if isinstance(o, memoryview):
        return {"$bin": bytes(o).hex()}
    if isinstance(o, dict):
        return {k: readable(v) for k, v in o.items()}
    if isinstance(o, list):
        return [readable(v) for v in o]
    return o


def from_json(o):
    """JSON content -> objects to encode (tensor maps -> Tensor, $bin -> bytes)."""
    if isinstance(o, dict):
        if set(o) == {"$bin"}:
            return bytes.fromhex(o["$bin"])
        if set(o) == {"dtype", "shape", "data"} and isinstance(o["data"], dict):
            return Tensor(o["dtype"], o["shape"], bytes.fromhex(o["data"]["$bin"]))
        return {k: from_json(v) for k, v in o.items()}
    if isinstance(o, list):
        return [from_json(v) for v in o]
    return o


def same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def test_index_lists_vectors():
    assert len(GOOD) >= 20 and len(BAD) >= 10
    for v in INDEX:
        assert os.path.exists(os.path.join(TESTDATA, v["name"] + ".msgpack"))


@pytest.mark.parametrize("vec", GOOD, ids=[v["name"] for v in GOOD])
def test_golden_decode(vec):
    b, j = load(vec["name"])
    got = readable(unpack(b, tensors=False))
    assert same(got, j)          # key order, ints vs floats, bins: all as in the JSON
    # the same through the stock msgpack library (the form any client sees)
    assert same(readable_stock(msgpack.unpackb(b, raw=False)), j)


def readable_stock(o):
    if isinstance(o, bytes):
        return {"$bin": o.hex()}
    if isinstance(o, dict):
        return {k: readable_stock(v) for k, v in o.items()}
    if isinstance(o, list):
        return [readable_stock(v) for v in o]
    return o


@pytest.mark.parametrize("vec", CANONICAL, ids=[v["name"] for v in CANONICAL])
def test_golden_encode(vec):
    b, j = load(vec["name"])
    assert pack(from_json(j)) == b


@pytest.mark.parametrize("vec", [v for v in GOOD if v["kind"] == "reply"],
                         ids=[v["name"] for v in GOOD if v["kind"] == "reply"])
def test_golden_reply_tensors(vec):
    """Replies decode to numpy arrays viewing the message, 8-aligned within the payload."""
    b, j = load(vec["name"])
    buf = np.frombuffer(bytearray(b) + b"\0" * 8, np.uint8)[:len(b)]   # a writable copy
    rep = unpack(memoryview(buf))

    def walk(d, jd):
        for k, v in d.items():
            if isinstance(v, np.ndarray):
                t = jd[k]
                assert v.dtype == _codec.DTYPES[t["dtype"]]
                assert list(v.shape) == t["shape"]
                assert v.tobytes() == bytes.fromhex(t["data"]["$bin"])
                assert np.shares_memory(v, buf)
                off = v.ctypes.data - buf.ctypes.data
                assert off % 8 == 0, "tensor data at offset %d" % off
            elif isinstance(v, dict):
                walk(v, jd[k])
    walk(rep, j)


def test_golden_step_reply_content():
    b, _ = load("rep_step_same")
    rep = unpack(b)
    assert rep["ok"] is True and rep["id"] == 10
    np.testing.assert_array_equal(rep["truncated"], [True, False])
    np.testing.assert_array_equal(rep["info"]["final_obs"][0], [3.0, 3.5, 4.0])
    np.testing.assert_array_equal(rep["info"]["_final_obs"], [True, False])
    assert rep["info"]["episode_length"].dtype == np.int32
    b, _ = load("rep_error")
    rep = unpack(b)
    assert rep == {"v": 1, "id": 11, "ok": False, "error": {"code": "UNKNOWN_SESSION", "message": "unknown session 7"}}


@pytest.mark.parametrize("vec", BAD, ids=[v["name"] for v in BAD])
def test_golden_bad_vectors_are_json_described(vec):
    b, j = load(vec["name"])
    assert set(j) == {"expect_error", "expect_id"}
    if vec["name"] in ("bad_truncated", "bad_trailing"):
        with pytest.raises(_codec.DecodeError):
            unpack(b)


def test_nonminimal_forms_accepted():
    # float 32, str8 / str16 / str32 keys, bin8 / bin16, int64 for a small value, map16, array32
    b = (b"\xde\x00\x04" + b"\xd9\x01a" + b"\xca" + struct.pack(">f", 1.5)
         + b"\xda\x00\x01b" + b"\xd3" + struct.pack(">q", 7)
         + b"\xdb\x00\x00\x00\x01c" + b"\xc4\x02\x01\x02"
         + b"\xa1d" + b"\xdd\x00\x00\x00\x02\xc5\x00\x01\xff\xc0")
    got = unpack(b)
    assert got["a"] == 1.5 and got["b"] == 7 and bytes(got["c"]) == b"\x01\x02"
    assert bytes(got["d"][0]) == b"\xff" and got["d"][1] is None


def to_bytes(o):
    if isinstance(o, memoryview):
        return bytes(o)
    if isinstance(o, dict):
        return {k: to_bytes(v) for k, v in o.items()}
    if isinstance(o, list):
        return [to_bytes(v) for v in o]
    return o


def test_roundtrip_against_msgpack():
    rng = np.random.default_rng(0)
    objs = [0, 1, -1, 127, 128, -32, -33, 255, 256, 65535, 65536, 2**32, 2**63, 2**64 - 1, -2**63, 1.25, -0.0,
            float("inf"), "", "x" * 31, "y" * 32, "z" * 70000, "ünïcødé", b"", b"\x00" * 300, True, False, None,
            list(range(20)), {str(i): i for i in range(20)}, {"a": {"b": [1, {"c": b"x"}]}}]
    for o in objs:
        b = pack(o)
        assert b == msgpack.packb(o, use_bin_type=True)
        back = unpack(b, tensors=False)
        assert same(to_bytes(back), msgpack.unpackb(b, raw=False))
    for _ in range(20):
        a = rng.standard_normal((rng.integers(0, 5), rng.integers(1, 7))).astype(np.float32)
        msg = {"v": 1, "id": 3, "op": "step", "session": 9, "actions": a}
        b = pack(msg)
        got = unpack(b)
        np.testing.assert_array_equal(got["actions"], a)
        raw = msgpack.unpackb(b, raw=False)
        assert raw["actions"]["dtype"] == "float32" and raw["actions"]["shape"] == list(a.shape)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "uint64", "float32", "float64"])
def test_tensor_dtypes(dtype):
    a = (np.arange(12).reshape(3, 4) % 2).astype(dtype)
    for prefix in range(8):     # every alignment of the surrounding message
        msg = {"k" * (prefix + 1): 1, "t": a}
        b = pack(msg)
        t = msgpack.unpackb(b, raw=False)["t"]
        off = b.index(t["data"]) if len(t["data"]) else 0
        assert off % 8 == 0
        np.testing.assert_array_equal(unpack(b)["t"], a)


def test_tensor_big_endian_and_noncontiguous_inputs():
    a = np.arange(6, dtype=">f4").reshape(2, 3)
    np.testing.assert_array_equal(unpack(pack({"t": a}))["t"], a)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    np.testing.assert_array_equal(unpack(pack({"t": b}))["t"], b)


def test_decode_errors():
    with pytest.raises(_codec.DecodeError):
        unpack(b"\x82\xa1a")             # truncated
    with pytest.raises(_codec.DecodeError):
        unpack(b"\xc1")                  # never-used byte
    with pytest.raises(_codec.DecodeError):
        unpack(b"\x91" * 100 + b"\xc0")  # too deep
    with pytest.raises(_codec.DecodeError):
        unpack(pack({"dtype": "float32", "shape": [2], "data": b"\0\0\0\0"}))   # size mismatch
