"""Consume progress for a push consumer: the sliding-window offset of one queue, and the local file in
which a broadcasting consumer keeps its offsets. No asyncio; the store does blocking file I/O."""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Mapping
from typing import Any

from rockmq.client.queues import Queue


class OffsetWindow:
    """Which offset of one queue is safe to commit while messages finish out of order.

    Messages are handed to processing in offset order (`add`) but finish in any order (`done`). Committing
    the highest finished offset would skip a slow or failed message on restart, so the commit point is
    the smallest offset still in process -- a window that slides forward only as its oldest message
    finishes (docs/client.md, "Push consumer"). Offsets may have gaps (filtered messages are never
    added); a gap below the window is skipped, which is what we want on restart.

    Cost: amortised O(1) per operation (a deque of added offsets plus a set of unfinished ones; finished
    offsets leave the deque when they reach its head). Memory is O(in-flight span): the consumer's flow
    control bounds how many messages a queue has in process, hence this window too.
    Not thread-safe: use it from one thread (or one event loop).
    """

    def __init__(self) -> None:
        self._order: deque[int] = deque()  # added offsets, ascending; finished ones linger until at the head
        self._pending: set[int] = set()
        self._next: int | None = None  # the commit point when nothing is in process

    def start(self, next_offset: int) -> None:
        """Begin (again) at `next_offset`, e.g. the broker's committed offset when the queue is assigned.
        Forgets anything in process: completions of the previous assignment are stale."""
        if next_offset < 0:
            raise ValueError(f"offset must be >= 0, got {next_offset}")
        self._order.clear()
        self._pending.clear()
        self._next = next_offset

    def add(self, offset: int) -> None:
        """A message at `offset` goes to processing; offsets must increase."""
        if offset < 0 or (self._next is not None and offset < self._next):
            raise ValueError(f"offset {offset} is not after the last one added (next expected >= {self._next})")
        self._order.append(offset)
        self._pending.add(offset)
        self._next = offset + 1

    def done(self, offset: int) -> bool:
        """The message at `offset` finished (consumed, or handed to the retry queue). Returns False for an
        offset not in process -- a duplicate or a completion from before the last `start` -- instead of
        raising, since such late completions are normal after a rebalance."""
        if offset not in self._pending:
            return False
        self._pending.remove(offset)
        while self._order and self._order[0] not in self._pending:
            self._order.popleft()
        return True

    def committable(self) -> int | None:
        """The next offset to read after a restart: the oldest offset in process, else one past the last
        added (or the `start` base); None before any `start` or `add`."""
        return self._order[0] if self._order else self._next

    @property
    def in_flight(self) -> int:
        return len(self._pending)


def offset_key(queue: Queue) -> str:
    """A queue's key in the offset file. Not the endpoint: that may change while the queue stays the same.
    Unambiguous because topic names cannot contain '|' and the queue id comes last."""
    return f"{queue.topic}|{queue.broker}|{queue.queue_id}"


class LocalOffsetStore:
    """Offsets kept by a broadcasting consumer (every member reads every queue, so the broker keeps no
    shared progress): one JSON file per consumer, {offset_key(queue): next offset}.

    A save writes a temp file, fsyncs it and renames it over the file, so a crash leaves either the old
    or the new offsets, never a torn file; a leftover temp file is ignored and overwritten by the next
    save. Blocking: run it in a thread from async code. One writer per file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._temp = self.path + ".tmp"

    def load(self) -> dict[str, int]:
        """The saved offsets; {} if nothing was saved yet. ValueError if the file is not an offset file."""
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        except json.JSONDecodeError as e:
            raise ValueError(f"{self.path}: not an offset file: {e}") from None
        if not isinstance(data, dict) or not _valid(data):
            raise ValueError(f"{self.path}: expected a JSON object of queue key -> offset >= 0")
        return data

    def save(self, offsets: Mapping[str, int]) -> None:
        """Replace the saved offsets with `offsets`, durably."""
        if not _valid(offsets):
            raise ValueError("offsets must map queue keys (str) to ints >= 0")
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        with open(self._temp, "w", encoding="utf-8") as f:
            json.dump(dict(sorted(offsets.items())), f, indent=0)
            f.flush()
            os.fsync(f.fileno())
        os.replace(self._temp, self.path)
        if os.name == "posix":  # make the rename itself durable; Windows cannot open a directory
            fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _valid(offsets: Mapping[Any, object]) -> bool:
    return all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
               for k, v in offsets.items())
