"""MessagePack encoding and zero-copy decoding for the herd wire protocol (protocol/PROTOCOL.md).

Encoding (``pack``) writes what PROTOCOL.md sections 2-3 call the canonical form: minimal MessagePack
forms (through the ``msgpack`` library for scalars and strings), floats as float 64, and tensors
(``Tensor`` or numpy arrays) as ``{dtype, shape, data}`` maps whose ``data`` is a bin 32 that starts at a
multiple of 8 bytes from the start of the payload.

Decoding (``unpack``) is a small MessagePack reader written for this client because ``msgpack.unpackb``
copies every ``bin`` into a new ``bytes`` object.  Here a ``bin`` comes back as a ``memoryview`` slice of
the received buffer, and (with ``tensors=True``) every ``{dtype, shape, data}`` map becomes a numpy array
made with ``numpy.frombuffer``: a view of the ZeroMQ frame, with no copy and no per-element conversion.
The reader accepts every valid MessagePack encoding (non-minimal forms, float 32, ...).
"""
import struct

import msgpack
import numpy as np

__all__ = ["Tensor", "pack", "unpack", "tensor_to_array", "DTYPES"]

# Protocol dtype names (section 3.1) -> numpy little-endian dtypes.
DTYPES = {
    "bool": np.dtype(np.bool_),
    "uint8": np.dtype("u1"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "uint64": np.dtype("<u8"),
    "float32": np.dtype("<f4"),
    "float64": np.dtype("<f8"),
}


class Tensor:
    """A tensor to encode: a dtype name, a shape and the raw little-endian bytes (C order).

    ``Tensor.from_array(a)`` wraps a numpy array without copying it when it is already C-contiguous and
    little-endian.  Unknown dtype names are sent as they are (the server answers ``BAD_DTYPE``).
    """

    __slots__ = ("dtype", "shape", "data")

    def __init__(self, dtype, shape, data):
        self.dtype = str(dtype)
        self.shape = [int(s) for s in shape]
        self.data = data

    @classmethod
    def from_array(cls, a):
        a = np.asarray(a)
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        a = np.ascontiguousarray(a)
        name = "bool" if a.dtype == np.bool_ else a.dtype.name
        return cls(name, a.shape, memoryview(a).cast("B") if a.size else b"")

    def nbytes(self):
        return memoryview(self.data).nbytes

    def __repr__(self):
        return "Tensor(%s, %s, %d bytes)" % (self.dtype, self.shape, self.nbytes())


# ---- encoding --------------------------------------------------------------------------------------

_packb = msgpack.Packer(use_bin_type=True, autoreset=True).pack


def _head(base_fix, code16, code32, n):
    if n <= 15:
        return bytes([base_fix | n])
    if n <= 0xFFFF:
        return bytes([code16]) + n.to_bytes(2, "big")
    return bytes([code32]) + n.to_bytes(4, "big")


def _tensor(out, parts, t):
    """Appends a tensor map; the data is appended as a separate part (no copy until the final join)."""
    dtype = _packb(t.dtype)
    shape = _head(0x90, 0xDC, 0xDD, len(t.shape)) + b"".join(_packb(s) for s in t.shape)
    nbytes = t.nbytes()
    # Offset of the data with the short key forms: map head 1, "dtype" 6, dtype name, "shape" 6,
    # shape, "data" 5, bin32 head 5.
    l0 = out[0] + len(out[1]) + 1 + 6 + len(dtype) + 6 + len(shape) + 5 + 5
    pad = (-l0) % 8
    head = bytearray(b"\x83")
    head += b"\xd9\x05dtype" if pad & 1 else b"\xa5dtype"
    head += dtype
    head += b"\xda\x00\x05shape" if pad & 2 else b"\xa5shape"
    head += shape
    head += b"\xdb\x00\x00\x00\x04data" if pad & 4 else b"\xa4data"
    head += b"\xc6" + nbytes.to_bytes(4, "big")
    out[1] += head
    if nbytes:
        # flush the running bytearray, then the data as its own part
        parts.append(bytes(out[1]))
        parts.append(t.data)
        out[0] += len(out[1]) + nbytes
        out[1] = bytearray()


def _enc(obj, out, parts):
    if isinstance(obj, Tensor):
        _tensor(out, parts, obj)
    elif isinstance(obj, np.ndarray):
        _tensor(out, parts, Tensor.from_array(obj))
    elif isinstance(obj, dict):
        out[1] += _head(0x80, 0xDE, 0xDF, len(obj))
        for k, v in obj.items():
            _enc(k, out, parts)
            _enc(v, out, parts)
    elif isinstance(obj, (list, tuple)):
        out[1] += _head(0x90, 0xDC, 0xDD, len(obj))
        for v in obj:
            _enc(v, out, parts)
    elif isinstance(obj, (bool, np.bool_)):
        out[1] += b"\xc3" if obj else b"\xc2"
    elif isinstance(obj, np.integer):
        out[1] += _packb(int(obj))
    elif isinstance(obj, np.floating):
        out[1] += _packb(float(obj))
    else:
        out[1] += _packb(obj)   # minimal ints, str, bin, float 64, nil


def pack_parts(obj):
    """Encodes obj and returns the payload as a list of buffers to concatenate (tensor data not copied)."""
    out = [0, bytearray()]      # [bytes already flushed to parts, running tail]
    parts = []
    _enc(obj, out, parts)
    if out[1]:
        parts.append(bytes(out[1]))
    return parts


def pack(obj):
    """Encodes obj (dicts, lists, scalars, str, bytes, Tensor, numpy arrays) as one payload (bytes)."""
    parts = pack_parts(obj)
    return parts[0] if len(parts) == 1 and isinstance(parts[0], bytes) else b"".join(parts)


# ---- decoding --------------------------------------------------------------------------------------

class DecodeError(ValueError):
    pass


_u16 = struct.Struct(">H").unpack_from
_u32 = struct.Struct(">I").unpack_from
_u64 = struct.Struct(">Q").unpack_from
_i8 = struct.Struct(">b").unpack_from
_i16 = struct.Struct(">h").unpack_from
_i32 = struct.Struct(">i").unpack_from
_i64 = struct.Struct(">q").unpack_from
_f32 = struct.Struct(">f").unpack_from
_f64 = struct.Struct(">d").unpack_from

_MAX_DEPTH = 64


class _Reader:
    __slots__ = ("buf", "end", "tensors")

    def __init__(self, buf, tensors):
        self.buf = buf
        self.end = len(buf)
        self.tensors = tensors

    def need(self, pos, n):
        if pos + n > self.end:
            raise DecodeError("truncated MessagePack data at byte %d" % pos)

    def read(self, pos, depth=0):
        """Returns (object, next position)."""
        buf = self.buf
        if pos >= self.end:
            raise DecodeError("truncated MessagePack data at byte %d" % pos)
        b = buf[pos]
        pos += 1
        if b <= 0x7F:
            return b, pos
        if b >= 0xE0:
            return b - 0x100, pos
        if 0xA0 <= b <= 0xBF:
            return self.str(pos, b & 0x1F)
        if 0x80 <= b <= 0x8F:
            return self.map(pos, b & 0x0F, depth)
        if 0x90 <= b <= 0x9F:
            return self.array(pos, b & 0x0F, depth)
        if b == 0xC0:
            return None, pos
        if b == 0xC2:
            return False, pos
        if b == 0xC3:
            return True, pos
        if b == 0xCC:
            self.need(pos, 1)
            return buf[pos], pos + 1
        if b == 0xCD:
            self.need(pos, 2)
            return _u16(buf, pos)[0], pos + 2
        if b == 0xCE:
            self.need(pos, 4)
            return _u32(buf, pos)[0], pos + 4
        if b == 0xCF:
            self.need(pos, 8)
            return _u64(buf, pos)[0], pos + 8
        if b == 0xD0:
            self.need(pos, 1)
            return _i8(buf, pos)[0], pos + 1
        if b == 0xD1:
            self.need(pos, 2)
            return _i16(buf, pos)[0], pos + 2
        if b == 0xD2:
            self.need(pos, 4)
            return _i32(buf, pos)[0], pos + 4
        if b == 0xD3:
            self.need(pos, 8)
            return _i64(buf, pos)[0], pos + 8
        if b == 0xCA:
            self.need(pos, 4)
            return _f32(buf, pos)[0], pos + 4
        if b == 0xCB:
            self.need(pos, 8)
            return _f64(buf, pos)[0], pos + 8
        if b == 0xD9:
            self.need(pos, 1)
            return self.str(pos + 1, buf[pos])
        if b == 0xDA:
            self.need(pos, 2)
            return self.str(pos + 2, _u16(buf, pos)[0])
        if b == 0xDB:
            self.need(pos, 4)
            return self.str(pos + 4, _u32(buf, pos)[0])
        if b == 0xC4:
            self.need(pos, 1)
            return self.bin(pos + 1, buf[pos])
        if b == 0xC5:
            self.need(pos, 2)
            return self.bin(pos + 2, _u16(buf, pos)[0])
        if b == 0xC6:
            self.need(pos, 4)
            return self.bin(pos + 4, _u32(buf, pos)[0])
        if b == 0xDC:
            self.need(pos, 2)
            return self.array(pos + 2, _u16(buf, pos)[0], depth)
        if b == 0xDD:
            self.need(pos, 4)
            return self.array(pos + 4, _u32(buf, pos)[0], depth)
        if b == 0xDE:
            self.need(pos, 2)
            return self.map(pos + 2, _u16(buf, pos)[0], depth)
        if b == 0xDF:
            self.need(pos, 4)
            return self.map(pos + 4, _u32(buf, pos)[0], depth)
        ext = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
        if b in ext:
            self.need(pos, 1 + ext[b])
            return msgpack.ExtType(_i8(buf, pos)[0], bytes(buf[pos + 1:pos + 1 + ext[b]])), pos + 1 + ext[b]
        if b in (0xC7, 0xC8, 0xC9):
            w = {0xC7: 1, 0xC8: 2, 0xC9: 4}[b]
            self.need(pos, w + 1)
            n = int.from_bytes(buf[pos:pos + w], "big")
            pos += w
            self.need(pos, 1 + n)
            return msgpack.ExtType(_i8(buf, pos)[0], bytes(buf[pos + 1:pos + 1 + n])), pos + 1 + n
        raise DecodeError("invalid MessagePack byte 0x%02x at %d" % (b, pos - 1))

    def str(self, pos, n):
        self.need(pos, n)
        try:
            return str(self.buf[pos:pos + n], "utf-8"), pos + n
        except UnicodeDecodeError as e:
            raise DecodeError("invalid UTF-8 string at byte %d: %s" % (pos, e)) from None

    def bin(self, pos, n):
        self.need(pos, n)
        return self.buf[pos:pos + n], pos + n

    def array(self, pos, n, depth):
        if depth >= _MAX_DEPTH:
            raise DecodeError("MessagePack nesting deeper than %d" % _MAX_DEPTH)
        out = []
        for _ in range(n):
            v, pos = self.read(pos, depth + 1)
            out.append(v)
        return out, pos

    def map(self, pos, n, depth):
        if depth >= _MAX_DEPTH:
            raise DecodeError("MessagePack nesting deeper than %d" % _MAX_DEPTH)
        out = {}
        read = self.read
        for _ in range(n):
            k, pos = read(pos, depth + 1)
            v, pos = read(pos, depth + 1)
            if isinstance(k, list):
                k = tuple(k)
            out[k] = v
        if self.tensors and n == 3 and "data" in out and "dtype" in out and "shape" in out \
                and isinstance(out["data"], memoryview):
            return tensor_to_array(out), pos
        return out, pos


def tensor_to_array(t):
    """{dtype, shape, data} -> numpy array viewing data (no copy).  Raises DecodeError on a mismatch."""
    dt = DTYPES.get(t["dtype"])
    if dt is None:
        raise DecodeError("unknown tensor dtype %r" % (t["dtype"],))
    shape = t["shape"]
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise DecodeError("bad tensor shape %r" % (shape,))
    count = 1
    for s in shape:
        count *= s
    data = t["data"]
    if len(data) != count * dt.itemsize:
        raise DecodeError("tensor data has %d bytes, shape %s of %s needs %d"
                          % (len(data), shape, t["dtype"], count * dt.itemsize))
    return np.frombuffer(data, dtype=dt).reshape(shape)


def unpack(buf, tensors=True):
    """Decodes one MessagePack object filling buf exactly (trailing bytes are an error).

    bin -> memoryview slices of buf; with tensors=True, tensor maps -> numpy arrays viewing buf.
    buf: bytes, bytearray, memoryview or anything with the buffer protocol (a zmq.Frame's .buffer).
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    r = _Reader(mv, tensors)
    obj, pos = r.read(0)
    if pos != r.end:
        raise DecodeError("%d trailing bytes after the MessagePack object" % (r.end - pos))
    return obj
