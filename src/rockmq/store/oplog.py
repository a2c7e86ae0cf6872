"""A WriteBatch's operations as bytes, for shipping to a replica. Pure functions, no I/O.

    batch = op* ;  op = kind:u8 · family:u8 · key_len:u32 · key · value_len:u32 · value

kind: 0 put (value), 1 delete, 2 delete_range (value = upper bound); family: index in FAMILIES.
"""

from __future__ import annotations

import struct

PUT, DELETE, DELETE_RANGE = 0, 1, 2
Op = tuple[int, str, bytes, bytes]
_HEAD = struct.Struct(">BBI")
_LEN = struct.Struct(">I")


def encode(ops: list[Op], families: tuple[str, ...]) -> bytes:
    index = {f: i for i, f in enumerate(families)}
    out = bytearray()
    for kind, family, key, value in ops:
        out += _HEAD.pack(kind, index[family], len(key))
        out += key
        out += _LEN.pack(len(value))
        out += value
    return bytes(out)


def decode(data: bytes, families: tuple[str, ...]) -> list[Op]:
    """Raises ValueError on anything `encode` did not produce."""
    ops: list[Op] = []
    pos, end = 0, len(data)
    try:
        while pos < end:
            kind, family, key_len = _HEAD.unpack_from(data, pos)
            pos += _HEAD.size
            key = data[pos:pos + key_len]
            pos += key_len
            (value_len,) = _LEN.unpack_from(data, pos)
            pos += _LEN.size
            value = data[pos:pos + value_len]
            pos += value_len
            if kind > DELETE_RANGE or len(key) != key_len or len(value) != value_len:
                raise ValueError("truncated or unknown operation")
            ops.append((kind, families[family], key, value))
    except (struct.error, IndexError) as e:
        raise ValueError(f"corrupt batch: {e}") from None
    return ops
