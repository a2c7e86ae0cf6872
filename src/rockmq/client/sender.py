"""The producer's sender: turns what the accumulator (accumulator.py) gathered into SendMessage
requests, and delivers every request the producer makes (as aiokafka's Sender does).

Draining: whenever a send arrives or a request is answered, the sender runs once on the next turn
of the event loop (so sends made in one turn share a request: no linger when nothing else waits)
and starts a request for every key that may send now:
- at most `max_in_flight` requests to one broker at once; while they are out, sends gather, so
  under load requests fill up to the accumulator's caps by themselves;
- a key that names a queue (a FIFO group's, or a selector's choice) has one request in flight at
  a time, retries included: its messages are stored in the order of the send calls;
- a key that takes any queue gets one per request from the selector, among the brokers with a free
  slot that fault-latency avoidance does not pause.

Delivering a request (`deliver`): up to `retries` more attempts after a retriable failure, each on
a broker not tried yet when the selector spreads (fault.py records every latency and failure); the
route is refreshed before a retry. Once every broker of the route was tried, a retry first pauses
(`RETRY_PAUSE_S`, doubling), and retries go on until `delivery_timeout` after the first attempt:
so a send rides out what leaves a topic's queues without a writer for seconds — a broker group
whose primary died and whose next primary is being elected (docs/cluster.md, "Automatic failover")
— and lands on the next primary as soon as a route names it. A gathered request's reply is split back: each send gets its own
receipt or its own entry's error. A request that still fails with a retriable error goes to the
spool when the producer has one (never FIFO or transactional messages), and its sends get receipts
marked `spooled`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from rockmq.client.accumulator import Accumulator, Entry, Key
from rockmq.client.errors import BatchSendError, RockmqError, from_status
from rockmq.client.fault import FaultAvoidance
from rockmq.client.limits import DELIVERY_TIMEOUT_S, RETRY_PAUSE_S
from rockmq.client.message import Message, SendReceipt
from rockmq.client.queues import Queue
from rockmq.client.selectors import Selector, by_hash, spreads
from rockmq.client.session import Session
from rockmq.client.spool import Spool
from rockmq.protocol import pb, rpc

log = logging.getLogger(__name__)

Route = Callable[[str, bool], Awaitable[list[Queue]]]  # (topic, refresh) -> its queues
CachedRoute = Callable[[str], list[Queue] | None]  # the cached route, if any, without waiting
Failure = tuple[str, RockmqError]  # a first attempt made elsewhere: its broker and its retriable error


class Sender:
    def __init__(self, session: Session, route: Route, cached_route: CachedRoute, selector: Selector,
                 faults: FaultAvoidance, retries: int, spool: Spool | None, accumulator: Accumulator,
                 max_in_flight: int, delivery_timeout: float = DELIVERY_TIMEOUT_S) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.session = session
        self.selector = selector
        self.faults = faults
        self.retries = retries
        self.delivery_timeout = delivery_timeout
        self.spool = spool
        self.accumulator = accumulator
        self.max_in_flight = max_in_flight
        self._route = route
        self._cached_route = cached_route
        self._in_flight: dict[str, int] = {}  # broker endpoint -> gathered requests out
        self._busy: set[Key] = set()  # keys naming a queue with a request out
        self._requests: set[asyncio.Task[None]] = set()
        self._woken = False

    # --- draining the accumulator -------------------------------------------------------------

    def wake(self) -> None:
        """Drain on the next turn of the event loop (once, however often woken meanwhile)."""
        if not self._woken:
            self._woken = True
            asyncio.get_running_loop().call_soon(self._drain)

    def _drain(self) -> None:
        self._woken = False
        for key in self.accumulator.keys():
            topic, named = key
            while (first := self.accumulator.waiting(key)) is not None:
                if named is not None:
                    if key in self._busy or not self._free(named.endpoint):
                        break
                    queue: Queue | None = named
                else:
                    route = self._cached_route(topic)
                    free = [q for q in route if self._free(q.endpoint)] if route else []
                    if route and not free:
                        break
                    # Without a route the request's delivery asks for one (and says what is wrong).
                    queue = self.pick(free, first.message, first.arg, set()) if free else None
                self._start(key, queue, self.accumulator.drain(key))
                if named is not None:
                    break

    def _free(self, endpoint: str) -> bool:
        return self._in_flight.get(endpoint, 0) < self.max_in_flight

    def _start(self, key: Key, queue: Queue | None, batch: list[Entry]) -> None:
        if key[1] is not None:
            self._busy.add(key)
        if queue is not None:
            self._in_flight[queue.endpoint] = self._in_flight.get(queue.endpoint, 0) + 1
        task = asyncio.create_task(self._send(key, queue, batch))
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    async def _send(self, key: Key, queue: Queue | None, batch: list[Entry]) -> None:
        """Deliver one gathered request and answer each of its sends."""
        try:
            request = rpc.SendMessageRequest(messages=[e.wire for e in batch])
            try:
                receipts = await self.send(request, [e.message for e in batch], batch[0].arg, queue)
            except BatchSendError as e:
                for entry, receipt, i in zip(batch, e.receipts, range(len(batch)), strict=True):
                    _settle(entry.future, receipt, e.errors.get(i))
            except BaseException as e:  # noqa: BLE001 -- every caller hears of it, whatever it is
                for entry in batch:
                    _settle(entry.future, None, e if isinstance(e, Exception) else RockmqError(f"send cancelled: {e!r}"))
                if not isinstance(e, Exception):
                    raise
            else:
                for entry, receipt in zip(batch, receipts, strict=True):
                    _settle(entry.future, receipt, None)
        finally:
            if key[1] is not None:
                self._busy.discard(key)
            if queue is not None:
                self._in_flight[queue.endpoint] -= 1
            self.accumulator.release(batch)
            if self.accumulator:
                self.wake()

    async def flush(self) -> None:
        """Wait until every send made so far is answered."""
        while self.accumulator.held or self._requests:
            if self._requests:
                await asyncio.wait(list(self._requests))
            else:  # a drain or a granted append is due on this turn of the loop
                await asyncio.sleep(0)

    # --- delivering one request -----------------------------------------------------------------

    async def send(self, request: rpc.SendMessageRequest, messages: Sequence[Message], arg: Any,
                   queue: Queue | None = None, failed: Failure | None = None) -> list[SendReceipt]:
        """Deliver a request (to `queue` first, if given; after a `failed` first attempt made
        elsewhere) -> a receipt per message; spooled receipts if it failed for now and the spool
        took it; BatchSendError if the broker refused some."""
        try:
            sent_to, entries = await self.deliver(request, messages[0], arg, queue, failed)
        except RockmqError as e:
            if not e.retriable or self.spool is None or any(m.message_group is not None for m in messages):
                raise
            if not await self.spool.add(request, e):
                raise
            log.debug("spooled %d message(s) to %s: %s", len(messages), messages[0].topic, e)
            return [SendReceipt(m.system_properties.message_id, m.topic.name, "", -1, spooled=True)
                    for m in request.messages]
        return receipts(sent_to, entries, request.messages)

    async def deliver(self, request: rpc.SendMessageRequest, first: Message, arg: Any, queue: Queue | None = None,
                      failed: Failure | None = None) -> tuple[Queue, list[rpc.SendResultEntry]]:
        """Send one request, with retries (after a `failed` first attempt, the retries left);
        -> the queue it went to and the reply's entries."""
        tried: set[str] = set()
        last: RockmqError | None = None
        if failed is not None:
            tried.add(failed[0])
            last = failed[1]
        brokers: set[str] = set()  # the last route's
        pauses = _Pauses(time.monotonic() + self.delivery_timeout)
        attempt = len(tried)
        while attempt <= self.retries or pauses.time_left():
            if attempt > self.retries or (brokers and brokers <= tried):  # none left to try at once
                await pauses.next()
                tried.clear()
            if queue is None or attempt:
                try:
                    queues = await self._route(first.topic, attempt > 0)
                except RockmqError as e:
                    if not e.retriable:
                        raise
                    last = e
                    attempt += 1
                    continue
                brokers = {q.broker for q in queues}
                queue = self.pick(queues, first, arg, tried)
            attempt += 1
            tried.add(queue.broker)
            started = time.monotonic()
            try:
                reply = await self.session.unary(aim(request, queue), "SendMessage", request)
            except RockmqError as e:
                self.faults.record(queue.broker, 0, failed=e.retriable)
                if not e.retriable:
                    raise
                last = e
                log.debug("send to %s failed (attempt %d): %s", queue.broker, attempt, e)
                continue
            self.faults.record(queue.broker, (time.monotonic() - started) * 1000)
            return queue, list(reply.entries)  # with MULTIPLE_RESULTS, some entries are refusals
        assert last is not None
        raise last

    def attempt_blocking(self, request: rpc.SendMessageRequest, queue: Queue) -> SendReceipt:
        """One attempt to send a lone message to `queue`, waited for in the calling thread (the
        sync Producer's first try); raises what the attempt raised."""
        started = time.monotonic()
        try:
            reply = self.session.unary_blocking(aim(request, queue), "SendMessage", request)
        except RockmqError as e:
            self.faults.record(queue.broker, 0, failed=e.retriable)
            raise
        self.faults.record(queue.broker, (time.monotonic() - started) * 1000)
        try:
            return receipts(queue, reply.entries, request.messages)[0]
        except BatchSendError as e:
            raise e.errors[0] from None

    def pick(self, queues: Sequence[Queue], message: Message, arg: Any, tried: set[str]) -> Queue:
        """The queue for `message`: its group's, the one a naming selector names, or a spreading
        selector's pick among brokers not tried yet and not paused."""
        if not queues:
            raise from_status(pb.TOPIC_NOT_FOUND, f"topic {message.topic!r} has no queues")
        if message.message_group is not None:
            return by_hash(queues, message, arg)
        if not spreads(self.selector):  # it names a queue: the whole route, as the selector was told
            return self.selector(queues, message, arg)
        fresh = [q for q in queues if q.broker not in tried]
        healthy = [q for q in fresh or queues if self.faults.available(q.broker)]
        return self.selector(healthy or fresh or queues, message, arg)


