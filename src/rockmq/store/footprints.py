"""A primary's footprints: the keys each replicated batch touched, kept in the store with the batch
(family `footprints`, by batch number), so that a replica can be brought to the present from where
it stopped even when the batches themselves are gone (the primary restarted: its ring of recent
batches lives in memory only). A replica keeps those of the batches it applies too
(replication.OpLog.follow): elected, it catches up from them a replica that applied fewer of the
old primary's batches than it did, rather than having it re-seeded (a full copy and a restart).

Keys only, not values: a footprint costs about a batch's keys, not its bodies. A replica that holds
batches up to X reaches the primary's present state by the keys touched after X set to the values
they hold now, and the key ranges deleted after X deleted again (`catch_up`): what it gets is not
the batches but their sum, applied in one batch, which is all a replica needs.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
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


def touched(store: Store, after: int, upto: int) -> list[Op] | None:
    """The operations, without their values (a range delete keeps its bound), of the batches after
    `after` up to `upto`, in order; None unless the footprints of every one are kept (a store caught
    up in one batch, a sum, holds none of the batches it summed: a gap)."""
    ops: list[Op] = []
    expected = after + 1
    for k, raw in store.scan(Family.FOOTPRINTS, key(after + 1), key(upto + 1)):
        if keys.decode_u64(k) != expected:
            return None
        expected += 1
        ops += oplog.decode(raw[_SIZE.size:])
    return ops if expected == upto + 1 else None


def catch_up(store: Store, after: int, upto: int, limit: int, undo: Sequence[Op] = ()) -> list[Op] | None:
    """The operations that take a replica holding the batches up to `after` to `upto` (the last
    batch written), read in one step (nothing may be written meanwhile); None when the footprints
    from `after + 1` are not all kept, or the values to send pass `limit` bytes (re-seed it).
    `undo`: what the replica's own batches after `after` touched (a former primary's tail, which
    this store's history does not hold, broker/cluster/truncation.py): those keys get the values
    they hold here, and those ranges what this store holds in them."""
    done = touched(store, after, upto)
    if done is None:
        return None
    ranges: list[Op] = []
    touched_keys: dict[FamilyName, dict[bytes, None]] = {}  # by family, in the order first touched
    for op in (*done, *undo):
        if op[0] == DELETE_RANGE:
            ranges.append(op)
        else:
            touched_keys.setdefault(op[1], {})[op[2]] = None
    ops = list(ranges)  # every range deleted first; then what the keys and the replica's ranges hold here
    size = 0
    for _, family, lower, upper in (op for op in undo if op[0] == DELETE_RANGE):
        for name, value in store.scan(family, lower, upper):  # a range the replica deleted: refilled from here
            ops.append((PUT, family, name, value))
            size += len(name) + len(value)
            if size > limit:
                return None
    for family, names in touched_keys.items():
        wanted = list(names)
        for name, held in zip(wanted, store.get_many(family, wanted), strict=True):
            ops.append((DELETE, family, name, b"") if held is None else (PUT, family, name, held))
            size += len(name) + (len(held) if held is not None else 0)
        if size > limit:
            return None
    ops.append((PUT, Family.META, keys.REPLICATION_SEQ_KEY, keys.encode_u64(upto)))  # last: where it stands
    return ops
