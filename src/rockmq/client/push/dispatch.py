"""Handing a push consumer's pulled messages to their handlers (clustering, broadcast): a pool of
`concurrency` workers over one queue of work, or, orderly, one worker per queue taking its messages
in offset order. What waits here is bounded by flow control (fetcher.py): at most the cache limits
per owned queue are pulled and unfinished."""

from __future__ import annotations

import asyncio
import contextlib

from rockmq.client.message import ReceivedMessage
from rockmq.client.push.owned import PAUSE_S, OwnedQueue
from rockmq.client.push.settlement import Settlement


class Dispatcher:
    """From the fetcher's `dispatch` to the settlement, and each message out of its queue's cache."""

    def __init__(self, settlement: Settlement, *, orderly: bool, concurrency: int) -> None:
        self._settlement = settlement
        self._orderly = orderly
        self._concurrency = concurrency
        self._work: asyncio.Queue[tuple[OwnedQueue, ReceivedMessage]] = asyncio.Queue()  # waiting for a worker
        self._workers: list[asyncio.Task[None]] = []

    def start(self) -> None:
        """The shared pool of workers (orderly consumers have one per queue instead: `attach`)."""
        if not self._orderly:
            self._workers = [asyncio.create_task(self._work_loop(), name="rockmq-handler")
                             for _ in range(self._concurrency)]

    def attach(self, owned: OwnedQueue) -> None:
        """A queue just taken: orderly, its own worker."""
        if self._orderly:
            owned.worker = asyncio.create_task(self._orderly_loop(owned), name="rockmq-orderly")

    async def close(self) -> None:
        """Stop the pool (after the queues were stopped: what a worker still runs is abandoned)."""
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)

    def dispatch(self, owned: OwnedQueue, message: ReceivedMessage) -> None:
        """A pulled message, into its queue's cache and on to a worker."""
        owned.hold(message)
        if self._orderly:
            owned.buffer.append(message)
            owned.ready.set()
        else:
            self._work.put_nowait((owned, message))

    async def _work_loop(self) -> None:
        while True:
            owned, message = await self._work.get()
            if not owned.stopped:  # a released queue's messages stay uncommitted for its next owner
                await self.deliver(owned, message)

    async def _orderly_loop(self, owned: OwnedQueue) -> None:
        while not owned.stopped:
            if not owned.buffer:
                owned.ready.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(owned.ready.wait(), PAUSE_S)
                continue
            if await self.deliver(owned, owned.buffer[0]):
                owned.buffer.popleft()

    async def deliver(self, owned: OwnedQueue, message: ReceivedMessage) -> bool:
        """Settle the message (`Settlement.settle`), counted as running on its queue meanwhile, then
        out of the cache -> True; False if the queue was taken away first."""
        owned.running += 1
        try:
            if not await self._settlement.settle(owned, message):
                return False
        finally:
            owned.running -= 1
        owned.finish(message)
        return True
