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

from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from rockmq.store.db import Batch, Store

class Family(StrEnum):
    """A column family: its value is its name in RocksDB, `id` its number on the replication wire."""

    id: int

    def __new__(cls, name: str, family_id: int) -> Self:
        member = str.__new__(cls, name)
        member._value_ = name
        member.id = family_id
        return member

    META = "meta", 0  # topics, groups, subscriptions, counters, secrets (store/keys.py)
    LOG = "log", 1  # the messages of every queue
    OFFSETS = "offsets", 2  # consumer positions
    INFLIGHT = "inflight", 3  # POP checkpoints by deadline (revive order)
    CHECKPOINTS = "checkpoints", 4  # POP checkpoints by position (receipt handles name them)
    RETRY = "retry", 5  # messages waiting for their next POP delivery
    TIMERS = "timers", 6  # delayed messages by due time
    DEDUP = "dedup", 7  # producer de-duplication, in time buckets
    TXN = "txn", 8  # half messages and transaction outcomes
    TXNCHECKS = "txnchecks", 9  # transaction checks by deadline
    MATCHES = "matches", 10  # offsets a filtered subscription matched
    STAGING = "staging", 11  # the Spark sink's staged chunks, sinks and publish jobs (broker/staging.py)


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


# MIGRATIONS[v - 1] takes a directory from version v to v + 1 (it fills the batch, the caller writes it).
MIGRATIONS: tuple[Callable[[Store, Batch], int], ...] = (move_staging_out_of_txn,)
SCHEMA_VERSION = len(MIGRATIONS) + 1
LEGACY_VERSION = 1  # a directory without a version: written by rockmq 0.1.0
