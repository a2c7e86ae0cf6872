"""A WriteBatch's operations as bytes, for shipping to a replica. Pure functions, no I/O.

    batch = op* ;  op = kind:u8 · family:u8 · key_len:u32 · key · value_len:u32 · value

kind: 0 put (value), 1 delete, 2 delete_range (value = upper bound); family: index in FAMILIES.
"""

from __future__ import annotations

import struct

from rockmq.store import framing

PUT, DELETE, DELETE_RANGE = 0, 1, 2
Op = tuple[int, str, bytes, bytes]
_HEAD = struct.Struct(">BBI")
_LEN = framing.LEN


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
    for (kind, family, _), key, value in framing.entries(data, _HEAD):
        if kind > DELETE_RANGE or family >= len(families):
            raise ValueError("corrupt batch: unknown operation or family")
        ops.append((kind, families[family], key, value))
    return ops
