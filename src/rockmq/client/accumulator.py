"""The producer's accumulator: concurrent `send()` calls gathered per queue into requests (as
aiokafka's RecordAccumulator gathers records per partition). No I/O: the sender (sender.py)
drains it.

Each send waits here as an `Entry` under a key, (topic, queue): the queue its selector named, or
None when any queue of the topic will do (the spreading selectors): then the sender picks one per
request. Entries of a key leave in the order they came (a FIFO group's messages share a key), at
most `max_messages` and `max_bytes` per request; one larger entry goes alone.

Memory is bounded: entries hold `buffer_bytes` at most, from `append` until the sender `release`s
them (their request answered). An append that would exceed it waits (back-pressure) until room is
made, in the order the appends came; one entry larger than the whole buffer waits for an empty
buffer, then goes alone.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rockmq.client.message import Message, SendReceipt
from rockmq.client.queues import Queue
from rockmq.protocol import pb

Key = tuple[str, Queue | None]  # (topic, the queue the selector named, or None: any)


@dataclass(slots=True)
class Entry:
    """One waiting send: its wire form, what its selector needs again on a retry, its caller's future."""

    wire: pb.Message
    message: Message
    arg: Any
    size: int
    future: asyncio.Future[SendReceipt] = field(repr=False)


class Accumulator:
    def __init__(self, max_messages: int, max_bytes: int, buffer_bytes: int) -> None:
        if max_messages < 1 or max_bytes < 1 or buffer_bytes < 1:
            raise ValueError("batch_max_messages, batch_max_bytes and buffer_bytes must be at least 1")
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self.buffer_bytes = buffer_bytes
        self._waiting: dict[Key, deque[Entry]] = {}
        self._held = 0  # bytes of entries appended and not yet released
        self._room: deque[tuple[int, asyncio.Future[None]]] = deque()  # appends waiting for room

    @property
    def held(self) -> int:
        """Bytes of the entries waiting or in flight."""
        return self._held

    def __bool__(self) -> bool:
        return bool(self._waiting)

    async def append(self, key: Key, entry: Entry) -> None:
        """Queue `entry` under `key`, once the buffer has room for it."""
        if self.append_nowait(key, entry):
            return
        room = asyncio.get_running_loop().create_future()
        self._room.append((entry.size, room))
        try:
            await room  # room granted: its bytes are counted
        except asyncio.CancelledError:
            self._cancel(entry.size, room)
            raise
        self._waiting.setdefault(key, deque()).append(entry)

    def append_nowait(self, key: Key, entry: Entry) -> bool:
        """Queue `entry` if the buffer has room for it now (and no append waits for room); -> whether it did."""
        if self._room or not self._fits(entry.size):
            return False
        self._held += entry.size
        self._waiting.setdefault(key, deque()).append(entry)
        return True

    def _fits(self, size: int) -> bool:
        return not self._held or self._held + size <= self.buffer_bytes

    def _cancel(self, size: int, room: asyncio.Future[None]) -> None:
        """A waiting append was cancelled: take it out of the line, or give back the room it got."""
        if (size, room) in self._room:
            self._room.remove((size, room))
        else:
            self._held -= size
        self._grant()

    def keys(self) -> Iterator[Key]:
        """The keys with entries waiting, oldest first (a snapshot: draining while iterating is fine)."""
        return iter(list(self._waiting))

    def waiting(self, key: Key) -> Entry | None:
        """The oldest entry waiting under `key`."""
        entries = self._waiting.get(key)
        return entries[0] if entries else None

    def drain(self, key: Key) -> list[Entry]:
        """The next request's entries of `key`: the oldest ones, within the request caps."""
        entries = self._waiting[key]
        batch = [entries.popleft()]
        size = batch[0].size
        while entries and len(batch) < self.max_messages and size + entries[0].size <= self.max_bytes:
            size += entries[0].size
            batch.append(entries.popleft())
        if not entries:
            del self._waiting[key]
        return batch

    def release(self, batch: list[Entry]) -> None:
        """A request's entries are answered: their bytes are free for waiting appends."""
        self._held -= sum(e.size for e in batch)
        self._grant()

    def _grant(self) -> None:
        """Let waiting appends in, in order, while they fit."""
        while self._room and self._fits(self._room[0][0]):
            size, room = self._room.popleft()
            self._held += size
            room.set_result(None)
