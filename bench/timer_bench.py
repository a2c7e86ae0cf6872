"""Benchmark delayed (timer) messages on a running rockmq broker: how late, how bursty, how costly.

It starts nothing: start a broker, then point this at it (pass its pid for RSS/CPU figures):

    PYTHONPATH=src python bench/timer_bench.py --endpoint 127.0.0.1:8081 --broker-pid <PID>
    PYTHONPATH=src python bench/timer_bench.py --scenario lateness --pending 20000 --messages 2000  # a quick try

Scenarios (`--scenario`, default all of them in this order):

- lateness: make sure `--pending` delayed messages are parked 1-2 h ahead (batched, many in
  flight; `--pending 0` skips it), then send `--messages` delayed messages each due 100 ms-30 s
  ahead while consumers already long-poll their topic, receiving and acking. Lateness = receive
  wall time - the received message's delivery_timestamp. Target: p99 <= 20 ms, max <= 100 ms.
  A message not received within due + `--grace` s counts as missing.
- burst: `--burst` messages all due in the same millisecond, far enough ahead that every send
  has completed by then; how long after that millisecond the last one arrives. Target: <= 3 s.
- schedule-cost: batched produce rate (`--batch` per request, like `rockmq bench`'s produce-batch)
  of normal messages, then of delayed ones (due 1 h ahead), `--duration` s each.
  Target: delayed rate >= 0.67 x normal, i.e. a delayed send costs at most 1.5x a normal one.

The measured topics and groups get fresh names every run (`<topic>-lateness-<run id>`...), so
messages of earlier runs never leak into a figure. The pending messages go to one fixed topic,
`<topic>-pending`, and stay there until due; a run sends only what is missing to `--pending`
pending timers at the broker (Admin.GetTimerStats; a broker without it gets all). Nothing is held
per pending message: requests are generated as they are sent, and the measured messages are
tracked in two bytes each. The client shares the machine with the broker; its own CPU is
printed next to the broker's so a figure can be judged. Exit status: 0 when every message was
stored and received, 1 when a request failed or a message went missing, 3 when no broker answers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import grpc

from rockmq.bench.jobs import Tally
from rockmq.bench.options import Options
from rockmq.bench.probe import broker_sample
from rockmq.bench.report import Figures, figures_of, percentile
from rockmq.bench.wire import MESSAGE_NOT_FOUND, OK, Client, SetupError, ack, ack_batched, describe
from rockmq.bench.workers import run_loop
from rockmq.protocol import admin, admin_grpc, pb
from rockmq.protocol import batch as batch_pb
from rockmq.protocol import rpc as svc

SCENARIOS = ("lateness", "burst", "schedule-cost")
RECEIVERS = ("batch", "stream")
PENDING_DELAY_MS = (3_600_000, 7_200_000)  # parked messages: due 1-2 h ahead, spread over the key space
COST_DELAY_MS = 3_600_000  # schedule-cost: delayed messages due 1 h ahead
INVISIBLE_MS = 60_000  # far longer than any ack takes: a duplicate means a real redelivery
POLL_MS = 10_000  # one long poll; a receiver re-polls at once when it ends
ERROR_PAUSE_S = 0.5  # after a failed receive, so a dead broker is not hammered
READY_TIMEOUT_S = 5.0  # receivers parked at the broker before anything is sent
SETTLE_S = 0.2  # after the last receiver asked: its long poll has reached the broker
WAIT_STEP_S = 0.02
BURST_WAIT_CAP_S = 300.0  # burst: give up this long after due even while messages still trickle in
CALIBRATION_MESSAGES = 4096  # burst without a prefill: delayed sends to size the lead time
LEAD_FACTOR, LEAD_MARGIN_S = 1.5, 5.0  # burst lead: estimated send time x 1.5 + 5 s
COST_WARMUP_S = 1.0
COST_SLICE_S = 2.0  # schedule-cost alternates normal and delayed sends in slices this long
TARGET_P99_MS, TARGET_MAX_MS = 20.0, 100.0
TARGET_BURST_S = 3.0
TARGET_COST_RATIO = 1 / 1.5
SEQUENCE_DIGITS = 16  # rockmq.bench.wire.Client ids: per-client prefix + 16 hex digits of a counter

RequestFactory = Callable[[int], svc.SendMessageRequest]


@dataclass(frozen=True)
class TimerOptions:
    """Parsed command line."""

    endpoint: str
    scenario: str
    topic: str
    group: str
    pending: int
    messages: int
    burst: int
    duration: float
    batch: int
    prefill_batch: int
    concurrency: int
    receiver: str
    receivers: int
    receive_batch: int
    min_delay_ms: int
    max_delay_ms: int
    burst_lead: float | None
    grace: float
    size: int
    rpc_timeout: float
    broker_pid: int | None
    json: bool


# --- connections and sending ----------------------------------------------------------------


def now_ms() -> int:
    """Wall-clock milliseconds, as the broker counts due times."""
    return time.time_ns() // 1_000_000


def run_id() -> str:
    """A short fresh suffix for the topic and group names of one measured run."""
    return uuid.uuid4().hex[:8]


async def connect(opts: TimerOptions, topic: str, group: str) -> Client:
    """A `rockmq.bench.wire.Client` on `topic` (QueryRoute creates it); closed again if that fails."""
    client = Client(Options(
        endpoint=opts.endpoint, topic=topic, group=group, scenario="timer", duration=opts.duration, messages=None,
        consume_messages=1, batch=opts.batch, size=opts.size, concurrency=opts.concurrency, processes=1, rate=1.0,
        rpc_timeout=opts.rpc_timeout, broker_pid=opts.broker_pid, json=opts.json, ceiling=False,
    ))
    try:
        await client.open()
    except BaseException:
        await client.close()
        raise
    return client


def delayed(client: Client, due_ms: Callable[[], int]) -> RequestFactory:
    """Requests of DELAY messages, each due at `due_ms()` (millisecond precision)."""

    def build(count: int) -> svc.SendMessageRequest:
        request = client.send_request(count)
        for message in request.messages:
            props = message.system_properties
            props.message_type = pb.DELAY
            props.delivery_timestamp.FromMilliseconds(due_ms())
        return request

    return build


def spread(low_ms: int, high_ms: int) -> Callable[[], int]:
    """Due times uniformly between `low_ms` and `high_ms` from the moment each message is built."""
    return lambda: now_ms() + random.randint(low_ms, high_ms)


async def send_request(client: Client, request: svc.SendMessageRequest, tally: Tally,
                       stored: Callable[[str], None] | None) -> None:
    """One SendMessage; `stored` hears the id of every message the broker accepted."""
    count = len(request.messages)
    tally.requests += 1
    try:
        reply = await client.stub.SendMessage(request, metadata=client.metadata, timeout=client.opts.rpc_timeout)
    except grpc.aio.AioRpcError as exc:
        tally.fail(f"SendMessage {exc.code().name}: {exc.details()}", count)
        return
    accepted = 0
    for entry in reply.entries:
        if entry.status.code == OK:
            accepted += 1
            if stored is not None:
                stored(entry.message_id)
    tally.ok += accepted
    if accepted < count:
        failed = next((e.status for e in reply.entries if e.status.code != OK), reply.status)
        tally.fail(f"SendMessage {describe(failed)}", count - accepted)


def cpu_mark(pid: int | None) -> tuple[float, float, float | None]:
    """(wall, client CPU, broker CPU) seconds now, for `cpu_percent` later."""
    sample = broker_sample(pid) if pid else None
    return time.monotonic(), time.process_time(), sample.cpu_s if sample else None


def cpu_percent(mark: tuple[float, float, float | None], pid: int | None, tally: Tally) -> None:
    """Client and broker CPU since `mark` as percentages of one core, into `tally`."""
    wall = max(time.monotonic() - mark[0], 1e-9)
    tally.client_cpu_pct = 100.0 * (time.process_time() - mark[1]) / wall
    sample = broker_sample(pid) if pid else None
    if sample and mark[2] is not None:
        tally.broker_cpu_pct = 100.0 * (sample.cpu_s - mark[2]) / wall


async def send_many(client: Client, build: RequestFactory, batch: int, concurrency: int, *,
                    total: int | None = None, seconds: float | None = None,
                    stored: Callable[[str], None] | None = None) -> Tally:
    """`concurrency` senders of `batch`-message requests until `total` are sent or `seconds` are up."""
    tally = Tally()
    remaining = total
    mark = cpu_mark(client.opts.broker_pid)
    tally.started = mark[0]
    deadline = math.inf if seconds is None else tally.started + seconds

    async def sender() -> None:
        nonlocal remaining
        while time.monotonic() < deadline:
            count = batch if remaining is None else min(batch, remaining)
            if count <= 0:
                return
            if remaining is not None:
                remaining -= count
            await send_request(client, build(count), tally, stored)

    await asyncio.gather(*(sender() for _ in range(concurrency)))
    tally.finished = time.monotonic()
    cpu_percent(mark, client.opts.broker_pid, tally)
    return tally


# --- receiving -------------------------------------------------------------------------------


class Tracker:
    """Which of one run's messages were stored and received, and how late each arrived.

    Messages are told apart by the sequence number in their id (`rockmq.bench.wire.Client` ids
    are a per-client prefix plus a counter), so the run costs two bytes per message plus one
    float per received message, however many there are.
    """

    def __init__(self, capacity: int, grace_ms: float) -> None:
        self.prefix: str | None = None
        self.sent = bytearray(capacity)
        self.seen = bytearray(capacity)
        self.grace_ms = grace_ms
        self.sent_count = 0
        self.received = 0
        self.late = 0  # received, but more than grace_ms after due
        self.duplicates = 0
        self.foreign = 0  # not a message of this run
        self.lateness_ms: list[float] = []
        self.first_ms = math.inf
        self.last_ms = 0.0
        self.progress_at = time.monotonic()

    def _index(self, message_id: str) -> int | None:
        prefix, digits = message_id[:-SEQUENCE_DIGITS], message_id[-SEQUENCE_DIGITS:]
        if self.prefix is None:
            self.prefix = prefix
        try:
            index = int(digits, 16)
        except ValueError:
            return None
        return index if prefix == self.prefix and index < len(self.sent) else None

    def stored(self, message_id: str) -> None:
        """The broker accepted this message."""
        index = self._index(message_id)
        if index is not None and not self.sent[index]:
            self.sent[index] = 1
            self.sent_count += 1

    def record(self, message_id: str, due_ms: int, at_ms: float) -> None:
        """A message arrived at `at_ms` (wall clock); it was due at `due_ms`."""
        index = self._index(message_id)
        if index is None:
            self.foreign += 1
            return
        if self.seen[index]:
            self.duplicates += 1
            return
        self.seen[index] = 1
        self.received += 1
        lateness = at_ms - due_ms
        self.lateness_ms.append(lateness)
        self.late += lateness > self.grace_ms
        self.first_ms = min(self.first_ms, at_ms)
        self.last_ms = max(self.last_ms, at_ms)
        self.progress_at = time.monotonic()

    @property
    def on_time(self) -> int:
        return self.received - self.late

    @property
    def missing(self) -> int:
        """Stored messages not received within their due time + grace."""
        return max(0, self.sent_count - self.on_time)


class Acks:
    """Acks run beside the receive loops, so a receiver is back in its long poll at once."""

    def __init__(self) -> None:
        self.tally = Tally()
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self, timeout: float) -> None:
        """Wait for the acks still in flight; count those that did not finish as failed."""
        if not self._tasks:
            return
        _, late = await asyncio.wait(set(self._tasks), timeout=timeout)
        for task in late:
            task.cancel()
        if late:
            self.tally.fail(f"{len(late)} ack requests unfinished after {timeout:.0f} s", len(late))


def filter_all() -> pb.FilterExpression:
    return pb.FilterExpression(type=pb.TAG, expression="*")


async def poll_batched(client: Client, tracker: Tracker, tally: Tally, acks: Acks, size: int) -> None:
    """One long poll over rockmq's BatchMessaging.Receive; all messages of a reply share its arrival time."""
    request = batch_pb.ReceiveRequest(
        group=client.opts.group, topic=client.opts.topic, batch_size=size, filter_expression=filter_all(),
        invisible_duration_ms=INVISIBLE_MS, long_polling_timeout_ms=POLL_MS,
    )
    tally.requests += 1
    try:
        reply = await client.batch_stub.Receive(request, metadata=client.metadata,
                                                timeout=POLL_MS / 1000 + client.opts.rpc_timeout)
    except grpc.aio.AioRpcError as exc:
        tally.fail(f"Receive {exc.code().name}: {exc.details()}")
        await asyncio.sleep(ERROR_PAUSE_S)
        return
    at_ms = time.time() * 1000.0
    if reply.status.code != OK:
        if reply.status.code != MESSAGE_NOT_FOUND:
            tally.fail(f"Receive {describe(reply.status)}")
            await asyncio.sleep(ERROR_PAUSE_S)
        return
    handles = []
    for raw in reply.messages:
        props = pb.Message.FromString(raw).system_properties
        tracker.record(props.message_id, props.delivery_timestamp.ToMilliseconds(), at_ms)
        handles.append(props.receipt_handle)
    acks.submit(ack_batched(client, acks.tally, handles))


