"""Server streams whose client stopped reading are cancelled after `stream_send_timeout_s` (docs/architecture.md §14).

grpc.aio writes a stream's frames one at a time, each write waiting for HTTP/2 flow control: a
client that never reads holds its stream's handler at a write for as long as it likes, and with it
whatever the handler holds (a receive's messages). Each streaming handler counts its writes on a
`Writes` while it is writing; one task looks every `timeout_s / TICKS` and cancels the handler
whose write has not finished for `timeout_s`. The handler's own clean-up runs (a receive releases
the messages it handed out), and what it held is freed. What a receive holds meanwhile is bounded
by `allowance`.

grpc.aio gives a server no way to reset one HTTP/2 stream: the frame being written stays with gRPC
(one frame) until the client's deadline passes or its connection closes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import grpc

log = logging.getLogger(__name__)
TICKS = 10  # looks per timeout: a stalled stream is cancelled after timeout_s, within 1.2 * timeout_s


class Writes:
    """One stream's writes: `busy` while its handler is writing, `count` bumped per frame written."""

    __slots__ = ("task", "context", "method", "busy", "count", "seen", "still")

    def __init__(self, task: asyncio.Task[Any], context: grpc.aio.ServicerContext[Any, Any], method: str) -> None:
        self.task = task
        self.context = context
        self.method = method
        self.busy = False
        self.count = 0
        self.seen = 0  # count at the last look
        self.still = 0  # looks in a row that found it busy with the same count


class StalledStreams:
    """The streams being served, the task that cancels those a client does not read, and the bytes of
    framed messages the receives being written hold (`held`)."""

    def __init__(self, timeout_s: float, buffer_bytes: int, total_bytes: int) -> None:
        self.timeout_s = timeout_s
        self.buffer_bytes, self.total_bytes = buffer_bytes, total_bytes
        self.held = 0
        self._streams: set[Writes] = set()
        self.cancelled = 0

    def allowance(self) -> int:
        """The bytes of messages a receive may frame at once: what is left of `total_bytes`, and
        `buffer_bytes` at least. Healthy streams are written in moments and leave the total free: only
        many streams that are not read make each hold `buffer_bytes` (the rest framed as it is written)."""
        return max(self.buffer_bytes, self.total_bytes - self.held)

    def open(self, context: grpc.aio.ServicerContext[Any, Any], method: str) -> Writes:
        """Watch the calling handler's stream (its task is the one cancelled); `close` it when done."""
        task = asyncio.current_task()
        assert task is not None
        writes = Writes(task, context, method)
        self._streams.add(writes)
        return writes

    def close(self, writes: Writes) -> None:
        self._streams.discard(writes)

    def look(self) -> None:
        """One look: cancel the streams found busy on the same write more than TICKS looks in a row."""
        stalled = []
        for w in self._streams:
            if w.busy and w.count == w.seen:
                w.still += 1
                if w.still > TICKS:
                    stalled.append(w)
            else:
                w.seen, w.still = w.count, 0
        for w in stalled:
            self._streams.discard(w)
            w.task.cancel()
            self.cancelled += 1
            log.warning("cancelled a %s stream its client did not read for %.0f s (%s)", w.method, self.timeout_s,
                        w.context.peer())

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.timeout_s / TICKS)
            self.look()
