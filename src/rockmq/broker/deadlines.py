"""A loop that sleeps until the earliest deadline of a deadline-keyed family, then works.

The timer service (delayed messages) and revive (expired POP checkpoints) both keep their
pending work in RocksDB keyed by deadline. Neither polls on a fixed tick: each sleeps until its
earliest key is due, and `note()` wakes it early when an earlier deadline is written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from rockmq.broker.clock import now_ms

log = logging.getLogger(__name__)

Step = Callable[[], tuple[int, "int | None"]]  # -> (items moved, next deadline or None)


class DeadlineLoop:
    def __init__(self, name: str, step: Step, batch: int) -> None:
        self.name = name
        self._step = step
        self._batch = batch
        self._wake = asyncio.Event()
        self._next: int | None = None

    def note(self, deadline_ms: int) -> None:
        """A deadline was written; wake the loop if it is earlier than the one it sleeps for."""
        if self._next is None or deadline_ms < self._next:
            self._next = deadline_ms
            self._wake.set()

    async def run(self) -> None:
        while True:
            try:
                moved, nxt = self._step()
            except Exception:
                log.exception("%s failed; retrying in 1 s", self.name)
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
