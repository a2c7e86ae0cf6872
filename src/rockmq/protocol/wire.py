"""Protobuf wire-format primitives for the bytes rockmq encodes by hand: varints and
length-delimited fields. Pure, no I/O. Field keys come from `field_keys`."""

from __future__ import annotations

import cython

_ONE_BYTE = [bytes([i]) for i in range(128)]


@cython.locals(n=cython.ulonglong)  # compiled: C arithmetic; a caller masks what could be negative to 64 bits
def varint(n: int) -> bytes:
    if n < 0x80:
        return _ONE_BYTE[n]
    if n < 0x4000:
        return bytes((n & 0x7F | 0x80, n >> 7))
    if n < 0x200000:  # queue offsets, mostly
        return bytes((n & 0x7F | 0x80, n >> 7 & 0x7F | 0x80, n >> 14))
    out = []
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_varint(data: bytes | memoryview, at: int) -> tuple[int, int]:
    """The varint at `data[at:]` -> (value, position after it)."""
    value = shift = 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, at
        shift += 7


def delimited(key: bytes, value: bytes | memoryview) -> bytes:
    """A length-delimited field (a string, bytes, or an already serialized message) under `key`."""
    return b"".join((key, varint(len(value)), value))
