"""A WriteBatch's operations as bytes, for shipping to a replica. Pure functions, no I/O.

    batch = op* ;  op = kind:u8 · family:u8 · key_len:u32 · key · value_len:u32 · value

kind: 0 put (value), 1 delete, 2 delete_range (value = upper bound); family: the family's stable
id (`Family.id`, store/schema.py), the same on every broker whatever its release.
"""

from __future__ import annotations

import struct

from rockmq.store import framing
from rockmq.store.schema import Family, FamilyName

PUT, DELETE, DELETE_RANGE = 0, 1, 2
Op = tuple[int, FamilyName, bytes, bytes]
_HEAD = struct.Struct(">BBI")
_LEN = framing.LEN
_ID = {str(f): f.id for f in Family}  # by name: Batch records family names as given
_NAME = {f.id: f for f in Family}


def encode(ops: list[Op]) -> bytes:
    out = bytearray()
    for kind, family, key, value in ops:
        out += _HEAD.pack(kind, _ID[family], len(key))
        out += key
        out += _LEN.pack(len(value))
        out += value
    return bytes(out)


def encode_with_keys(ops: list[Op]) -> tuple[bytes, bytes]:
    """`encode(ops)`, and the same without values (a range delete keeps its upper bound): a batch
    as shipped and the keys it touched (store/footprints.py), in one pass."""
    out = bytearray()
    touched = bytearray()
    empty = _LEN.pack(0)
    for kind, family, key, value in ops:
        head = _HEAD.pack(kind, _ID[family], len(key)) + key
        length = _LEN.pack(len(value))
        out += head
        out += length
        out += value
        touched += head
        if kind == DELETE_RANGE:
            touched += length
            touched += value
        else:
            touched += empty
    return bytes(out), bytes(touched)


def touched(ops: list[Op]) -> bytes:
    """What `encode_with_keys` gives as the keys `ops` touched (a replica's footprint of a batch it applies)."""
    return encode([(kind, family, key, value if kind == DELETE_RANGE else b"") for kind, family, key, value in ops])


def decode(data: bytes) -> list[Op]:
    """Raises ValueError on anything `encode` did not produce."""
    ops: list[Op] = []
    for (kind, family_id, _), key, value in framing.entries(data, _HEAD):
        family = _NAME.get(family_id)
        if kind > DELETE_RANGE or family is None:
            raise ValueError(f"corrupt batch: unknown operation {kind} or family id {family_id}")
        ops.append((kind, family, key, value))
    return ops
