"""One queue a push consumer reads by offset (clustering, broadcast): where it stands, what it holds,
and the accounting of its cache. The fetcher fills the cache and the dispatcher empties it; both
count through `hold` and `finish` here, so the two sides of flow control cannot drift apart."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from rockmq.client.message import ReceivedMessage
from rockmq.client.offsets import OffsetWindow
from rockmq.client.queues import Queue

PAUSE_S = 1.0  # longest wait of a paused loop for something to change, and the wait after a failed call


@dataclass(frozen=True)
class QueueStats:
    position: int  # next offset to pull
    committed: int  # last offset committed
    cached: int  # messages pulled and not finished
    cached_bytes: int
    in_flight: int


@dataclass(eq=False)
class OwnedQueue:
    """A queue this consumer reads: where it stands and what it holds."""

    queue: Queue
    position: int
    committed: int
    window: OffsetWindow = field(default_factory=OffsetWindow)
    cached: int = 0
    cached_bytes: int = 0
    typical_body: float = 0.0  # running typical body size of its messages (sizes its pulls)
    level: int = -1  # its messages' priority (0: none; -1: not learnt yet): docs/priority.md
    backlog: bool = False  # its last pull got all it asked for: more may be waiting
    stopped: bool = False
    space: asyncio.Event = field(default_factory=asyncio.Event)  # set when the cache drops below the limits
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # orderly: set when the buffer gets a message
    buffer: deque[ReceivedMessage] = field(default_factory=deque)  # orderly: messages in offset order
    running: int = 0  # its messages inside a handler (or its retries) right now
    puller: asyncio.Task[None] | None = None
    worker: asyncio.Task[None] | None = None  # orderly: the queue's one worker

    @classmethod
    def at(cls, queue: Queue, start: int) -> OwnedQueue:
        """A queue taken at offset `start` (committed there too, so nothing is committed until it moves)."""
        owned = cls(queue, start, start)
        owned.window.start(start)
        return owned

    def released(self) -> bool:
        """`stopped`, read anew: a call, so no reader (or type checker) takes it as unchanged
        across the awaits of a loop that began with it False."""
        return self.stopped

    def commit_point(self) -> int:
        return self.window.committable() if self.window.in_flight else self.position  # type: ignore[return-value]

    def stats(self) -> QueueStats:
        return QueueStats(self.position, self.committed, self.cached, self.cached_bytes, self.window.in_flight)

    def hold(self, message: ReceivedMessage) -> None:
        """Count a pulled message in the cache, and in the window so no commit passes it."""
        self.window.add(message.offset)
        self.cached += 1
        self.cached_bytes += len(message.body)

    def finish(self, message: ReceivedMessage) -> None:
        """A message is done with: out of the window and the cache, and a paused puller woken. A
        message from before the queue was taken again is not in the window and counts nothing."""
        if self.window.done(message.offset):
            self.cached -= 1
            self.cached_bytes -= len(message.body)
            self.space.set()
