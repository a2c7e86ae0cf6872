"""The storage schema: the column families with their stable ids, and the migrations that bring a
data directory written by an older release up to this one's layout (run by `Store` when it opens).

A family's id is what the replication op log (store/oplog.py) writes for it: a primary and its
replica must read it the same way, so ids are fixed forever. A new family takes the next free
id; a family that goes away leaves its id unused.

The schema version is kept in the meta family (`keys.SCHEMA_VERSION_KEY`); a directory without
one was written by rockmq 0.1.0 (version 1). Each step below moves the data of one version to the
next; `Store` writes what it did and the new version number in one atomic write, so a step runs
exactly once, and a broker killed before that write runs it again from the start.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Self

from rockmq.store import keys

if TYPE_CHECKING:
    from rockmq.store.db import Batch, Store

class FamilyName(str):
    """A column family: itself its name in RocksDB, `id` its number on the replication wire."""

    id: int

    def __new__(cls, name: str, family_id: int) -> Self:
        family = super().__new__(cls, name)
        family.id = family_id
        return family


class _Families(type):
    """`for f in Family` and `len(Family)` list the families, as over an Enum; `Family.LOG` stays a
    plain class attribute (an Enum member costs ~5 times as much to read on CPython 3.11, and the
    store's callers read one per message)."""

    def __iter__(cls) -> Iterator[FamilyName]:
        return iter([v for v in vars(cls).values() if isinstance(v, FamilyName)])

    def __len__(cls) -> int:
        return len(list(iter(cls)))


class Family(metaclass=_Families):
    """Every column family: what each store call names (never a string)."""

    META = FamilyName("meta", 0)  # topics, groups, subscriptions, counters, secrets (store/keys.py)
    LOG = FamilyName("log", 1)  # the messages of every queue
    OFFSETS = FamilyName("offsets", 2)  # consumer positions
    INFLIGHT = FamilyName("inflight", 3)  # POP checkpoints by deadline (revive order)
    CHECKPOINTS = FamilyName("checkpoints", 4)  # POP checkpoints, one per receive (receipt handles name them)
    RETRY = FamilyName("retry", 5)  # messages waiting for their next POP delivery
    TIMERS = FamilyName("timers", 6)  # delayed messages by due time
    DEDUP = FamilyName("dedup", 7)  # producer de-duplication, in time buckets
    TXN = FamilyName("txn", 8)  # half messages and transaction outcomes
    TXNCHECKS = FamilyName("txnchecks", 9)  # transaction checks by deadline
    MATCHES = FamilyName("matches", 10)  # offsets a filtered subscription matched
    STAGING = FamilyName("staging", 11)  # the Spark sink's staged chunks, sinks and publish jobs (broker/staging.py)
    FOOTPRINTS = FamilyName("footprints", 12)  # keys each replicated batch touched (store/footprints.py), never shipped
    INDEX = FamilyName("index", 13)  # messages by id and by key (broker/message_index.py)
    TRACE = FamilyName("trace", 14)  # what happened to each stored message (broker/trace.py)
    LITE = FamilyName("lite", 15)  # lite topics: names <-> queues of their LITE parent (broker/lite/topics.py)


assert len({f.id for f in Family}) == len(Family), "two families share an id"

# rockmq 0.1.0 kept the staging family's entries, keys otherwise unchanged, in `txn` under this prefix.
LEGACY_STAGING_PREFIX = b"\x00sink/"


class SchemaError(Exception):
    """The data directory was written by a newer rockmq, whose layout this one cannot read."""


def move_staging_out_of_txn(store: Store, batch: Batch) -> int:
    """1 -> 2: staged chunks, sinks and publish jobs get their own family; -> entries moved."""
    moved = 0
    for key, value in store.scan_prefix(Family.TXN, LEGACY_STAGING_PREFIX):
        batch.put(Family.STAGING, key[len(LEGACY_STAGING_PREFIX):], value)
        batch.delete(Family.TXN, key)
        moved += 1
    return moved


# Up to version 2 a POP checkpoint was per delivery: group · topic · queue · offset -> deadline · attempt ·
# version, and in `inflight` deadline · group · topic · queue · offset.
_LEGACY_CHECKPOINT_KEY = struct.Struct(">IIIQ")
_LEGACY_CHECKPOINT = struct.Struct(">QII")
_LEGACY_INFLIGHT_KEY = struct.Struct(">QIIIQ")


def checkpoints_per_receive(store: Store, batch: Batch) -> int:
    """2 -> 3: each in-flight delivery gets a checkpoint of its own in today's layout (one per
    receive, broker/pop/checkpoints.py), numbered from 1 (a broker numbers its own from
    epoch << 32); -> deliveries moved. Handles issued before stay stale: the message comes
    back when its invisible time runs out."""
    moved = 0
    for key, value in store.scan_prefix(Family.CHECKPOINTS, b""):
        if len(key) != _LEGACY_CHECKPOINT_KEY.size:
            continue
        gid, tid, qid, offset = _LEGACY_CHECKPOINT_KEY.unpack(key)
        deadline, attempt, _ = _LEGACY_CHECKPOINT.unpack(value)
        moved += 1
        batch.delete(Family.CHECKPOINTS, key)
        batch.delete(Family.INFLIGHT, _LEGACY_INFLIGHT_KEY.pack(deadline, gid, tid, qid, offset))
        batch.put(Family.CHECKPOINTS, keys.checkpoint_key(gid, tid, moved),
                  keys.CHECKPOINT_HEAD.pack(deadline, 1) + keys.CHECKPOINT_ENTRY.pack(qid, offset, attempt))
        batch.put(Family.INFLIGHT, keys.inflight_key(deadline, gid, tid, moved), b"")
    return moved


# MIGRATIONS[v - 1] takes a directory from version v to v + 1 (it fills the batch, the caller writes it).
MIGRATIONS: tuple[Callable[[Store, Batch], int], ...] = (move_staging_out_of_txn, checkpoints_per_receive)
SCHEMA_VERSION = len(MIGRATIONS) + 1
LEGACY_VERSION = 1  # a directory without a version: written by rockmq 0.1.0
