"""The one durable-commit step of every write a client is told about (sends, staged publishes,
recalls, transaction ends, dead-letter forwards): write the batch, fsync it under the `sync` flush
policy (a group commit shared with concurrent writers), then, under `sync` replication, wait until
a replica applied it. A write whose fsync or confirmation fails stays written (a retry must find
it, not a reused offset); the caller fails the request and the client retries.

A request that writes nothing new (a retried send or publish, a repeated EndTransaction) answers
with what an earlier batch wrote, so it waits as that batch would have: for the fsync and for a
replica to hold everything written so far (`durable()` without a batch).

A member of a coordinated group (broker/coordination/membership.py) writes and acknowledges only
while it holds the primary role and its lease surely holds for the others (`writable_until`): the
store refuses every write past it (`guard`: whoever writes, a request or a background writer), and
the Committer checks once more before the answer (one time.monotonic() comparison); other brokers
pay one `is not None` test per commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Protocol

from rockmq.broker.queues import QueueLogs
from rockmq.config import Settings
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError
from rockmq.store import Store
from rockmq.store.db import Batch


class Confirms(Protocol):
    """A primary's replicator (broker/cluster/replication.py)."""

    async def confirm(self, seq: int) -> None:
        """Return once a replica applied batch `seq` (0: the last batch written); raise a BrokerError
        after the timeout."""


class Committer:
    def __init__(self, store: Store, logs: QueueLogs, settings: Settings, replicator: Confirms | None,
                 writable_until: Callable[[], float] | None = None) -> None:
        self.store = store
        self.broker_name = settings.broker_name
        self._writable_until = writable_until
        self.logs = logs
        self._fsync = settings.flush == "sync"
        self._replicator = replicator if settings.replication == "sync" else None

    async def commit(self, batch: Batch, allocated: dict[tuple[int, int], int] | None = None,
                     touched: Iterable[int] = ()) -> None:
        """Write `batch`, then return once it is durable. `allocated`: the first offset of each
        queue it appends to, given back if the write fails; `touched`: topics whose readers are
        woken once it is written (see `QueueLogs.write_appends`)."""
        self.logs.write_appends(batch, allocated or {}, touched)
        await self.durable(batch)

    async def durable(self, batch: Batch | None = None) -> None:
        """Return once `batch`, already written, and everything written before it are durable (no
        batch, or one that wrote nothing: everything written so far)."""
        if self._fsync:
            await self.store.sync()
        if self._replicator is not None:
            await self._replicator.confirm(batch.seq if batch is not None else 0)
        if self._writable_until is not None:  # the lease may have run out while it waited
            self._lease_holds()

    def guard(self) -> None:
        """From now on (the broker's own start-up writes done) the store takes no write past the lease."""
        if self._writable_until is not None:
            self.store.refuse_writes_after(self._writable_until, self._lapsed)

    def may_write(self) -> bool:
        """Whether the store takes a write now: a coordinated primary only while its lease surely holds
        (read_fence.py serves its reads as long)."""
        return self._writable_until is None or time.monotonic() < self._writable_until()

    def _lease_holds(self) -> None:
        assert self._writable_until is not None
        if time.monotonic() >= self._writable_until():
            raise self._lapsed()

    def _lapsed(self) -> BrokerError:
        """HA_NOT_AVAILABLE, which clients retry (the official ones on another queue, rockmq's after
        refreshing the route); background writers skip their step quietly (disk_space.log_failure)."""
        return BrokerError(pb.HA_NOT_AVAILABLE, f"broker {self.broker_name!r} here does not hold the group's "
                                                f"primary role (now or for long enough): retry, the group elects one")