async def poll_stream(client: Client, tracker: Tracker, tally: Tally, acks: Acks, size: int) -> None:
    """One long poll over the standard ReceiveMessage stream; each message timed as its frame arrives."""
    request = svc.ReceiveMessageRequest(
        group=client.group, message_queue=client.queue, filter_expression=filter_all(), batch_size=size,
        invisible_duration={"seconds": INVISIBLE_MS // 1000}, auto_renew=False,
        long_polling_timeout={"seconds": POLL_MS // 1000},
    )
    tally.requests += 1
    entries: list[svc.AckMessageEntry] = []
    try:
        call = client.stub.ReceiveMessage(request, metadata=client.metadata, timeout=POLL_MS / 1000 + client.opts.rpc_timeout)
        async for reply in call:
            kind = reply.WhichOneof("content")
            if kind == "message":
                at_ms = time.time() * 1000.0
                props = reply.message.system_properties
                tracker.record(props.message_id, props.delivery_timestamp.ToMilliseconds(), at_ms)
                entries.append(svc.AckMessageEntry(message_id=props.message_id, receipt_handle=props.receipt_handle))
            elif kind == "status" and reply.status.code not in (OK, MESSAGE_NOT_FOUND):
                tally.fail(f"ReceiveMessage {describe(reply.status)}")
    except grpc.aio.AioRpcError as exc:
        tally.fail(f"ReceiveMessage {exc.code().name}: {exc.details()}")
        await asyncio.sleep(ERROR_PAUSE_S)
    if entries:
        acks.submit(ack(client, acks.tally, entries))


POLLERS: dict[str, Callable[[Client, Tracker, Tally, Acks, int], Awaitable[None]]] = {
    "batch": poll_batched,
    "stream": poll_stream,
}


class Consumers:
    """`opts.receivers` loops, each keeping one long poll parked at the broker, until stopped."""

    def __init__(self, client: Client, tracker: Tracker, opts: TimerOptions) -> None:
        self.client = client
        self.tracker = tracker
        self.opts = opts
        self.tally = Tally()
        self.acks = Acks()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Start the loops and return once each has a long poll on its way to the broker."""
        poll = POLLERS[self.opts.receiver]

        async def loop() -> None:
            while True:
                await poll(self.client, self.tracker, self.tally, self.acks, self.opts.receive_batch)

        self._tasks = [asyncio.create_task(loop()) for _ in range(self.opts.receivers)]
        await wait_until(lambda: self.tally.requests >= self.opts.receivers, time.monotonic() + READY_TIMEOUT_S)
        await asyncio.sleep(SETTLE_S)

    async def stop(self) -> None:
        """Cancel the parked polls and wait for the acks still in flight."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.acks.drain(self.opts.rpc_timeout)

    @property
    def errors(self) -> int:
        return self.tally.errors + self.acks.tally.errors

    @property
    def samples(self) -> list[str]:
        return self.tally.samples + self.acks.tally.samples


async def wait_until(done: Callable[[], bool], deadline: float) -> bool:
    """Poll `done` until it holds (True) or time.monotonic() reaches `deadline` (False)."""
    while not done():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(WAIT_STEP_S)
    return True


def monotonic_at(wall_ms: float) -> float:
    """The time.monotonic() reading when the wall clock shows `wall_ms`."""
    return time.monotonic() + (wall_ms - time.time() * 1000.0) / 1000.0


def received_figures(tracker: Tracker, consumers: Consumers) -> Figures:
    """Counts every receiving scenario reports."""
    return {
        "stored": tracker.sent_count,
        "received": tracker.received,
        "missing": tracker.missing,
        "duplicates": tracker.duplicates,
        "foreign": tracker.foreign,
        "receive_errors": consumers.errors,
        "error_samples": consumers.samples,
    }


def rss_mib(pid: int | None) -> float | None:
    sample = broker_sample(pid) if pid else None
    return sample.rss_mib if sample else None


async def timer_stats(opts: TimerOptions) -> Any | None:
    """The broker's Admin.GetTimerStats, or None where it has none (an older broker) or it failed.

    Only extra figures depend on it: the pending count the prefill tops up to, and the broker's
    own move lateness, which splits a message's lateness into "moved late" and "delivered late".
    """
    request_type = getattr(admin, "TimerStatsRequest", None)
    if request_type is None:
        return None
    async with grpc.aio.insecure_channel(opts.endpoint) as channel:
        try:
            return await admin_grpc.AdminStub(channel).GetTimerStats(request_type(), timeout=opts.rpc_timeout)
        except grpc.aio.AioRpcError:
            return None


def bucket_label(buckets: list[Any], index: int) -> str:
    """A lateness histogram bucket as text: its upper bound, or above the last bound."""
    bound = buckets[index].le_ms
    return f"<= {bound} ms" if bound >= 0 else f"> {buckets[index - 1].le_ms if index else 0} ms"


def moves_between(before: Any | None, after: Any | None) -> Figures | None:
    """Timer moves between two GetTimerStats: how many, and the buckets of their median, p99 and max lateness."""
    if before is None or after is None or len(before.lateness) != len(after.lateness):
        return None
    counts = [a.count - b.count for a, b in zip(after.lateness, before.lateness)]
    total = sum(counts)
    figures: Figures = {"moved": after.moved - before.moved}
    if not total:
        return figures
    cumulative = [sum(counts[: i + 1]) for i in range(len(counts))]
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        rank = max(1, math.ceil(q * total))
        figures[name] = bucket_label(list(after.lateness), next(i for i, c in enumerate(cumulative) if c >= rank))
    figures["max"] = bucket_label(list(after.lateness), max(i for i, c in enumerate(counts) if c))
    return figures


# --- scenarios -------------------------------------------------------------------------------


async def prefill(opts: TimerOptions) -> Figures:
    """Make sure `opts.pending` delayed messages are pending: send the shortfall, due 1-2 h ahead, to
    `<topic>-pending`, as fast as the broker takes them. Without timer stats, send all of them."""
    stats = await timer_stats(opts)
    already = stats.pending if stats is not None else 0
    figures: Figures = {"already_pending": already if stats is not None else None}
    client = await connect(opts, f"{opts.topic}-pending", f"{opts.group}-pending")
    try:
        build = delayed(client, spread(*PENDING_DELAY_MS))
        tally = await send_many(client, build, opts.prefill_batch, opts.concurrency, total=max(0, opts.pending - already))
    finally:
        await client.close()
    figures.update(figures_of(tally))
    stats = await timer_stats(opts)
    figures["pending_now"] = stats.pending if stats is not None else None
    return figures


async def lateness(opts: TimerOptions, earlier: dict[str, Figures]) -> Figures:
    """Messages due 100 ms-30 s ahead, consumers waiting: how late each one arrives."""
    figures: Figures = {"broker_rss_mib": [rss_mib(opts.broker_pid)]}
    if opts.pending:
        figures["prefill"] = await prefill(opts)
        figures["broker_rss_mib"].append(rss_mib(opts.broker_pid))
    run = run_id()
    topic, group = f"{opts.topic}-lateness-{run}", f"{opts.group}-lateness-{run}"
    receiver, sender = await connect(opts, topic, group), await connect(opts, topic, group)
    tracker = Tracker(opts.messages, opts.grace * 1000)
    consumers = Consumers(receiver, tracker, opts)
    latest_due = 0
    due_in = spread(opts.min_delay_ms, opts.max_delay_ms)

    def due() -> int:
        nonlocal latest_due
        when = due_in()
        latest_due = max(latest_due, when)
        return when

    try:
        await consumers.start()
        before = await timer_stats(opts)
        sent = await send_many(sender, delayed(sender, due), opts.batch, opts.concurrency, total=opts.messages,
                               stored=tracker.stored)
        await wait_until(lambda: tracker.on_time >= tracker.sent_count, monotonic_at(latest_due + opts.grace * 1000))
        moves = moves_between(before, await timer_stats(opts))
        await consumers.stop()
    finally:
        await receiver.close()
        await sender.close()
    figures["broker_rss_mib"].append(rss_mib(opts.broker_pid))
    ordered = sorted(tracker.lateness_ms)
    figures.update(received_figures(tracker, consumers))
    figures.update({
        "topic": topic,
        "receiver": f"{opts.receiver} x{opts.receivers}",
        "sends": figures_of(sent),
        "broker_moves": moves,
        "early": sum(1 for x in ordered if x < 0),
        "min_ms": round(ordered[0], 2) if ordered else None,
        **{name: round(percentile(ordered, q), 2) for name, q in (("p50_ms", 0.5), ("p90_ms", 0.9), ("p99_ms", 0.99),
                                                                  ("max_ms", 1.0))},
    })
    figures["target_met"] = (bool(ordered) and not figures["missing"] and figures["p99_ms"] <= TARGET_P99_MS
                             and figures["max_ms"] <= TARGET_MAX_MS)
    return figures


async def calibrate(opts: TimerOptions) -> float:
    """Delayed sends per second, measured on far-future messages to `<topic>-pending`."""
    client = await connect(opts, f"{opts.topic}-pending", f"{opts.group}-pending")
    try:
        build = delayed(client, spread(*PENDING_DELAY_MS))
        tally = await send_many(client, build, opts.prefill_batch, opts.concurrency, total=CALIBRATION_MESSAGES)
    finally:
        await client.close()
    return tally.ok / tally.seconds


async def burst(opts: TimerOptions, earlier: dict[str, Figures]) -> Figures:
    """`opts.burst` messages due in one millisecond: how soon after it all have arrived."""
    figures: Figures = {"broker_rss_mib": [rss_mib(opts.broker_pid)]}
    prefilled = earlier.get("lateness", {}).get("prefill", {})
    if prefilled.get("messages", 0) >= CALIBRATION_MESSAGES:
        rate = prefilled["messages_per_s"]
    else:
        rate = await calibrate(opts)
    lead_s = opts.burst_lead or opts.burst / max(rate, 100.0) * LEAD_FACTOR + LEAD_MARGIN_S
    run = run_id()
    topic, group = f"{opts.topic}-burst-{run}", f"{opts.group}-burst-{run}"
    receiver, sender = await connect(opts, topic, group), await connect(opts, topic, group)
    tracker = Tracker(opts.burst, math.inf)
    consumers = Consumers(receiver, tracker, opts)
    try:
        await consumers.start()
        before = await timer_stats(opts)
        due_ms = now_ms() + round(lead_s * 1000)
        sent = await send_many(sender, delayed(sender, lambda: due_ms), opts.prefill_batch, opts.concurrency,
                               total=opts.burst, stored=tracker.stored)
        sends_done_ms = time.time() * 1000.0
        await asyncio.sleep(max(0.0, (due_ms - time.time() * 1000.0) / 1000))
        delivery, mark = Tally(), cpu_mark(opts.broker_pid)
        cap = monotonic_at(due_ms) + BURST_WAIT_CAP_S

        def settled() -> bool:
            stalled = time.monotonic() - max(tracker.progress_at, monotonic_at(due_ms)) > opts.grace
            return tracker.received >= tracker.sent_count or stalled

        await wait_until(settled, cap)
        cpu_percent(mark, opts.broker_pid, delivery)
        moves = moves_between(before, await timer_stats(opts))
        await consumers.stop()
    finally:
        await receiver.close()
        await sender.close()
    figures["broker_rss_mib"].append(rss_mib(opts.broker_pid))
    figures.update(received_figures(tracker, consumers))
    span_s = (tracker.last_ms - tracker.first_ms) / 1000 if tracker.received > 1 else 0.0
    figures.update({
        "topic": topic,
        "receiver": f"{opts.receiver} x{opts.receivers}",
        "sends": figures_of(sent),
        "broker_moves": moves,
        "lead_s": round(lead_s, 1),
        "sends_done_before_due_s": round((due_ms - sends_done_ms) / 1000, 3),
        "first_after_due_s": round((tracker.first_ms - due_ms) / 1000, 3) if tracker.received else None,
        "delivered_within_s": round((tracker.last_ms - due_ms) / 1000, 3) if tracker.received else None,
        "receive_per_s": round(tracker.received / span_s, 1) if span_s > 0 else None,
        "delivery_client_cpu_pct": round(delivery.client_cpu_pct, 1),
        "delivery_broker_cpu_pct": None if delivery.broker_cpu_pct is None else round(delivery.broker_cpu_pct, 1),
    })
    figures["target_met"] = (figures["delivered_within_s"] is not None and figures["missing"] == 0
                             and figures["sends_done_before_due_s"] >= 0
                             and figures["delivered_within_s"] <= TARGET_BURST_S)
    return figures


def add_slice(total: Tally, part: Tally) -> None:
    """Add one slice of sends to a running total whose `seconds` is the sum of the slices' time."""
    before = total.seconds if total.finished > total.started else 0.0
    total.ok += part.ok
    total.requests += part.requests
    total.errors += part.errors
    for sample in part.samples:
        total.note(sample)
    total.finished = total.started + before + part.seconds
    weight = before / total.seconds
    total.client_cpu_pct = total.client_cpu_pct * weight + part.client_cpu_pct * (1 - weight)
    if part.broker_cpu_pct is not None:
        total.broker_cpu_pct = (total.broker_cpu_pct or 0.0) * weight + part.broker_cpu_pct * (1 - weight)


async def alternate(client: Client, kinds: dict[str, RequestFactory], opts: TimerOptions) -> dict[str, Tally]:
    """`opts.duration` s of sends of each kind, alternating in short slices so that drift on the broker
    (compactions, other load) weighs on every kind alike."""
    totals = {name: Tally(started=0.0, finished=0.0) for name in kinds}
    spent = 0.0
    while spent < opts.duration:
        piece = min(COST_SLICE_S, opts.duration - spent)
        for name, build in kinds.items():
            add_slice(totals[name], await send_many(client, build, opts.batch, opts.concurrency, seconds=piece))
        spent += piece
    return totals


async def schedule_cost(opts: TimerOptions, earlier: dict[str, Figures]) -> Figures:
    """Batched produce rate of normal messages and of delayed ones due 1 h ahead, taken in turns."""
    client = await connect(opts, f"{opts.topic}-cost", f"{opts.group}-cost")
    try:
        await send_many(client, client.send_request, opts.batch, opts.concurrency, seconds=COST_WARMUP_S)
        later = delayed(client, lambda: now_ms() + COST_DELAY_MS)
        totals = await alternate(client, {"normal": client.send_request, "delayed": later}, opts)
    finally:
        await client.close()
    figures: Figures = {name: figures_of(tally) for name, tally in totals.items()}
    normal_rate = figures["normal"]["messages_per_s"]
    figures["ratio"] = round(figures["delayed"]["messages_per_s"] / normal_rate, 3) if normal_rate else None
    figures["target_met"] = figures["ratio"] is not None and figures["ratio"] >= TARGET_COST_RATIO
    return figures


RUNNERS: dict[str, Callable[[TimerOptions, dict[str, Figures]], Awaitable[Figures]]] = {
    "lateness": lateness,
    "burst": burst,
    "schedule-cost": schedule_cost,
}


# --- output ----------------------------------------------------------------------------------


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def cpu_text(f: Figures) -> str:
    text = f"client CPU {f['client_cpu_pct']:.0f}%"
    return text if f["broker_cpu_pct"] is None else f"{text}, broker CPU {f['broker_cpu_pct']:.0f}%"


def sends_text(what: str, f: Figures) -> str:
    return (f"  {what}: {f['messages']:,} msgs in {f['seconds']:.1f} s = {f['messages_per_s']:,.0f} msg/s, "
            f"{f['errors']:,} errors ({cpu_text(f)})")


def prefill_text(f: Figures) -> str:
    """Prefill rate, and the broker's pending count before and after where it reports one."""
    if not f["messages"] and not f["errors"]:
        return f"  prefill: {f['already_pending']:,} delayed msgs already pending, none sent"
    text = sends_text("prefill (parked delayed msgs)", f)
    if f["pending_now"] is not None:
        text += f"\n    broker timers pending: {f['already_pending']:,} before, {f['pending_now']:,} after"
    return text


def rss_text(values: list[float | None]) -> str:
    return "  broker RSS MiB: " + " -> ".join("?" if v is None else f"{v:.1f}" for v in values)


def moves_text(moves: Figures | None) -> list[str]:
    """The broker's own view (Admin.GetTimerStats) of the timer moves during the measurement."""
    if moves is None:
        return []
    if "max" not in moves:
        return [f"  broker timer moves meanwhile: {moves['moved']:,}"]
    return [f"  broker timer moves meanwhile: {moves['moved']:,}; move lateness p50 {moves['p50']}, "
            f"p99 {moves['p99']}, max {moves['max']}"]


def counts_text(f: Figures) -> str:
    return (f"  received {f['received']:,} of {f['stored']:,} stored; missing {f['missing']:,}, duplicates "
            f"{f['duplicates']:,}, receive/ack errors {f['receive_errors']:,} (receivers: {f['receiver']})")


def render(scenario: str, f: Figures) -> list[str]:
    """Human-readable lines: the headline figure against its target first."""
    if scenario == "lateness":
        lines = [f"lateness: p50 {f['p50_ms']:.1f} ms, p90 {f['p90_ms']:.1f} ms, p99 {f['p99_ms']:.1f} ms, "
                 f"max {f['max_ms']:.1f} ms (target p99 <= {TARGET_P99_MS:.0f} ms, max <= {TARGET_MAX_MS:.0f} ms: "
                 f"{verdict(f['target_met'])})", counts_text(f)]
        if f["early"]:
            lines.append(f"  {f['early']:,} arrived before due (earliest {f['min_ms']:.1f} ms)")
        lines += moves_text(f["broker_moves"])
        if "prefill" in f:
            lines.append(prefill_text(f["prefill"]))
        lines += [sends_text("measured sends", f["sends"]), rss_text(f["broker_rss_mib"])]
        samples = f["error_samples"] + f["sends"]["error_samples"] + f.get("prefill", {}).get("error_samples", [])
    elif scenario == "burst":
        within = "never" if f["delivered_within_s"] is None else f"{f['delivered_within_s']:.3f} s"
        rate = "-" if f["receive_per_s"] is None else f"{f['receive_per_s']:,.0f} msg/s"
        lines = [f"burst: {f['stored']:,} msgs due at once, fully delivered within {within} of due "
                 f"(target <= {TARGET_BURST_S:.0f} s: {verdict(f['target_met'])}); receive rate {rate}", counts_text(f)]
        first = "-" if f["first_after_due_s"] is None else f"{f['first_after_due_s'] * 1000:.1f} ms"
        lines.append(f"  first arrival {first} after due; lead {f['lead_s']:.1f} s, sends done "
                     f"{f['sends_done_before_due_s']:.1f} s before due")
        cpu = {"client_cpu_pct": f["delivery_client_cpu_pct"], "broker_cpu_pct": f["delivery_broker_cpu_pct"]}
        lines.append(f"  while delivering: {cpu_text(cpu)}")
        if f["sends_done_before_due_s"] < 0:
            lines.append("  warning: the sends finished after the due time; raise --burst-lead")
        lines += moves_text(f["broker_moves"])
        lines += [sends_text("sends", f["sends"]), rss_text(f["broker_rss_mib"])]
        samples = f["error_samples"] + f["sends"]["error_samples"]
    else:
        ratio = "-" if f["ratio"] is None else f"{f['ratio']:.2f}"
        lines = [f"schedule-cost: delayed/normal send rate {ratio} (target >= {TARGET_COST_RATIO:.2f}, i.e. a delayed "
                 f"send costs <= 1.5x a normal one: {verdict(f['target_met'])})",
                 sends_text("normal ", f["normal"]), sends_text("delayed", f["delayed"])]
        samples = f["normal"]["error_samples"] + f["delayed"]["error_samples"]
    lines.extend(f"  error: {sample}" for sample in dict.fromkeys(samples))
    return lines


def failed(scenario: str, f: Figures) -> bool:
    """Whether a request failed or a message went missing."""
    if scenario == "schedule-cost":
        return bool(f["normal"]["errors"] or f["delayed"]["errors"])
    return bool(f["missing"] or f["receive_errors"] or f["sends"]["errors"] or f.get("prefill", {}).get("errors"))


# --- command line ----------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> TimerOptions:
    """Flags to TimerOptions; refuse impossible values before anything is sent."""
    parser = argparse.ArgumentParser(prog="timer_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", default="127.0.0.1:8081", help="broker gRPC address (host:port)")
    parser.add_argument("--scenario", choices=(*SCENARIOS, "all"), default="all")
    parser.add_argument("--topic", default="timer-bench", help="prefix of the topic names")
    parser.add_argument("--group", default="timer-bench", help="prefix of the consumer group names")
    parser.add_argument("--pending", type=int, default=1_000_000,
                        help="lateness: first make sure this many delayed msgs are pending (parked 1-2 h ahead); 0 skips")
    parser.add_argument("--messages", type=int, default=10_000, help="lateness: measured delayed messages")
    parser.add_argument("--burst", type=int, default=100_000, help="burst: messages due in the same millisecond")
    parser.add_argument("--duration", type=float, default=10.0,
                        help=f"schedule-cost: seconds per kind of send (alternating in {COST_SLICE_S:.0f} s slices)")
    parser.add_argument("--batch", type=int, default=32, help="messages per SendMessage (lateness, schedule-cost)")
    parser.add_argument("--prefill-batch", type=int, default=128, help="messages per SendMessage (pending, burst)")
    parser.add_argument("--concurrency", type=int, default=16, help="SendMessage requests in flight")
    parser.add_argument("--receiver", choices=RECEIVERS, default="batch",
                        help="BatchMessaging.Receive or the standard ReceiveMessage stream")
    parser.add_argument("--receivers", type=int, default=4, help="long polls parked at once")
    parser.add_argument("--receive-batch", type=int, default=256, help="messages per receive at most")
    parser.add_argument("--min-delay", type=float, default=0.1, help="lateness: shortest delay, seconds")
    parser.add_argument("--max-delay", type=float, default=30.0, help="lateness: longest delay, seconds")
    parser.add_argument("--burst-lead", type=float, help="burst: seconds from the first send to due (default: estimated)")
    parser.add_argument("--grace", type=float, default=10.0,
                        help="a message not received within due + this many seconds is missing")
    parser.add_argument("--size", type=int, default=1024, help="body bytes")
    parser.add_argument("--rpc-timeout", type=float, default=10.0, help="seconds per RPC (long polls get this on top)")
    parser.add_argument("--broker-pid", type=int, help="report this process's RSS and CPU (from /proc)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    args = parser.parse_args(argv)
    positive = ("messages", "burst", "duration", "batch", "prefill_batch", "concurrency", "receivers", "receive_batch",
                "min_delay", "grace", "size", "rpc_timeout")
    for name in positive:
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if args.pending < 0:
        parser.error("--pending must not be negative")
    if args.max_delay < args.min_delay:
        parser.error("--max-delay must not be below --min-delay")
    if args.burst_lead is not None and args.burst_lead <= 0:
        parser.error("--burst-lead must be positive")
    values = vars(args)
    values["min_delay_ms"] = round(values.pop("min_delay") * 1000)
    values["max_delay_ms"] = round(values.pop("max_delay") * 1000)
    return TimerOptions(**values)


async def check_broker(opts: TimerOptions) -> None:
    """Fail fast (SetupError) when nothing answers at the endpoint."""
    client = await connect(opts, f"{opts.topic}-probe", opts.group)
    await client.close()


async def run(opts: TimerOptions, report: Callable[[str, Figures], None]) -> dict[str, Figures]:
    """Run the chosen scenarios in order, reporting each as it ends."""
    await check_broker(opts)
    results: dict[str, Figures] = {}
    for scenario in SCENARIOS if opts.scenario == "all" else (opts.scenario,):
        results[scenario] = await RUNNERS[scenario](opts, results)
        report(scenario, results[scenario])
    return results


def main(argv: list[str] | None = None) -> int:
    """Exit status: 0 all fine, 1 a request failed or a message went missing, 3 no broker."""
    opts = parse_args(argv)

    def report(scenario: str, figures: Figures) -> None:
        if not opts.json:
            print("\n".join(render(scenario, figures)), flush=True)

    try:
        results = run_loop(run(opts, report))
    except (SetupError, grpc.aio.AioRpcError) as exc:
        if isinstance(exc, grpc.aio.AioRpcError):
            reason = f"broker at {opts.endpoint} failed: {exc.code().name}: {exc.details()}"
        else:
            reason = str(exc)
        print(f"timer_bench: error: {reason}", file=sys.stderr)
        return 3
    if opts.json:
        print(json.dumps({"endpoint": opts.endpoint, "scenarios": results}, indent=2))
    return 1 if any(failed(name, f) for name, f in results.items()) else 0


if __name__ == "__main__":
    sys.exit(main())
