"""AsyncPushConsumer: hand every message of the subscribed topics to a handler, in one of three modes.

- `clustering` (default; origins 004): the group's members find each other through the broker
  (heartbeats, then ListMembers), and each one reads the queues a strategy (allocation.py) gives it,
  again every `rebalance_s` and as soon as a member joins or leaves. Reading is PullMessage with
  long polling; progress is committed with UpdateOffset every `commit_interval_s`, on rebalance
  and on close. The committed offset is the smallest one still being processed (a sliding window),
  so a slow message never lets the commit skip it. A message whose handler fails is handed back to
  the broker: a copy goes to the group's retry topic `%RETRY%<group>`, delayed by `retry_backoff_s`
  (the broker moves it to `%DLQ%<group>` once the group's attempts are used up), so it never blocks
  the window. The consumer reads its retry topic like any other.
- `broadcast`: every member reads every queue; offsets stay in a local file (`offset_file`). A
  failing message is retried in place up to `max_attempts` times, then logged and skipped.
- `pop`: no rebalance. Messages are received with POP and acked; a failed one comes back after its
  backoff; a member that hangs loses its messages to the others once their invisible time ends.
  A receive takes `batch_size` messages while only `concurrency` handlers run, and a batch is acked
  in one request once its last handler is done, so a message may wait longer than its invisible
  time: every half invisible time a batch still held acks what finished and renews the invisible
  time of the rest (`_Held`), so nothing that waits here comes back as a duplicate.

`orderly=True` processes one message at a time per queue, in offset order (retrying a failed one
in place before moving on); otherwise up to `concurrency` handlers run at once. Handlers are async
functions or plain functions (run on a pool of `concurrency` threads). Flow control: at most
`max_cached_messages` / `max_cached_bytes` (of bodies) pulled and unfinished per queue; each pull
is sized to what is left (flow.py), and past either limit pulling that queue pauses. Delivery is
at least once (a rebalance or crash may repeat messages past the last commit): pair it with
`rockmq.client.idempotent` where duplicates matter.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from rockmq.auth.credentials import Credentials
from rockmq.client.allocation import Strategy, average
from rockmq.client.consumer import AsyncSimpleConsumer, Filter
from rockmq.client.errors import RockmqError, from_status
from rockmq.client.flow import fitting, pull_size, typical
from rockmq.client.lanes import lane_filter
from rockmq.client.limits import HEARTBEAT_S, INVISIBLE_S, LONG_POLL_S, PUSH_BATCH_SIZE, REQUEST_TIMEOUT_S
from rockmq.client.message import Message, ReceivedMessage
from rockmq.client.offsets import LocalOffsetStore, OffsetWindow, offset_key
from rockmq.client.pull import AsyncPullConsumer
from rockmq.client.queues import Queue, queue_order
from rockmq.client.session import Endpoints
from rockmq.client.transport import GrpcTransport, Transport
from rockmq.protocol import admin, pb, rpc
from rockmq.protocol.channels import Tls
from rockmq.protocol.conventions import (
    DEFAULT_MAX_ATTEMPTS,
    ORIGIN_MESSAGE_ID,
    ORIGIN_TOPIC,
    RECONSUME_TIMES,
    RETRY_LADDER_S,
    RETRY_PREFIX,
    check_lane,
    lane_group,
    retry_topic,
)
from rockmq.protocol.message_id import new_message_id

log = logging.getLogger(__name__)

Handler = Callable[[ReceivedMessage], Any]
MODES = ("clustering", "broadcast", "pop")
PAUSE_S = 1.0  # longest sleep of a paused puller, and the wait after a failed pull
INTERNAL_PROPERTIES = (ORIGIN_TOPIC, ORIGIN_MESSAGE_ID, RECONSUME_TIMES)
RENEW_AT = 0.5  # POP: a batch still held settles and renews when this share of the invisible time has passed


@dataclass(frozen=True)
class QueueStats:
    position: int  # next offset to pull
    committed: int  # last offset committed
    cached: int  # messages pulled and not finished
    cached_bytes: int
    in_flight: int


@dataclass(eq=False)
class _Owned:
    """A queue this consumer reads: where it stands and what it holds."""

    queue: Queue
    position: int
    committed: int
    window: OffsetWindow = field(default_factory=OffsetWindow)
    cached: int = 0
    cached_bytes: int = 0
    typical_body: float = 0.0  # running typical body size of its messages (sizes its pulls)
    stopped: bool = False
    space: asyncio.Event = field(default_factory=asyncio.Event)  # set when the cache drops below the limits
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # orderly: set when the buffer gets a message
    buffer: deque[ReceivedMessage] = field(default_factory=deque)  # orderly: messages in offset order
    running: int = 0  # its messages inside a handler (or its retries) right now
    puller: asyncio.Task[None] | None = None
    worker: asyncio.Task[None] | None = None  # orderly: the queue's one worker

    def released(self) -> bool:
        """`stopped`, read anew: a call, so no reader (or type checker) takes it as unchanged
        across the awaits of a loop that began with it False."""
        return self.stopped

    def commit_point(self) -> int:
        return self.window.committable() if self.window.in_flight else self.position  # type: ignore[return-value]


class _Held:
    """One POP receive, from the receive until each of its messages is acked or sent back.

    The broker hides a message for the invisible time from the receive on, but here it may wait
    for a free handler (a receive brings `batch_size`, two loops receive, and `concurrency` handlers
    run) and, finished, for the rest of its batch (one ack request for the batch: the fast path).
    So while a batch is held, a round every `invisible_s * RENEW_AT` (`AsyncPushConsumer._round`)
    acks what finished and renews the rest: what waits for a handler, and what runs, for its first
    `invisible_s` in the handler (one stuck longer loses its message to the group, as before). A
    batch that finishes before the first round (fast handlers) costs a timer and nothing else."""

    __slots__ = ("done", "messages", "round", "settled", "started", "timer", "verdicts")

    def __init__(self, messages: list[ReceivedMessage]) -> None:
        n = len(messages)
        self.messages = messages  # with their latest receipt handles
        self.started = [0.0] * n  # when its handler began (monotonic); 0.0 while it waits for one
        self.verdicts: list[bool | None] = [None] * n  # its handler's verdict, once finished
        self.settled = [False] * n  # acked or sent back by a round
        self.timer: asyncio.TimerHandle | None = None  # the next round
        self.round: asyncio.Task[None] | None = None  # the last round started
        self.done = False  # every handler finished: no more rounds

    def take_finished(self) -> tuple[list[ReceivedMessage], list[ReceivedMessage]]:
        """The finished messages not yet settled, (successes, failures), now counted as settled."""
        ok: list[ReceivedMessage] = []
        failed: list[ReceivedMessage] = []
        for i, verdict in enumerate(self.verdicts):
            if verdict is not None and not self.settled[i]:
                self.settled[i] = True
                (ok if verdict else failed).append(self.messages[i])
        return ok, failed

    def to_renew(self, now: float, longest_run_s: float) -> list[int]:
        """The unfinished messages whose invisible time to extend: waiting, or in a handler for
        less than `longest_run_s`."""
        return [i for i, started in enumerate(self.started)
                if self.verdicts[i] is None and (not started or now - started < longest_run_s)]

    def stop(self) -> None:
        """No more rounds (a round already running finishes: await `round`)."""
        self.done = True
        if self.timer is not None:
            self.timer.cancel()


def presented(message: ReceivedMessage) -> ReceivedMessage:
    """A pulled message as its handler should see it: from a retry topic, with its first topic and
    id and the delivery attempt counted across send-backs."""
    props = message.properties
    if not message.topic.startswith(RETRY_PREFIX) or ORIGIN_TOPIC not in props:
        return message
    failures = props.get(RECONSUME_TIMES, "0")
    return message.replace(topic=props[ORIGIN_TOPIC], message_id=props.get(ORIGIN_MESSAGE_ID, message.message_id),
                           delivery_attempt=(int(failures) if failures.isdigit() else 0) + 1,
                           properties={k: v for k, v in props.items() if k not in INTERNAL_PROPERTIES})


def send_back_copy(message: ReceivedMessage, group: str, failures: int, delay_ms: int) -> Message:
    """The copy of a failed message that goes to the group's retry topic (the broker decides when
    it is a dead letter instead)."""
    props = dict(message.properties)
    props.update({ORIGIN_TOPIC: message.topic, ORIGIN_MESSAGE_ID: message.message_id, RECONSUME_TIMES: str(failures)})
    return Message(retry_topic(group), message.body, tag=message.tag, keys=message.keys, properties=props, delay=delay_ms)


class AsyncPushConsumer:
    def __init__(self, endpoint: Endpoints, group: str, subscriptions: Mapping[str, str | Filter], handler: Handler, *,
                 mode: str = "clustering", strategy: Strategy = average, orderly: bool = False, concurrency: int = 16,
                 max_cached_messages: int = 1000, max_cached_bytes: int = 100 * 1024 * 1024, batch_size: int = PUSH_BATCH_SIZE,
                 poll_s: float = LONG_POLL_S, heartbeat_s: float = HEARTBEAT_S, rebalance_s: float = 20.0,
                 commit_interval_s: float = 5.0, retry_backoff_s: Sequence[float] = RETRY_LADDER_S,
                 max_attempts: int | None = None, start_from: str = "earliest", offset_file: str | None = None,
                 invisible_s: float = INVISIBLE_S, lane: str | None = None, lane_fallback: bool = True,
                 shutdown_timeout_s: float = 10.0, request_timeout: float = REQUEST_TIMEOUT_S, client_id: str | None = None,
                 transport: Transport | None = None, credentials: Credentials | None = None,
                 tls: Tls | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if mode == "broadcast" and not offset_file:
            raise ValueError("broadcast mode keeps offsets locally: give offset_file")
        if start_from not in ("earliest", "latest"):
            raise ValueError(f"start_from must be 'earliest' or 'latest', not {start_from!r}")
        if min(concurrency, max_cached_messages, max_cached_bytes, batch_size) < 1 or not retry_backoff_s:
            raise ValueError("concurrency, cache limits and batch_size must be positive; retry_backoff_s non-empty")
        if not subscriptions:
            raise ValueError("subscribe to at least one topic")
        self.group = group
        self.lane = check_lane(lane)
        # POP: the broker routes lanes within the group's one state; offsets: each lane keeps its own
        self.state_group = group if mode == "pop" else lane_group(group, self.lane)
        self.subscriptions = {t: f if isinstance(f, Filter) else Filter.tag(f) for t, f in subscriptions.items()}
        self.handler = handler
        self.mode, self.strategy, self.orderly = mode, strategy, orderly
        self.concurrency, self.batch_size = concurrency, batch_size
        self.max_cached_messages, self.max_cached_bytes = max_cached_messages, max_cached_bytes
        self.poll_s, self.heartbeat_s, self.rebalance_s = poll_s, heartbeat_s, rebalance_s
        self.commit_interval_s, self.shutdown_timeout_s = commit_interval_s, shutdown_timeout_s
        self.retry_backoff_s = tuple(retry_backoff_s)
        self.max_attempts = max_attempts
        self.start_from, self.invisible_s, self.lane_fallback = start_from, invisible_s, lane_fallback
        self._transport = transport or GrpcTransport(tls)  # shared by the pull and POP consumers
        self._owns_transport = transport is None
        self._pull = AsyncPullConsumer(endpoint, group, request_timeout=request_timeout, client_id=client_id,
                                       lane=self.lane, transport=self._transport, credentials=credentials)
        self.credentials = credentials
        self.session = self._pull.session
        self.client_id = self.session.client_id
        self._offsets_file = LocalOffsetStore(offset_file) if offset_file else None
        self._local_offsets: dict[str, int] = {}
        self._owned: dict[Queue, _Owned] = {}
        self._wanted: set[Queue] = set()  # what the last rebalance gave this member
        self._members: tuple[str, ...] = ()
        self._live_lanes: frozenset[str] = frozenset()
        self._endpoints: set[str] = set(self.session.access_points)
        self._loops: list[asyncio.Task[None]] = []
        self._workers: list[asyncio.Task[None]] = []  # the handler pool (orderly: per queue instead; POP: receive loops)
        # Pulled messages waiting for a free handler. Bounded by flow control: at most
        # max_cached_messages per owned queue are pulled and unfinished.
        self._work: asyncio.Queue[tuple[_Owned, ReceivedMessage]] = asyncio.Queue()
        self._simple: AsyncSimpleConsumer | None = None  # POP mode
        self._receiving: set[asyncio.Task[Any]] = set()  # POP loops waiting in a receive (nothing to finish)
        self._slots: asyncio.Semaphore | None = None
        self._rebalancing: asyncio.Lock | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._is_async = inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(type(handler).__call__)
        self._host = socket.gethostname()
        self._started = self._closed = False

    async def __aenter__(self) -> AsyncPushConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Join the group, take this member's queues and start consuming."""
        if self._started:
            return
        self._started = True
        self._slots = asyncio.Semaphore(self.concurrency)
        self._rebalancing = asyncio.Lock()
        if not self._is_async:
            self._executor = ThreadPoolExecutor(self.concurrency, thread_name_prefix="rockmq-consume")
        if self.max_attempts is None and (self.orderly or self.mode == "broadcast"):
            self.max_attempts = await self._group_max_attempts()
        if self._offsets_file is not None:
            self._local_offsets = await asyncio.to_thread(self._offsets_file.load)
        for topic in self.subscriptions:  # heartbeat to every broker of the topics from the start,
            with contextlib.suppress(RockmqError):  # so members that joined through others see this one
                self._endpoints.update(q.endpoint for q in await self._pull.queues(topic))
        await self._heartbeat()
        if self.mode == "pop":
            self._simple = AsyncSimpleConsumer(self.session.access_points, self.state_group, dict(self.subscriptions),
                                               await_s=self.poll_s, request_timeout=self.session.request_timeout_s,
                                               client_id=self.client_id, lane=self.lane, transport=self._transport,
                                               credentials=self.credentials)
            loops = max(2, -(-self.concurrency // self.batch_size))  # receives in flight while handlers run
            self._workers = [asyncio.create_task(self._pop_loop(self._simple), name="rockmq-pop") for _ in range(loops)]
        else:
            if not self.orderly:
                self._workers = [asyncio.create_task(self._work_loop(), name="rockmq-handler")
                                 for _ in range(self.concurrency)]
            await self._rebalance()
            self._loops.append(asyncio.create_task(self._commit_loop(), name="rockmq-commit"))
        self._loops.append(asyncio.create_task(self._membership_loop(), name="rockmq-membership"))

    async def close(self) -> None:
        """Stop pulling, let running handlers finish (up to shutdown_timeout_s), commit, leave the group."""
        if self._closed:
            return
        self._closed = True
        for task in self._loops:
            task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        owned = list(self._owned.values())
        await self._stop(owned, self.shutdown_timeout_s)
        if self.mode == "pop" and self._workers:
            for task in self._receiving:
                task.cancel()
            await asyncio.wait(self._workers, timeout=self.shutdown_timeout_s)  # the others settle their batch
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        if self._simple is not None:
            await self._simple.close()
        await self._commit_all(owned)
        await asyncio.gather(*(self._leave(e) for e in self._endpoints), return_exceptions=True)
        await self._pull.close()
        if self._owns_transport:
            await self._transport.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    # -- what the application sees -----------------------------------------------------------

    @property
    def assignment(self) -> list[Queue]:
        """The queues this member reads now (clustering: its share; broadcast: all)."""
        return sorted(self._owned, key=queue_order)

    def stats(self) -> dict[Queue, QueueStats]:
        return {q: QueueStats(o.position, o.committed, o.cached, o.cached_bytes, o.window.in_flight)
                for q, o in self._owned.items()}

    # -- membership and rebalance ------------------------------------------------------------

    async def _membership_loop(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(self.heartbeat_s)
            try:
                await self._heartbeat()
                if self.mode == "pop":
                    await self._fetch_members()
                    continue
                before = (self._members, self._live_lanes)
                await self._fetch_members()
                if (self._members, self._live_lanes) != before or time.monotonic() - last >= self.rebalance_s:
                    await self._rebalance()
                    last = time.monotonic()
            except RockmqError as e:
                log.warning("group %s: membership round failed: %s", self.group, e)
            except Exception:
                log.exception("group %s: membership round failed", self.group)

    async def _heartbeat(self) -> None:
        request = rpc.HeartbeatRequest(group=pb.Resource(name=self.group), client_type=pb.PUSH_CONSUMER)
        replies = await asyncio.gather(*(self.session.unary(e, "Heartbeat", request) for e in sorted(self._endpoints)),
                                       return_exceptions=True)
        errors = [r for r in replies if isinstance(r, BaseException)]
        if len(errors) == len(replies):
            raise errors[0]

    async def _fetch_members(self) -> None:
        """The group's members in this lane (sorted ids) and the lanes that have live members."""
        last: RockmqError | None = None
        for endpoint in [*self.session.access_points, *sorted(self._endpoints - set(self.session.access_points))]:
            try:
                reply = await self.session.admin(endpoint, "ListMembers", admin.GroupRequest(name=self.group, local=True))
            except RockmqError as e:
                last = e
                continue
            mine = {m.client_id for m in reply.members if (m.lane or None) == self.lane}
            self._members = tuple(sorted(mine | {self.client_id}))
            self._live_lanes = frozenset(m.lane for m in reply.members if m.lane)
            return
        assert last is not None
        raise last

    def _topics_read(self) -> list[str]:
        if self.mode == "clustering":
            return [*self.subscriptions, retry_topic(self.state_group)]
        return list(self.subscriptions)

    async def _rebalance(self) -> None:
        assert self._rebalancing is not None
        async with self._rebalancing:
            if self._closed:
                return
            if self.mode == "clustering" and not self._members:
                await self._fetch_members()
            wanted: set[Queue] = set()
            for topic in self._topics_read():
                try:
                    queues = await self._pull.queues(topic)
                except RockmqError as e:  # keep what we have until the route is back
                    log.warning("group %s: no route for %s: %s", self.group, topic, e)
                    wanted.update(q for q in self._owned if q.topic == topic)
                    continue
                self._endpoints.update(q.endpoint for q in queues)
                if self.mode == "broadcast":
                    wanted.update(queues)
                    continue
                try:
                    wanted.update(self.strategy(self.client_id, self._members, queues))
                except ValueError as e:
                    log.error("group %s: allocation strategy refused topic %s: %s", self.group, topic, e)
            self._wanted = wanted
            for queue in [q for q in self._owned if q not in wanted]:
                await self._release(queue)
            new = sorted(wanted - self._owned.keys(), key=queue_order)
            if new and len(self._members) > 1 and self.mode == "clustering":
                # Another member may still hold these: it lets go (and commits) when it sees the same
                # change, within a heartbeat. Taking them after that re-reads far fewer messages.
                task = asyncio.create_task(self._acquire_later(new, self.heartbeat_s * 1.5))
                self._loops.append(task)
                task.add_done_callback(self._loops.remove)
            else:
                await self._acquire_all(new)

    async def _acquire_later(self, queues: list[Queue], delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        assert self._rebalancing is not None
        async with self._rebalancing:
            if not self._closed:
                await self._acquire_all([q for q in queues if q in self._wanted and q not in self._owned])

    async def _acquire_all(self, queues: list[Queue]) -> None:
        for queue in queues:
            try:
                await self._acquire(queue)
            except RockmqError as e:
                log.warning("group %s: cannot take %s/%s:%d yet: %s", self.group, queue.topic, queue.broker,
                            queue.queue_id, e)

    async def _acquire(self, queue: Queue) -> None:
        if self._offsets_file is not None:
            start = self._local_offsets.get(offset_key(queue))
        else:
            start = await self._pull.committed(queue)
        if start is None:
            start = await self._pull.offset_at(queue, self.start_from)
        owned = self._owned[queue] = _Owned(queue, start, start)
        owned.window.start(start)
        owned.puller = asyncio.create_task(self._pull_loop(owned), name=f"rockmq-pull-{queue.topic}-{queue.queue_id}")
        if self.orderly:
            owned.worker = asyncio.create_task(self._orderly_loop(owned), name="rockmq-orderly")

    async def _release(self, queue: Queue) -> None:
        """Hand a queue over: stop pulling, give running handlers a moment, commit where we are."""
        owned = self._owned.pop(queue)
        await self._stop([owned], min(self.shutdown_timeout_s, self.commit_interval_s))
        await self._commit_all([owned])

    async def _stop(self, owned: list[_Owned], grace_s: float) -> None:
        """Stop pulling at once; running handlers get `grace_s` to finish. Whatever is unfinished
        then stays uncommitted, so it is delivered again (to this queue's next owner)."""
        for o in owned:
            o.stopped = True
            if o.puller is not None:
                o.puller.cancel()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        while any(o.running for o in owned) and loop.time() < deadline:
            await asyncio.sleep(0.02)
        tasks = [t for o in owned for t in (o.puller, o.worker) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _leave(self, endpoint: str) -> None:
        request = rpc.NotifyClientTerminationRequest(group=pb.Resource(name=self.group))
        await self.session.unary(endpoint, "NotifyClientTermination", request, timeout=1.0)

    async def _group_max_attempts(self) -> int:
        try:
            info = await self.session.admin(self.session.access_point, "DescribeGroup",
                                              admin.GroupRequest(name=self.state_group, local=True))
            return info.max_attempts or DEFAULT_MAX_ATTEMPTS
        except RockmqError:
            return DEFAULT_MAX_ATTEMPTS

    # -- pulling -----------------------------------------------------------------------------

    def _filter_for(self, topic: str) -> Filter:
        if topic not in self.subscriptions:  # the retry topic: filtered at first delivery already
            return Filter.tag()
        return lane_filter(self.subscriptions[topic], self.lane, self.lane_fallback)

    async def _pull_loop(self, owned: _Owned) -> None:
        while not owned.stopped:
            owned.space.clear()
            room = min(self.batch_size, self.max_cached_messages - owned.cached)
            bytes_left = self.max_cached_bytes - owned.cached_bytes
            if room <= 0 or bytes_left <= 0:
                await self._wait_for_space(owned)
                continue
            try:
                result = await self._pull.pull(owned.queue, owned.position,
                                               max_messages=pull_size(room, bytes_left, owned.typical_body),
                                               filter=self._filter_for(owned.queue.topic), poll_s=self.poll_s,
                                               max_bytes=bytes_left)
            except RockmqError as e:
                if e.code == pb.ILLEGAL_OFFSET:
                    await self._reset_position(owned, e)
                else:
                    log.warning("pull %s/%s:%d failed: %s", owned.queue.topic, owned.queue.broker, owned.queue.queue_id, e)
                    await asyncio.sleep(PAUSE_S)
                continue
            if owned.released():
                return
            sizes = [len(m.body) for m in result.messages]
            owned.typical_body = typical(owned.typical_body, sizes)
            taken = fitting(sizes, self.max_cached_bytes - owned.cached_bytes, owned.cached == 0)
            for message in result.messages[:taken]:
                self._dispatch(owned, presented(message))
            if taken < len(result.messages):  # the rest is pulled again once there is room
                owned.position = result.messages[taken].offset
                if not taken:
                    await self._wait_for_space(owned)
            else:
                owned.position = result.next_offset

    @staticmethod
    async def _wait_for_space(owned: _Owned) -> None:
        """Until a message of the queue finishes (or PAUSE_S)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(owned.space.wait(), PAUSE_S)

    async def _reset_position(self, owned: _Owned, error: RockmqError) -> None:
        """The position left the queue's range (retention removed messages, or the queue was recreated)."""
        lo = await self._pull.offset_at(owned.queue, "earliest")
        target = lo if owned.position < lo else await self._pull.offset_at(owned.queue, "latest")
        log.error("group %s: offset %d of %s/%s:%d is gone (%s); continuing at %d", self.group, owned.position,
                  owned.queue.topic, owned.queue.broker, owned.queue.queue_id, error, target)
        owned.position = target
        owned.window.start(target)

    def _dispatch(self, owned: _Owned, message: ReceivedMessage) -> None:
        owned.window.add(message.offset)
        owned.cached += 1
        owned.cached_bytes += len(message.body)
        if self.orderly:
            owned.buffer.append(message)
            owned.ready.set()
        else:
            self._work.put_nowait((owned, message))

    async def _work_loop(self) -> None:
        while True:
            owned, message = await self._work.get()
            if not owned.stopped:  # a released queue's messages stay uncommitted for its next owner
                await self._deliver(owned, message)

    async def _orderly_loop(self, owned: _Owned) -> None:
        while not owned.stopped:
            if not owned.buffer:
                owned.ready.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(owned.ready.wait(), PAUSE_S)
                continue
            if await self._deliver(owned, owned.buffer[0]):
                owned.buffer.popleft()

    # -- processing --------------------------------------------------------------------------

    async def _run(self, message: ReceivedMessage, held: _Held | None = None, i: int = 0) -> bool:
        """The handler's verdict: True unless it raised. Message `i` of a held POP batch also notes
        there when its handler began and its verdict, for the batch's renewal rounds (here, not in
        a wrapper: a coroutine more per message is a measurable share of a fast handler's cost)."""
        assert self._slots is not None
        async with self._slots:
            if held is not None:
                held.started[i] = time.monotonic()
            try:
                if self._is_async:
                    await self.handler(message)
                else:
                    await asyncio.get_running_loop().run_in_executor(self._executor, self.handler, message)
                ok = True
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("handler failed on message %s (attempt %d) of %s", message.message_id,
                              message.delivery_attempt, message.topic)
                ok = False
            if held is not None:
                held.verdicts[i] = ok
            return ok

    def _backoff_s(self, failures: int) -> float:
        return self.retry_backoff_s[min(failures, len(self.retry_backoff_s)) - 1]

    async def _deliver(self, owned: _Owned, message: ReceivedMessage) -> bool:
        """Run the handler until the message is done with (consumed, handed back or given up) ->
        True; False if the queue was taken away first (the message stays uncommitted)."""
        owned.running += 1
        try:
            if not await self._settle(owned, message):
                return False
        finally:
            owned.running -= 1
        if owned.window.done(message.offset):
            owned.cached -= 1
            owned.cached_bytes -= len(message.body)
            owned.space.set()
        return True

    async def _settle(self, owned: _Owned, message: ReceivedMessage) -> bool:
        while not owned.stopped:
            if await self._run(message):
                return True
            failures = message.delivery_attempt
            if self.mode == "clustering" and not self.orderly:
                if await self._send_back(message, failures, self._backoff_s(failures)):
                    return True
            elif failures >= (self.max_attempts or DEFAULT_MAX_ATTEMPTS):
                if self.mode == "broadcast":
                    log.error("group %s: message %s failed %d times; broadcast consumers skip it", self.group,
                              message.message_id, failures)
                    return True
                while not owned.released():  # orderly: a dead letter now (the broker decides)
                    if await self._send_back(message, failures, 0):
                        return True
                    await asyncio.sleep(PAUSE_S)
                return False
            await asyncio.sleep(self._backoff_s(failures))
            message = message.replace(delivery_attempt=failures + 1)
        return False

    async def _send_back(self, message: ReceivedMessage, failures: int, delay_s: float) -> bool:
        """Give a failed message to the broker for redelivery (or its dead-letter queue); False if
        the broker could not take it (then it is retried here)."""
        copy = send_back_copy(message, self.state_group, failures, int(delay_s * 1000))
        request = rpc.SendMessageRequest(messages=[copy.to_pb(new_message_id(), self._host, int(time.time() * 1000))])
        try:
            reply = await self.session.unary(message.endpoint, "SendMessage", request)
            entry = reply.entries[0]
            if entry.status.code != pb.OK:
                raise from_status(entry.status.code, entry.status.message)
            return True
        except RockmqError as e:
            log.warning("group %s: cannot hand message %s back to %s: %s", self.group, message.message_id,
                        message.broker, e)
            return False

    # -- commits -----------------------------------------------------------------------------

    async def _commit_loop(self) -> None:
        while True:
            await asyncio.sleep(self.commit_interval_s)
            try:
                await self._commit_all(list(self._owned.values()))
            except Exception:
                log.exception("group %s: commit round failed", self.group)

    async def _commit_all(self, owned: list[_Owned]) -> None:
        changed = [(o, o.commit_point()) for o in owned if o.commit_point() != o.committed]
        if not changed:
            return
        if self._offsets_file is not None:
            for o, offset in changed:
                self._local_offsets[offset_key(o.queue)] = o.committed = offset
            await asyncio.to_thread(self._offsets_file.save, dict(self._local_offsets))
            return
        for o, offset in changed:
            try:
                await self._pull.commit(o.queue, offset)
                o.committed = offset
            except RockmqError as e:
                log.warning("group %s: commit of %s:%d failed: %s", self.group, o.queue.topic, o.queue.queue_id, e)

    # -- POP mode ----------------------------------------------------------------------------

    async def _pop_loop(self, simple: AsyncSimpleConsumer) -> None:
        """Receive a batch, run its handlers (within the `concurrency` slots), ack the successes in
        one request, send the failures back after their backoff; several of these run at once."""
        me = asyncio.current_task()
        assert me is not None
        while not self._closed:
            self._receiving.add(me)
            try:
                received = await simple.receive(self.batch_size, self.invisible_s)
            except RockmqError as e:
                log.warning("group %s: receive failed: %s", self.group, e)
                await asyncio.sleep(PAUSE_S)
                continue
            finally:
                self._receiving.discard(me)
            if received:
                await self._consume_held(simple, _Held(received))

    async def _consume_held(self, simple: AsyncSimpleConsumer, held: _Held) -> None:
        """Run a received batch's handlers, with renewal rounds while it is held, then settle it."""
        held.timer = asyncio.get_running_loop().call_later(self.invisible_s * RENEW_AT, self._start_round, simple, held)
        try:
            await asyncio.gather(*(self._run(m, held, i) for i, m in enumerate(held.messages)))
        except asyncio.CancelledError:  # closing: what is unsettled comes back after its invisible time
            held.stop()
            if held.round is not None:
                held.round.cancel()
            raise
        held.stop()
        if held.round is not None:  # a round in flight renews handles: ack with the new ones
            await held.round
        await self._settle_held(simple, held)

    def _start_round(self, simple: AsyncSimpleConsumer, held: _Held) -> None:
        held.round = asyncio.create_task(self._round(simple, held), name="rockmq-pop-renew")

    async def _round(self, simple: AsyncSimpleConsumer, held: _Held) -> None:
        """Half an invisible time into holding a batch (and every half one after): renew what has not
        finished, ack what had, and come again unless the batch is done. Renewal first: a message
        that finishes meanwhile was renewed already (acked with the new handle at the next round)."""
        loop = asyncio.get_running_loop()
        began = loop.time()
        await self._renew(simple, held)
        await self._settle_held(simple, held)
        if not held.done:
            held.timer = loop.call_at(began + self.invisible_s * RENEW_AT, self._start_round, simple, held)

    async def _renew(self, simple: AsyncSimpleConsumer, held: _Held) -> None:
        """Extend the invisible time of the held messages not finished (each its own request: only
        messages that waited half an invisible time pay for it)."""
        renew = held.to_renew(time.monotonic(), self.invisible_s)
        replies = await asyncio.gather(*(simple.change_invisible_duration(held.messages[i], self.invisible_s)
                                         for i in renew), return_exceptions=True)
        for i, reply in zip(renew, replies, strict=True):
            if isinstance(reply, ReceivedMessage):
                held.messages[i] = reply
            elif isinstance(reply, RockmqError):  # too late, or the broker is gone: it comes again
                log.warning("group %s: cannot renew the invisible time of %s: %s", self.group,
                            held.messages[i].message_id, reply)
            else:
                raise reply

    async def _settle_held(self, simple: AsyncSimpleConsumer, held: _Held) -> None:
        """Ack the finished successes in one request; send the failures back after their backoff."""
        done, failed = held.take_finished()
        if not done and not failed:
            return
        try:
            refused = await simple.ack_many(done)
            await asyncio.gather(*(simple.change_invisible_duration(m, self._backoff_s(m.delivery_attempt))
                                   for m in failed))
        except RockmqError as e:  # they come back when their invisible time ends
            log.warning("group %s: settling %d messages failed: %s", self.group, len(done) + len(failed), e)
            return
        for m, error in refused:
            log.warning("group %s: ack of %s refused (%s): it outlived its invisible time and comes again",
                        self.group, m.message_id, error)
