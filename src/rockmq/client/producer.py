"""AsyncProducer: send with retries that prefer another broker, steered by fault-latency avoidance;
optionally a durable retry spool, and transactional sends settled by commit, rollback or a checker.

The producer is a façade: concurrent `send()` calls wait in the accumulator (accumulator.py), per
queue, and the sender (sender.py) sends them in shared requests, retries, spools and answers each
caller; `send_batch`, one-way and transactional sends are requests of their own.

A send picks a queue with the selector and names it in the request: the broker stores the
message in that queue (docs/protocol.md). The default RoundRobin (and `at_random`) pick among
brokers that are not paused (fault.py), and on a retriable failure try again (2 retries by
default) on a queue of a broker not tried yet, then, pausing, until `delivery_timeout` (10 s) after
the first attempt: a broker group's failover is ridden out (sender.py); a selector that names a queue (`by_index`,
`by_hash`, `by_environment`, a callable) is given the whole route each time, like RocketMQ's
MessageQueueSelector. The message id is assigned once, before the first attempt, so a
send whose reply was lost is stored once (the broker de-duplicates on topic and message id). FIFO
messages always go to the queue their group hashes to: order matters more than availability.

Routes are cached: a route older than `route_ttl_s` is refreshed in the background while sends
go on with the cached one, so only a topic's first send (and a retry) waits for QueryRoute. A
route is asked of the session's access points in turn (the endpoints given, then every broker a
route named: session.py), and a refresh that fails keeps the last route, so the death of the
broker the producer was pointed at costs at most one attempt while another broker is up.

With `spool_dir`, a send that still fails with a retriable error after its retries and
`delivery_timeout` (0: spool at once) is written to a local RocksDB spool (spool.py) and returns
receipts marked `spooled`; a background task resends it on `spool_schedule_s` and after the last
step hands it to `on_dead` and keeps it among the dead entries (`dead_spool()`). The application
thus rides out a broker outage without buffering, and a crashed producer's spool is replayed by the
next one that opens it. FIFO and transactional
sends are never spooled: a later message of the group could overtake a spooled one, and a
transaction needs its answer now. A spooled send is resent without its `arg`.

With `lane="dev1"` every message carries the property `lane=dev1` (lanes.py): only consumers
of that lane receive it.

`send_transactional` sends a half message and returns an `AsyncTransaction` to commit or roll
back. With a `checker`, the producer also answers the broker's checks of transactions nobody
ended (transaction.py), for the topics it sent transactions to and `transaction_topics`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rockmq.client.accumulator import Accumulator, Entry, Key
from rockmq.client.errors import BatchSendError, BrokerRefused, ClientClosed, RockmqError
from rockmq.client.fault import LATENCY_MS, PAUSE_MS, FaultAvoidance
from rockmq.client.limits import (
    BATCH_MAX_BYTES,
    BATCH_MAX_MESSAGES,
    BUFFER_BYTES,
    DELIVERY_TIMEOUT_S,
    MAX_IN_FLIGHT,
    REQUEST_TIMEOUT_S,
    ROUTE_TTL_S,
    SEND_RETRIES,
)
from rockmq.client.message import Message, SendReceipt
from rockmq.client.queues import Queue
from rockmq.client.selectors import RoundRobin, Selector, spreads
from rockmq.client.sender import Failure, Sender, aim, receipts
from rockmq.client.session import Endpoints, Session
from rockmq.client.spool import DEAD_LIST_LIMIT, MAX_ENTRIES, SPOOL_SCHEDULE_S, DeadEntry, OnDead, Spool
from rockmq.client.transaction import AsyncTransaction, Checker, TelemetrySession
from rockmq.client.transport import Transport
from rockmq.plumbing.channels import MAX_MESSAGE, Tls
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import pb, rpc
from rockmq.protocol.conventions import LANE_PROPERTY, check_lane
from rockmq.protocol.message_id import new_message_id

log = logging.getLogger(__name__)

_ENVELOPE = 256  # a message's wire bytes beyond its body and properties: ids, keys, tag, times, with room to spare


def _now_ms() -> int:
    return int(time.time() * 1000)


class AsyncProducer:
    def __init__(self, endpoint: Endpoints, *, retries: int = SEND_RETRIES, request_timeout: float = REQUEST_TIMEOUT_S,
                 delivery_timeout: float = DELIVERY_TIMEOUT_S,
                 selector: Selector | None = None, client_id: str | None = None, route_ttl_s: float = ROUTE_TTL_S,
                 spool_dir: str | Path | None = None, spool_schedule_s: Sequence[float] = SPOOL_SCHEDULE_S,
                 spool_max_entries: int = MAX_ENTRIES, on_dead: OnDead | None = None, checker: Checker | None = None,
                 transaction_topics: Sequence[str] = (), lane: str | None = None,
                 fault_latency_ms: Sequence[float] = LATENCY_MS, fault_pause_ms: Sequence[float] = PAUSE_MS,
                 batch_max_messages: int = BATCH_MAX_MESSAGES, batch_max_bytes: int = BATCH_MAX_BYTES,
                 buffer_bytes: int = BUFFER_BYTES, max_in_flight: int = MAX_IN_FLIGHT,
                 transport: Transport | None = None, credentials: Credentials | None = None,
                 tls: Tls | None = None) -> None:
        if retries < 0:
            raise ValueError("retries must not be negative")
        if delivery_timeout < 0:
            raise ValueError("delivery_timeout must not be negative")
        if transaction_topics and checker is None:
            raise ValueError("transaction_topics need a checker")
        self.retries = retries
        self.route_ttl_s = route_ttl_s
        self.selector: Selector = selector or RoundRobin()
        self.checker = checker
        self.transaction_topics = tuple(transaction_topics)
        self.lane = check_lane(lane)
        self.faults = FaultAvoidance(lambda: time.monotonic() * 1000, fault_latency_ms, fault_pause_ms)
        self.session = Session(endpoint, request_timeout, client_id, self.lane, transport, credentials, tls)
        self._routes: dict[str, tuple[float, list[Queue]]] = {}
        self._route_fetches: dict[str, asyncio.Task[list[Queue]]] = {}
        self._telemetry: dict[str, TelemetrySession] = {}
        self._spool = Spool(spool_dir, self._resend, spool_schedule_s, spool_max_entries, on_dead) if spool_dir else None
        self.accumulator = Accumulator(batch_max_messages, min(batch_max_bytes, MAX_MESSAGE // 2), buffer_bytes)
        self.sender = Sender(self.session, self.queues, self._route_now, self.selector, self.faults, retries,
                             self._spool, self.accumulator, max_in_flight, delivery_timeout)
        self._host = socket.gethostname()
        self._started = False
        self._closing = False
        self._oneway: set[asyncio.Future[None]] = set()

    async def __aenter__(self) -> AsyncProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Resend what the spool holds and open the check streams of `transaction_topics`. The
        first send calls it too; calling it again does nothing."""
        if self._started:
            return
        if self.session.closed:
            raise ClientClosed("the producer is closed")
        self._started = True
        if self._spool is not None:
            self._spool.start()
        for topic in self.transaction_topics:
            try:
                queues = await self.queues(topic)
            except RockmqError as e:
                log.warning("no route for %s yet (%s): checks are taken from %s only", topic, e, self.session.access_point)
                queues = []
            # Without a route the access point will do: a lone broker holds every queue.
            for q in {q.endpoint: q for q in queues}.values() or [Queue(topic, "", self.session.access_point, -1)]:
                self._checked_at(q, topic)

    async def close(self) -> None:
        """Send what is pending (its senders get their answers), then let go of everything."""
        self._closing = True
        await self.sender.flush()
        if self._oneway:  # one-way sends already made get their chance
            await asyncio.wait(list(self._oneway), timeout=self.session.request_timeout_s)
        tasks = list(self._route_fetches.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)
        for session in self._telemetry.values():
            await session.close()
        self._telemetry.clear()
        if self._spool is not None:
            await self._spool.close()
        await self.session.close()

    # --- routes ------------------------------------------------------------------------------

    async def queues(self, topic: str, refresh: bool = False) -> list[Queue]:
        """The topic's route; a cached one at once (refreshed in the background once stale). With
        `refresh`, a fresh one, or the cached one if no broker could be asked."""
        cached = self._routes.get(topic)
        if cached is None or refresh:
            try:
                return await asyncio.shield(self._fetch_route(topic))
            except RockmqError as e:
                if cached is None or not e.retriable:
                    raise
                log.debug("route of %s not refreshed (%s): keeping the last one", topic, e)
                return cached[1]
        return self._route_now(topic) or cached[1]

    def _route_now(self, topic: str) -> list[Queue] | None:
        """The cached route, without waiting (a stale one is refreshed in the background); None if none."""
        cached = self._routes.get(topic)
        if cached is None:
            return None
        if time.monotonic() - cached[0] > self.route_ttl_s:
            self._fetch_route(topic)
        return cached[1]

    def _fetch_route(self, topic: str) -> asyncio.Task[list[Queue]]:
        """The one QueryRoute in flight for the topic (concurrent callers share it)."""
        task = self._route_fetches.get(topic)
        if task is None:
            task = self._route_fetches[topic] = asyncio.create_task(self._query_route(topic))
            task.add_done_callback(_log_route_failure)
        return task

    async def _query_route(self, topic: str) -> list[Queue]:
        try:
            listed = await self.session.route(topic)
            # Queues listed for readers only (a replica whose primary is gone) take no sends; with none
            # writable, the broker's own (retriable) refusal says why.
            queues = [q for q in listed if q.writable] or listed
            self._routes[topic] = (time.monotonic(), queues)
            return queues
        finally:
            self._route_fetches.pop(topic, None)

    # --- sending -----------------------------------------------------------------------------

    async def send(self, message: Message, *, arg: Any = None) -> SendReceipt:
        """Send and wait until the broker stored it (durably, under its flush policy), or the spool
        did. Concurrent sends to one queue share requests (accumulator.py, sender.py)."""
        return await self.submit(message, arg=arg)

    def submit(self, message: Message, *, arg: Any = None) -> asyncio.Future[SendReceipt]:
        """What `send` does, without a coroutine of its own: the future of the receipt. Once the
        producer runs and knows the topic's route, the message joins the accumulator right here
        (the sync Producer's way in: one hop to the event loop, no task per send)."""
        if self._closing or self.session.closed:
            raise ClientClosed("the producer is closed")
        wire = self._to_pb(message, _now_ms())  # a malformed message is refused before anything is sent
        queues = self._route_now(message.topic) if self._started else None
        if queues is None:
            return asyncio.ensure_future(self._send_first(message, wire, arg))
        key, entry = self._entry(message, wire, arg, queues)
        if not self.accumulator.append_nowait(key, entry):
            return asyncio.ensure_future(self._gather(key, entry))
        self.sender.wake()
        return entry.future

    async def _send_first(self, message: Message, wire: pb.Message, arg: Any) -> SendReceipt:
        """A send before the producer started or knew the topic's route."""
        await self.start()
        try:
            queues = await self.queues(message.topic)
        except RockmqError as e:
            if not e.retriable:
                raise
            return (await self._send([message], arg, batch=False))[0]  # no route yet: retries (and the spool) decide
        return await self._gather(*self._entry(message, wire, arg, queues))

    def _entry(self, message: Message, wire: pb.Message, arg: Any, queues: list[Queue]) -> tuple[Key, Entry]:
        """The accumulator entry of a send, under its key: the queue its group or a naming selector
        picks, or any queue (a spreading selector picks one per request)."""
        named = None if message.message_group is None and spreads(self.selector) else \
            self.sender.pick(queues, message, arg, set())
        future: asyncio.Future[SendReceipt] = asyncio.get_running_loop().create_future()
        return (message.topic, named), Entry(wire, message, arg, _size(message), future)

    async def _gather(self, key: Key, entry: Entry) -> SendReceipt:
        await self.accumulator.append(key, entry)
        self.sender.wake()
        return await entry.future

    async def send_batch(self, messages: Sequence[Message], *, arg: Any = None) -> list[SendReceipt]:
        """Send messages of one topic in one request (one queue, one broker). If the broker refuses
        any of them, raises BatchSendError: its `.receipts` say which ones were stored."""
        if not messages:
            return []
        if len({m.topic for m in messages}) != 1:
            raise ValueError("a batch goes to one topic")
        return await self._send(list(messages), arg, batch=True)

    def send_nowait(self, message: Message, *, arg: Any = None) -> asyncio.Future[SendReceipt]:
        """Fire and forget: a future for the receipt (add a callback, or ignore it)."""
        return asyncio.ensure_future(self.send(message, arg=arg))

    def send_oneway(self, message: Message, *, arg: Any = None) -> None:
        """Send without waiting for, or hearing of, the outcome (metrics, logs): one attempt, no
        retries, no spool; a failure is only logged at debug level."""
        request = rpc.SendMessageRequest(messages=[self._to_pb(message, _now_ms())])
        task = asyncio.ensure_future(self._send_once(request, message, arg))
        self._oneway.add(task)
        task.add_done_callback(self._oneway_done)

    def _oneway_done(self, task: asyncio.Future[None]) -> None:
        self._oneway.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("one-way send failed: %s", task.exception())

    async def _send_once(self, request: rpc.SendMessageRequest, message: Message, arg: Any) -> None:
        await self.start()
        queues = await self.queues(message.topic)
        await self.session.unary(aim(request, self.sender.pick(queues, message, arg, set())), "SendMessage", request)

    async def send_transactional(self, message: Message, *, arg: Any = None) -> AsyncTransaction:
        """Send a half message, invisible to consumers until the transaction is committed."""
        await self.start()
        request = rpc.SendMessageRequest(messages=[self._to_pb(message, _now_ms(), transactional=True)])
        queue, [entry] = await self.sender.deliver(request, message, arg)
        if self.checker is not None:
            self._checked_at(queue, message.topic)
        receipt = SendReceipt(entry.message_id, message.topic, queue.broker, entry.offset, entry.transaction_id,
                              queue_id=queue.queue_id)
        return AsyncTransaction(self.session, queue.endpoint, receipt)

    async def recall(self, topic: str, recall_handle: str) -> str:
        """Cancel a pending delayed message; -> its message id."""
        request = rpc.RecallMessageRequest(topic=pb.Resource(name=topic), recall_handle=recall_handle)
        reply: rpc.RecallMessageResponse = await self.session.ask("RecallMessage", lambda _: request)
        return reply.message_id

    def aimed(self, message: Message) -> tuple[rpc.SendMessageRequest, Queue] | None:
        """A lone send's request and queue, for a first attempt made outside the event loop (the
        sync Producer's: it skips the hand-offs to the loop's thread and back). None when the send
        must go through the loop: a FIFO message or a naming selector (their order and choice are
        the accumulator's), no fresh route, a transport that cannot block, a closing producer.
        Thread-safe: it touches nothing of asyncio's."""
        cached = self._routes.get(message.topic)
        if (self._closing or self.session.closed or not self.session.blocks or message.message_group is not None
                or not spreads(self.selector) or cached is None or not cached[1]
                or time.monotonic() - cached[0] > self.route_ttl_s):
            return None
        request = rpc.SendMessageRequest(messages=[self._to_pb(message, _now_ms())])
        return request, self.sender.pick(cached[1], message, None, set())

    async def retry(self, message: Message, arg: Any, failed: Failure) -> SendReceipt:
        """A send whose first attempt (made elsewhere: `aimed`) failed retriably: its retries left."""
        return (await self._send([message], arg, batch=False, failed=failed))[0]

    async def _send(self, messages: list[Message], arg: Any, batch: bool, failed: Failure | None = None) -> list[SendReceipt]:
        """One request of its own (not gathered with other sends)."""
        if self._closing or self.session.closed:
            raise ClientClosed("the producer is closed")
        await self.start()
        now = _now_ms()
        request = rpc.SendMessageRequest(messages=[self._to_pb(m, now) for m in messages])
        try:
            return await self.sender.send(request, messages, arg, failed=failed)
        except BrokerRefused as e:
            if batch and not e.retriable:  # every entry refused alike
                raise BatchSendError([None] * len(messages), dict.fromkeys(range(len(messages)), e)) from None
            raise
        except BatchSendError as e:
            if batch:
                raise
            raise e.errors[0] from None

    def _to_pb(self, message: Message, now_ms: int, transactional: bool = False) -> pb.Message:
        """The wire form with the message's id (assigned here at its first send), marked with the
        producer's lane unless it names one."""
        if message.message_id is None:
            message.message_id = new_message_id()
        m = message.to_pb(message.message_id, self._host, now_ms, transactional)
        if self.lane is not None and LANE_PROPERTY not in m.user_properties:
            m.user_properties[LANE_PROPERTY] = self.lane
        return m

    async def _resend(self, request: rpc.SendMessageRequest) -> None:
        """The spool's way back to the broker: the same retries, no spooling."""
        receipts(*await self.sender.deliver(request, Message.from_pb(request.messages[0]), None), request.messages)

    # --- spool and transaction checks --------------------------------------------------------

    async def dead_spool(self, limit: int = DEAD_LIST_LIMIT) -> list[DeadEntry]:
        """Spooled sends that failed their last scheduled attempt, oldest first."""
        return self._open_spool().dead(limit)

    async def drain_spool(self, timeout: float) -> int:
        """Wait until the spool has nothing left to resend (say, before exiting), or `timeout`;
        -> how many entries are still pending."""
        return await self._open_spool().drain(timeout)

    async def forget_dead(self, entry_id: str) -> None:
        """Drop a dead entry (after resending its messages, or deciding not to)."""
        self._open_spool().forget_dead(entry_id)

    def _open_spool(self) -> Spool:
        if self._spool is None:
            raise ValueError("this producer has no spool (spool_dir)")
        if self.session.closed:
            raise ClientClosed("the producer is closed")
        return self._spool

    def _checked_at(self, queue: Queue, topic: str) -> None:
        """Take the broker's checks of `topic`'s transactions on `queue`'s broker."""
        assert self.checker is not None
        session = self._telemetry.get(queue.endpoint)
        if session is None:
            session = self._telemetry[queue.endpoint] = TelemetrySession(self.session, queue.endpoint, queue.broker,
                                                                         self.checker)
        session.publish(topic)


def _size(message: Message) -> int:
    """About the bytes a message takes on the wire (what the accumulator's caps count)."""
    return (len(message.body) + sum(len(k) + len(v) for k, v in message.properties.items()) + sum(map(len, message.keys))
            + _ENVELOPE)


def _log_route_failure(task: asyncio.Task[list[Queue]]) -> None:
    """A background refresh that failed keeps the cached route; say so (and retrieve the error)."""
    if not task.cancelled() and task.exception() is not None:
        log.debug("route refresh failed: %s", task.exception())