def aim(request: rpc.SendMessageRequest, queue: Queue) -> str:
    """Name `queue` in the request's messages (the broker stores them there); -> its broker's endpoint."""
    for m in request.messages:
        m.system_properties.queue_id = queue.queue_id
    return queue.endpoint


def receipts(queue: Queue, entries: Sequence[rpc.SendResultEntry], sent: Sequence[pb.Message]) -> list[SendReceipt]:
    """The receipts of a reply to the `sent` messages; BatchSendError if the broker refused some
    entries (MULTIPLE_RESULTS). A PRIORITY message's queue is its level's, which the broker picks
    (docs/priority.md): its receipt says -1."""
    if len(entries) != len(sent):
        raise from_status(pb.INTERNAL_ERROR, f"the broker answered {len(entries)} entries for {len(sent)} messages")
    found = [SendReceipt(e.message_id, queue.topic, queue.broker, e.offset, e.transaction_id, e.recall_handle,
                         queue_id=-1 if m.system_properties.HasField("priority") else queue.queue_id)
             if e.status.code == pb.OK else None for e, m in zip(entries, sent, strict=True)]
    errors = {i: from_status(e.status.code, e.status.message) for i, e in enumerate(entries) if e.status.code != pb.OK}
    if errors:
        raise BatchSendError(found, errors)
    return cast(list[SendReceipt], found)


class _Pauses:
    """A delivery's pauses between retries: doubling from the first of RETRY_PAUSE_S to the last,
    none past `deadline`."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.pause = RETRY_PAUSE_S[0]

    def time_left(self) -> bool:
        return time.monotonic() < self.deadline

    async def next(self) -> None:
        await asyncio.sleep(max(0.0, min(self.pause, self.deadline - time.monotonic())))
        self.pause = min(self.pause * 2, RETRY_PAUSE_S[1])


def _settle(future: asyncio.Future[SendReceipt], receipt: SendReceipt | None, error: BaseException | None) -> None:
    """Answer one caller (unless it stopped waiting)."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(cast(SendReceipt, receipt))
