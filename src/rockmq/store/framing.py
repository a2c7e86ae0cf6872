"""Length-framed entries back to back in one value: how the replication op log and staged Spark
chunks pack many items into one RocksDB value. Pure functions, no I/O.

    entry = head · a · b_len:u32 · b        (the head's last field is len(a))
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

LEN = struct.Struct(">I")


def entries(data: bytes, head: struct.Struct, pos: int = 0) -> Iterator[tuple[tuple[int, ...], bytes, bytes]]:
    """(head fields, a, b) of every entry from `pos` on; ValueError on a truncated one."""
    end = len(data)
    try:
        while pos < end:
            fields = head.unpack_from(data, pos)
            pos += head.size
            a = data[pos:pos + fields[-1]]
            pos += fields[-1]
            (b_len,) = LEN.unpack_from(data, pos)
            pos += LEN.size
            b = data[pos:pos + b_len]
            pos += b_len
            if len(a) != fields[-1] or len(b) != b_len:
                raise ValueError("truncated entry")
            yield fields, a, b
    except struct.error as e:
        raise ValueError(f"truncated entry: {e}") from None
