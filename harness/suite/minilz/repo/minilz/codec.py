"""Framed compression and decompression.

A minilz frame is a 9-byte header followed by the native token stream::

    offset  size  field
    0       4     magic, b"MLZ1"
    4       4     uncompressed length, little-endian u32
    8       1     window_bits used by the encoder
"""
import ctypes
import struct

from . import _lib

MAGIC = b"MLZ1"
HEADER = struct.Struct("<4sIB")
MIN_WINDOW_BITS = 8
MAX_WINDOW_BITS = 16
DEFAULT_WINDOW_BITS = 12


class MinilzError(ValueError):
    """Raised for malformed frames or invalid arguments."""


def _as_bytes(data):
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, str):
        raise TypeError("minilz works on bytes; encode the string first")
    # numpy arrays and other buffer providers
    return memoryview(data).tobytes()


def compress(data, window_bits=DEFAULT_WINDOW_BITS):
    """Compress a bytes-like object and return a minilz frame.

    ``window_bits`` selects the sliding window (2**window_bits bytes, 8..16).
    Larger windows find more matches at the cost of encoder speed.
    """
    if not MIN_WINDOW_BITS <= window_bits <= MAX_WINDOW_BITS:
        raise MinilzError(
            f"window_bits must be in [{MIN_WINDOW_BITS}, {MAX_WINDOW_BITS}], got {window_bits}"
        )
    raw = _as_bytes(data)
    if len(raw) > 0xFFFFFFFF:
        raise MinilzError("input larger than 4 GiB is not supported")
    cap = _lib.lib.mlz_bound(len(raw))
    buf = (ctypes.c_uint8 * max(cap, 1))()
    written = _lib.lib.mlz_compress(raw, len(raw), buf, 1 << window_bits)
    return HEADER.pack(MAGIC, len(raw), window_bits) + bytes(buf[:written])


def read_header(frame):
    """Return ``(original_length, window_bits)`` from a frame header."""
    frame = _as_bytes(frame)
    if len(frame) < HEADER.size:
        raise MinilzError("frame too short")
    magic, length, window_bits = HEADER.unpack_from(frame)
    if magic != MAGIC:
        raise MinilzError(f"bad magic {magic!r}")
    return length, window_bits


def decompress(frame):
    """Decode a frame produced by :func:`compress` and return the original bytes."""
    frame = _as_bytes(frame)
    length, _ = read_header(frame)
    body = frame[HEADER.size:]
    out = (ctypes.c_uint8 * max(length, 1))()
    got = _lib.lib.mlz_decompress(body, len(body), out, length)
    if got == _lib.SIZE_ERROR:
        raise MinilzError("corrupt minilz stream")
    return bytes(out[:length])
