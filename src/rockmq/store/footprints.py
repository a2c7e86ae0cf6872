"""A primary's footprints: the keys each replicated batch touched, kept in the store with the batch
(family `footprints`, by batch number), so that a replica can be brought to the present from where
it stopped even when the batches themselves are gone (the primary restarted: its ring of recent
batches lives in memory only).

Keys only, not values: a footprint costs about a batch's keys, not its bodies. A replica that holds
batches up to X reaches the primary's present state by the keys touched after X set to the values
they hold now, and the key ranges deleted after X deleted again (`catch_up`): what it gets is not
the batches but their sum, applied in one batch, which is all a replica needs.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from rockmq.store import keys, oplog
from rockmq.store.oplog import DELETE, DELETE_RANGE, PUT, Op
from rockmq.store.schema import Family, FamilyName

if TYPE_CHECKING:
    from rockmq.store.db import Store

_ALL = b"\xff" * 9  # above every footprint's key (a u64)
# footprint = batch_size:u32 · ops (store/oplog.py's encoding, values empty); the size of the whole
# batch lets the footprints kept span what a ring of whole batches would
_SIZE = struct.Struct(">I")


def key(seq: int) -> bytes:
    return keys.encode_u64(seq)


def footprint(batch_size: int, touched: bytes) -> bytes:
    """A batch's footprint: its size and its operations without their values (`touched`, from
    `oplog.encode_with_keys`)."""
    return _SIZE.pack(min(batch_size, 0xFFFFFFFF)) + touched


def kept(store: Store) -> list[tuple[int, int]]:
    """(batch number, the batch's size) of every footprint the store keeps, oldest first."""
    return [(keys.decode_u64(k), _SIZE.unpack_from(v)[0]) for k, v in store.scan(Family.FOOTPRINTS, b"", _ALL)]


def catch_up(store: Store, after: int, upto: int, limit: int) -> list[Op] | None:
    """The operations that take a replica holding the batches up to `after` to `upto` (the last
    batch written), read in one step (nothing may be written meanwhile); None when the footprints
    from `after + 1` are not all kept, or the values to send pass `limit` bytes (re-seed it)."""
    first = store.first_key(Family.FOOTPRINTS)
    if first is None or keys.decode_u64(first) > after + 1:
        return None
    ranges: list[Op] = []
    touched: dict[FamilyName, dict[bytes, None]] = {}  # by family, in the order first touched
    for _, raw in store.scan(Family.FOOTPRINTS, key(after + 1), key(upto + 1)):
        for op in oplog.decode(raw[_SIZE.size:]):
            if op[0] == DELETE_RANGE:
                ranges.append(op)
            else:
                touched.setdefault(op[1], {})[op[2]] = None
    ops = ranges
    size = 0
    for family, names in touched.items():
        wanted = list(names)
        for name, value in zip(wanted, store.get_many(family, wanted), strict=True):
            ops.append((DELETE, family, name, b"") if value is None else (PUT, family, name, value))
            size += len(name) + (len(value) if value is not None else 0)
        if size > limit:
            return None
    ops.append((PUT, Family.META, keys.REPLICATION_SEQ_KEY, keys.encode_u64(upto)))  # last: where it stands
    return ops
