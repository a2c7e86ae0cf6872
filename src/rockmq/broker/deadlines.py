"""A loop that sleeps until the earliest deadline of a deadline-keyed family, then works.

The timer service (delayed messages) and revive (expired POP checkpoints) both keep their
pending work in RocksDB keyed by deadline. Neither polls on a fixed tick: each sleeps until its
earliest key is due, and `note()` wakes it early when an earlier deadline is written.

Every key of such a family starts with its deadline, and the loop remembers a floor: a key below
which it has deleted everything (the first key left after its last step). Scans start at the
floor, so they never wade through the tombstones of entries already handled — a queue on an LSM
tree otherwise pays for every delete until the next compaction, and a burst of entries due in
the same millisecond would cost quadratic time. Whoever writes a deadline calls `note()`, which
lowers the floor too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator

from rockmq.broker.clock import now_ms
from rockmq.store import Store, keys
from rockmq.store.disk_space import log_failure
from rockmq.store.schema import FamilyName

log = logging.getLogger(__name__)

Step = Callable[[], tuple[int, "int | None"]]  # -> (items moved, next deadline or None)


class DeadlineLoop:
    def __init__(self, name: str, step: Step, batch: int) -> None:
        self.name = name
        self._step = step
        self._batch = batch
        self._wake = asyncio.Event()
        self._next: int | None = None
        self._floor = b""  # no key below this one

    def note(self, deadline_ms: int) -> None:
        """A deadline was written; wake the loop if it is earlier than the one it sleeps for."""
        self._floor = min(self._floor, keys.deadline_bound(deadline_ms))
        if self._next is None or deadline_ms < self._next:
            self._next = deadline_ms
            self._wake.set()

    def due(self, store: Store, family: FamilyName, now: int, limit: int) -> Iterator[tuple[bytes, bytes]]:
        """The family's entries due at `now`, earliest first (for the step)."""
        return store.scan(family, self._floor, keys.deadline_bound(now + 1), limit)

    def earliest(self, store: Store, family: FamilyName) -> int | None:
        """The earliest deadline left in the family. The step calls it after writing its batch:
        everything below the key found is gone, so the floor moves up to it."""
        key = store.first_key(family, self._floor)
        if key is None:
            return None
        self._floor = key
        return keys.deadline_of(key)

    async def run(self) -> None:
        while True:
            try:
                moved, nxt = self._step()
            except Exception as e:
                log_failure(log, e, "%s failed; retrying in 1 s", self.name)
                moved, nxt = 0, now_ms() + 1000
            if moved >= self._batch:  # more is due: keep going, but let others run
                await asyncio.sleep(0)
                continue
            self._next = nxt
            self._wake.clear()
            delay = 3600.0 if nxt is None else max(0.0, (nxt - now_ms()) / 1000)
            try:
                await asyncio.wait_for(self._wake.wait(), delay)
            except TimeoutError:
                pass
