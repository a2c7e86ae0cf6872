"""AsyncProducer: send with retries that prefer another broker, steered by fault-latency avoidance.

A send picks a queue with the selector among brokers that are not paused (fault.py), sends to
that queue's broker, and on a retriable failure tries again (2 retries by default) on a queue of
a broker it has not tried yet. The message id stays the same across attempts, so a send whose
reply was lost is stored once (the broker de-duplicates). FIFO messages always go to the queue
their group hashes to: order matters more than availability.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Sequence
from typing import Any

from rockmq.client.errors import ClientClosed, RockmqError, from_status
from rockmq.client.fault import FaultAvoidance
from rockmq.client.message import Message, SendReceipt
from rockmq.client.selectors import RoundRobin, Selector, by_hash
from rockmq.client.transport import Queue, Transport
from rockmq.protocol import pb, rpc
from rockmq.protocol.message_id import new_message_id

log = logging.getLogger(__name__)
ROUTE_TTL_S = 30.0


def _now_ms() -> int:
    return int(time.time() * 1000)


class AsyncProducer:
    def __init__(self, endpoint: str, *, retries: int = 2, request_timeout: float = 3.0,
                 selector: Selector | None = None, client_id: str | None = None) -> None:
        if retries < 0:
            raise ValueError("retries must not be negative")
        self.retries = retries
        self.selector: Selector = selector or RoundRobin()
        self.transport = Transport(endpoint, request_timeout, client_id)
        self.faults = FaultAvoidance(lambda: time.monotonic() * 1000)
        self._routes: dict[str, tuple[float, list[Queue]]] = {}
        self._host = socket.gethostname()

    async def __aenter__(self) -> AsyncProducer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self.transport.close()

    async def queues(self, topic: str, refresh: bool = False) -> list[Queue]:
        """The topic's route, cached for ROUTE_TTL_S."""
        cached = self._routes.get(topic)
        if refresh or cached is None or time.monotonic() - cached[0] > ROUTE_TTL_S:
            cached = self._routes[topic] = (time.monotonic(), await self.transport.route(topic))
        return cached[1]

    async def send(self, message: Message, *, arg: Any = None) -> SendReceipt:
        """Send and wait until the broker stored it (durably, under its flush policy)."""
        return (await self._send([message], arg))[0]

    async def send_batch(self, messages: Sequence[Message], *, arg: Any = None) -> list[SendReceipt]:
        """Send messages of one topic in one request (one queue, one broker)."""
        if not messages:
            return []
        if len({m.topic for m in messages}) != 1:
            raise ValueError("a batch goes to one topic")
        return await self._send(list(messages), arg)

    def send_nowait(self, message: Message, *, arg: Any = None) -> asyncio.Future[SendReceipt]:
        """Fire and forget: a future for the receipt (add a callback, or ignore it)."""
        return asyncio.ensure_future(self.send(message, arg=arg))

    async def recall(self, topic: str, recall_handle: str) -> str:
        """Cancel a pending delayed message; -> its message id."""
        request = rpc.RecallMessageRequest(topic=pb.Resource(name=topic), recall_handle=recall_handle)
        return (await self.transport.unary(self.transport.access_point, "RecallMessage", request)).message_id

    async def _send(self, messages: list[Message], arg: Any) -> list[SendReceipt]:
        if self.transport.closed:
            raise ClientClosed("the producer is closed")
        topic = messages[0].topic
        now = _now_ms()
        request = rpc.SendMessageRequest(messages=[m.to_pb(new_message_id(), self._host, now) for m in messages])
        tried: set[str] = set()
        last: RockmqError | None = None
        for attempt in range(self.retries + 1):
            queue = self._pick(await self.queues(topic, refresh=attempt > 0), messages[0], arg, tried)
            tried.add(queue.broker)
            started = time.monotonic()
            try:
                reply = await self.transport.unary(queue.endpoint, "SendMessage", request)
            except RockmqError as e:
                self.faults.record(queue.broker, 0, failed=e.retriable)
                if not e.retriable:
                    raise
                last = e
                log.debug("send to %s failed (attempt %d): %s", queue.broker, attempt + 1, e)
                continue
            self.faults.record(queue.broker, (time.monotonic() - started) * 1000)
            failed = next((e.status for e in reply.entries if e.status.code != pb.OK), None)
            if failed is not None:
                raise from_status(failed.code, failed.message)
            return [SendReceipt(e.message_id, topic, queue.broker, e.offset, e.transaction_id, e.recall_handle)
                    for e in reply.entries]
        assert last is not None
        raise last

    def _pick(self, queues: list[Queue], message: Message, arg: Any, tried: set[str]) -> Queue:
        if not queues:
            raise from_status(pb.TOPIC_NOT_FOUND, f"topic {message.topic!r} has no queues")
        if message.message_group is not None:
            return by_hash(queues, message, arg)
        fresh = [q for q in queues if q.broker not in tried]
        healthy = [q for q in fresh or queues if self.faults.available(q.broker)]
        return self.selector(healthy or fresh or queues, message, arg)
