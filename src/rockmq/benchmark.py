"""`rockmq bench`: drive a running broker over the RocketMQ 5 gRPC protocol and print figures.

It starts nothing: point it at a broker (`--endpoint`) and pick a scenario.

- produce-batch: SendMessage with `--batch` messages per request, `--concurrency` in flight.
- produce-single: one message per SendMessage, `--concurrency` in flight (the official clients' pattern).
- consume: prefill `--messages` (batched), then POP them: ReceiveMessage streams plus one
  AckMessage per received batch; the figure is received-and-acked messages per second.
- latency: one message per RPC at a steady `--rate`; p50/p90/p99/max in ms.

On a 2-core machine the load generator competes with the broker for CPU, and a single Python
process tops out near the broker's own unary-call ceiling (docs/architecture.md §7). So the client keeps
per-message work small (messages are copied from a template, ids come from a counter), can split
the load over `--processes`, and reports its own CPU next to the broker's (`--broker-pid`): a
figure only measures the broker when the client has CPU to spare.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import multiprocessing
import os
import queue
import socket
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from multiprocessing.queues import Queue as ProcessQueue
from typing import Any, TypeVar

import grpc

from rockmq.client.errors import from_status
from rockmq.protocol._gen.apache.rocketmq.v2 import definition_pb2 as pb
from rockmq.protocol._gen.apache.rocketmq.v2 import service_pb2 as svc
from rockmq.protocol._gen.apache.rocketmq.v2 import service_pb2_grpc as svc_grpc
from rockmq.protocol._gen.rockmq.messaging.v1 import batch_pb2 as batch_pb
from rockmq.protocol._gen.rockmq.messaging.v1 import batch_pb2_grpc as batch_grpc
from rockmq.protocol.channels import client_metadata, open_aio_channel
from rockmq.protocol.endpoints import endpoints_of

SCENARIOS = ("produce-batch", "produce-single", "consume", "consume-batch", "latency")
OK = pb.Code.OK
MESSAGE_NOT_FOUND = pb.Code.MESSAGE_NOT_FOUND
INVISIBLE_SECONDS = 30
LONG_POLL_SECONDS = 1
CONNECT_TIMEOUT = 5.0  # loopback: a broker that is up answers at once
START_TIMEOUT = 60.0  # spawned workers import grpc first; slow on a loaded 2-core box
MAX_ERROR_SAMPLES = 5
SOAK_SAMPLE_S = 10.0
SOAK_RECEIVE_BATCH = 128
T = TypeVar("T")  # what one consume loop receives and acks: entries or receipt handles
DEFAULT_CONCURRENCY = {"produce-batch": 32, "produce-single": 64, "consume": 8, "consume-batch": 4}


@dataclass(frozen=True)
class Options:
    """Parsed command line; frozen and picklable so it can travel to worker processes."""

    endpoint: str
    topic: str
    group: str
    scenario: str
    duration: float
    messages: int | None
    consume_messages: int
    batch: int
    size: int
    concurrency: int | None
    processes: int
    rate: float
    rpc_timeout: float
    broker_pid: int | None
    json: bool


@dataclass(frozen=True)
class Job:
    """What one worker process runs: a load kind plus its share of the load."""

    kind: str  # "produce" | "consume" | "consume-batch" | "latency" | "soak"
    opts: Options
    batch: int
    concurrency: int
    quota: int | None = None  # messages to send or consume; None = run for opts.duration
    rate: float = 0.0
    probe_pid: int | None = None  # broker pid whose CPU this worker samples (one worker only)


@dataclass
class Tally:
    """Counters of one worker; merged across workers by `absorb`."""

    ok: int = 0
    requests: int = 0
    errors: int = 0
    samples: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    started: float = math.inf  # time.monotonic() is system-wide on Linux, so comparable
    finished: float = 0.0
    client_cpu_pct: float = 0.0
    broker_cpu_pct: float | None = None
    consumed: int = 0  # soak: messages received and acked while producing
    rss_mib: list[float] = field(default_factory=list)  # soak: broker RSS every SOAK_SAMPLE_S

    def fail(self, what: str, count: int = 1) -> None:
        """Count `count` failed messages and keep the reason."""
        self.errors += count
        self.note(what)

    def note(self, what: str) -> None:
        """Keep the first few distinct error reasons: enough to act on, bounded in size."""
        if len(self.samples) < MAX_ERROR_SAMPLES and what not in self.samples:
            self.samples.append(what)

    def absorb(self, other: Tally) -> None:
        """Add another worker's counters; the run spans the earliest start to the last end."""
        self.ok += other.ok
        self.requests += other.requests
        self.latencies_ms.extend(other.latencies_ms)
        for sample in other.samples:
            self.note(sample)
        self.errors += other.errors
        self.started = min(self.started, other.started)
        self.finished = max(self.finished, other.finished)
        self.client_cpu_pct += other.client_cpu_pct
        self.consumed += other.consumed
        self.rss_mib.extend(other.rss_mib)
        if other.broker_cpu_pct is not None:
            self.broker_cpu_pct = other.broker_cpu_pct

    @property
    def seconds(self) -> float:
        """Wall time of the run (never zero, so rates stay finite when nothing ran)."""
        return max(self.finished - self.started, 1e-9)


class SetupError(Exception):
    """The broker could not be reached or refused the route query."""


def describe(status: pb.Status) -> str:
    """Render a reply status the way the protocol docs name it."""
    return str(from_status(status.code, status.message))


class Client:
    """One channel to the broker plus a cheap factory for unique messages."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self._channel = open_aio_channel(opts.endpoint)
        self.stub = svc_grpc.MessagingServiceStub(self._channel)
        self.batch_stub = batch_grpc.BatchMessagingStub(self._channel)
        tag = uuid.uuid4().hex.upper()
        self.metadata = client_metadata(f"rockmq-bench@{socket.gethostname()}@{os.getpid()}@{tag[:8]}", version="rockmq-bench")
        self.topic = pb.Resource(name=opts.topic)
        self.group = pb.Resource(name=opts.group)
        self.queue = pb.MessageQueue()
        # Copying a template and setting the id, body and born time costs about half of building
        # each message from keyword arguments; ids are a per-process random prefix plus a counter.
        self._template = pb.Message(
            topic=self.topic,
            system_properties=pb.SystemProperties(
                message_type=pb.NORMAL, body_encoding=pb.IDENTITY, born_host=socket.gethostname()
            ),
        )
        self._id_prefix = tag[8:24]
        self._sequence = 0

    async def open(self) -> None:
        """Connect and query the route: it auto-creates the topic and names a queue to receive from."""
        try:
            await asyncio.wait_for(self._channel.channel_ready(), CONNECT_TIMEOUT)
        except TimeoutError:
            raise SetupError(f"no broker at {self.opts.endpoint} within {CONNECT_TIMEOUT:.0f} s") from None
        request = svc.QueryRouteRequest(topic=self.topic, endpoints=endpoints_of(self.opts.endpoint))
        reply = await self.stub.QueryRoute(request, metadata=self.metadata, timeout=self.opts.rpc_timeout)
        if reply.status.code != OK or not reply.message_queues:
            raise SetupError(f"QueryRoute {self.opts.topic}: {describe(reply.status)}")
        self.queue = reply.message_queues[0]

    async def close(self) -> None:
        """Close the channel, cancelling anything still in flight."""
        await self._channel.close()

    def send_request(self, count: int) -> svc.SendMessageRequest:
        """`count` fresh messages sharing one born timestamp, each with its own random body (equal
        bodies would compress to nothing in the store and flatter every figure)."""
        seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
        request = svc.SendMessageRequest()
        size = self.opts.size
        bodies = os.urandom(count * size)
        for i in range(count):
            message = request.messages.add()
            message.CopyFrom(self._template)
            message.body = bodies[i * size:(i + 1) * size]
            props = message.system_properties
            props.message_id = f"{self._id_prefix}{self._sequence:016X}"
            props.born_timestamp.seconds = seconds
            props.born_timestamp.nanos = nanos
            self._sequence += 1
        return request


async def send(client: Client, tally: Tally, count: int) -> bool:
    """One SendMessage of `count` messages; True when every message was stored."""
    tally.requests += 1
    try:
        reply = await client.stub.SendMessage(
            client.send_request(count), metadata=client.metadata, timeout=client.opts.rpc_timeout
        )
    except grpc.aio.AioRpcError as exc:
        tally.fail(f"SendMessage {exc.code().name}: {exc.details()}", count)
        return False
    stored = sum(1 for entry in reply.entries if entry.status.code == OK)
    tally.ok += stored
    if stored < count:
        failed = next((e.status for e in reply.entries if e.status.code != OK), reply.status)
        tally.fail(f"SendMessage {describe(failed)}", count - stored)
    return stored == count


async def run_produce(client: Client, job: Job, tally: Tally) -> None:
    """`job.concurrency` senders in a loop, until the quota is sent or the duration is up."""
    remaining = job.quota
    deadline = tally.started + job.opts.duration

    async def sender() -> None:
        nonlocal remaining
        while True:
            if remaining is None:
                if time.monotonic() >= deadline:
                    return
                count = job.batch
            else:
                count = min(job.batch, remaining)
                if count <= 0:
                    return
                remaining -= count
            await send(client, tally, count)

    await asyncio.gather(*(sender() for _ in range(job.concurrency)))
    tally.finished = time.monotonic()


async def receive(client: Client, tally: Tally, count: int) -> list[svc.AckMessageEntry] | None:
    """One POP receive of up to `count` messages; None when the topic is drained or it failed."""
    request = svc.ReceiveMessageRequest(
        group=client.group,
        message_queue=client.queue,
        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
        batch_size=count,
        invisible_duration={"seconds": INVISIBLE_SECONDS},
        auto_renew=False,
        long_polling_timeout={"seconds": LONG_POLL_SECONDS},
    )
    tally.requests += 1
    entries: list[svc.AckMessageEntry] = []
    status: pb.Status | None = None
    try:
        # The broker ends the poll 0.5 s before this deadline (protocol: ReceiveMessage).
        call = client.stub.ReceiveMessage(
            request, metadata=client.metadata, timeout=LONG_POLL_SECONDS + client.opts.rpc_timeout
        )
        async for reply in call:
            kind = reply.WhichOneof("content")
            if kind == "status":
                status = reply.status
            elif kind == "message":
                props = reply.message.system_properties
                entries.append(svc.AckMessageEntry(message_id=props.message_id, receipt_handle=props.receipt_handle))
    except grpc.aio.AioRpcError as exc:
        tally.fail(f"ReceiveMessage {exc.code().name}: {exc.details()}")
        return None
    if status is None:
        tally.fail("ReceiveMessage: stream carried no status")
        return None
    if status.code == MESSAGE_NOT_FOUND:
        return None
    if status.code != OK:
        tally.fail(f"ReceiveMessage {describe(status)}")
        return None
    return entries


async def ack(client: Client, tally: Tally, entries: list[svc.AckMessageEntry]) -> None:
    """Ack a whole received batch in one request."""
    request = svc.AckMessageRequest(group=client.group, topic=client.topic, entries=entries)
    tally.requests += 1
    try:
        reply = await client.stub.AckMessage(request, metadata=client.metadata, timeout=client.opts.rpc_timeout)
    except grpc.aio.AioRpcError as exc:
        tally.fail(f"AckMessage {exc.code().name}: {exc.details()}", len(entries))
        return
    acked = sum(1 for entry in reply.entries if entry.status.code == OK)
    tally.ok += acked
    tally.finished = time.monotonic()
    if acked < len(entries):
        failed = next((e.status for e in reply.entries if e.status.code != OK), reply.status)
        tally.fail(f"AckMessage {describe(failed)}", len(entries) - acked)


async def receive_batched(client: Client, tally: Tally, count: int) -> list[str] | None:
    """rockmq's BatchMessaging.Receive: many messages per reply; -> receipt handles."""
    request = batch_pb.ReceiveRequest(
        group=client.opts.group, topic=client.opts.topic, batch_size=count,
        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
        invisible_duration_ms=INVISIBLE_SECONDS * 1000, long_polling_timeout_ms=LONG_POLL_SECONDS * 1000,
    )
    tally.requests += 1
    try:
        reply = await client.batch_stub.Receive(request, metadata=client.metadata,
                                                timeout=LONG_POLL_SECONDS + client.opts.rpc_timeout)
    except grpc.aio.AioRpcError as exc:
        tally.fail(f"Receive {exc.code().name}: {exc.details()}")
        return None
    if reply.status.code != OK:
        if reply.status.code != MESSAGE_NOT_FOUND:
            tally.fail(f"Receive {describe(reply.status)}")
        return None
    return [pb.Message.FromString(raw).system_properties.receipt_handle for raw in reply.messages]


async def ack_batched(client: Client, tally: Tally, handles: list[str]) -> None:
    """rockmq's BatchMessaging.Ack of a whole received batch."""
    request = batch_pb.AckRequest(group=client.opts.group, topic=client.opts.topic, receipt_handles=handles)
    tally.requests += 1
    try:
        reply = await client.batch_stub.Ack(request, metadata=client.metadata, timeout=client.opts.rpc_timeout)
    except grpc.aio.AioRpcError as exc:
        tally.fail(f"Ack {exc.code().name}: {exc.details()}", len(handles))
        return
    acked = sum(1 for entry in reply.entries if entry.code == OK)
    tally.ok += acked
    tally.finished = time.monotonic()
    if acked < len(handles):
        failed = next((e for e in reply.entries if e.code != OK), reply.status)
        tally.fail(f"Ack {describe(failed)}", len(handles) - acked)


async def run_consume(client: Client, job: Job, tally: Tally) -> None:
    """`job.concurrency` receive-then-ack loops sharing the quota; a stream stops when drained.

    The figure ends at the last ack, so the final empty long poll does not dilute it. The
    `consume-batch` kind uses rockmq's BatchMessaging service instead of the v2 stream.
    """
    if job.kind == "consume-batch":
        await _consume(client, job, tally, receive_batched, ack_batched)
    else:
        await _consume(client, job, tally, receive, ack)


async def _consume(client: Client, job: Job, tally: Tally, get: Callable[[Client, Tally, int], Awaitable[list[T] | None]],
                   put: Callable[[Client, Tally, list[T]], Awaitable[None]]) -> None:
    remaining = job.quota or 0

    async def stream() -> None:
        nonlocal remaining
        while remaining > 0:
            wanted = min(job.batch, remaining)
            remaining -= wanted
            entries = await get(client, tally, wanted)
            remaining += wanted - len(entries or ())
            if not entries:
                return
            await put(client, tally, entries)

    await asyncio.gather(*(stream() for _ in range(job.concurrency)))
    tally.finished = max(tally.finished, tally.started)


async def run_soak(client: Client, job: Job, tally: Tally) -> None:
    """Produce and consume at once for the whole duration, sampling the broker's RSS.

    Shows that memory stays flat under sustained load: nothing in the broker grows with the
    number of messages stored, in flight or acknowledged.
    """
    deadline = tally.started + job.opts.duration
    consumed = Tally()

    async def producer() -> None:
        while time.monotonic() < deadline:
            await send(client, tally, job.batch)

    async def consumer() -> None:
        while time.monotonic() < deadline:
            handles = await receive_batched(client, consumed, SOAK_RECEIVE_BATCH)
            if handles:
                await ack_batched(client, consumed, handles)

    async def sampler() -> None:
        while time.monotonic() < deadline:
            sample = broker_sample(job.probe_pid) if job.probe_pid else None
            if sample:
                tally.rss_mib.append(round(sample[0] / 1024, 1))
            await asyncio.sleep(min(SOAK_SAMPLE_S, max(0.0, deadline - time.monotonic())))

    await asyncio.gather(*(producer() for _ in range(2)), *(consumer() for _ in range(2)), sampler())
    tally.consumed = consumed.ok
    tally.errors += consumed.errors
    for sample in consumed.samples:
        tally.note(sample)
    tally.finished = time.monotonic()


async def run_latency(client: Client, job: Job, tally: Tally) -> None:
    """Send one message per RPC on a fixed schedule and record each round trip.

    After a stall at most one missed slot is sent late; the rest are dropped rather than sent in
    a burst, so a stall shows as a lower achieved rate (reported) instead of a flood that
    distorts the percentiles.
    """
    interval = 1.0 / job.rate
    deadline = tally.started + job.opts.duration
    next_at = tally.started
    pending: set[asyncio.Task[None]] = set()

    async def timed_send() -> None:
        begin = time.perf_counter()
        if await send(client, tally, 1):
            tally.latencies_ms.append((time.perf_counter() - begin) * 1000.0)

    while (now := time.monotonic()) < deadline:
        if now < next_at:
            await asyncio.sleep(next_at - now)
            continue
        task = asyncio.create_task(timed_send())
        pending.add(task)
        task.add_done_callback(pending.discard)
        next_at = max(next_at + interval, now)
    if pending:
        await asyncio.wait(pending)
    tally.finished = time.monotonic()


RUNNERS: dict[str, Callable[[Client, Job, Tally], Awaitable[None]]] = {
    "produce": run_produce,
    "consume": run_consume,
    "consume-batch": run_consume,
    "soak": run_soak,
    "latency": run_latency,
}


def broker_sample(pid: int) -> tuple[int, float] | None:
    """(VmRSS in KiB, user+system CPU seconds) of the broker, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            rss = next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return None
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run_job(job: Job, barrier: threading.Barrier | None) -> Tally:
    """Connect, wait for the other workers, run the load and measure CPU over exactly that span."""
    tally = Tally()
    client = Client(job.opts)
    try:
        try:
            await client.open()
        except (SetupError, grpc.aio.AioRpcError) as exc:
            if barrier is not None:
                barrier.abort()
            tally.fail(f"setup: {exc}")
            return tally
        if barrier is not None:
            try:
                await asyncio.to_thread(barrier.wait, START_TIMEOUT)
            except threading.BrokenBarrierError:
                tally.fail("setup: another worker failed to start")
                return tally
        probe = broker_sample(job.probe_pid) if job.probe_pid else None
        cpu, tally.started = time.process_time(), time.monotonic()
        await RUNNERS[job.kind](client, job, tally)
        wall = max(time.monotonic() - tally.started, 1e-9)
        tally.client_cpu_pct = 100.0 * (time.process_time() - cpu) / wall
        after = broker_sample(job.probe_pid) if job.probe_pid else None
        if probe and after:
            tally.broker_cpu_pct = 100.0 * (after[1] - probe[1]) / wall
    finally:
        await client.close()
    return tally


def run_loop(coro: Coroutine[Any, Any, Tally]) -> Tally:
    """Run on uvloop when available: grpc.aio does ~20% more calls per second on it.

    The load generator collects young garbage rarely and never rescans what existed before
    the run, so its own pauses do not show up as broker latency.
    """
    gc.set_threshold(50_000, 20, 20)
    gc.freeze()
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)


def process_main(job: Job, barrier: threading.Barrier, results: ProcessQueue[Tally]) -> None:
    """Worker process entry: always report back, even on a crash, so the parent never waits."""
    try:
        tally = run_loop(run_job(job, barrier))
    except Exception as exc:  # noqa: BLE001 - reported to the parent as an error sample
        barrier.abort()
        tally = Tally()
        tally.fail(f"worker crashed: {exc!r}")
    results.put(tally)


def split(total: int, parts: int, index: int) -> int:
    """`index`'s share of `total` over `parts`, remainders to the first ones."""
    return total // parts + (1 if index < total % parts else 0)


def shares(job: Job, processes: int) -> list[Job]:
    """Divide quota, rate and in-flight count across processes; worker 0 samples the broker."""
    return [
        replace(
            job,
            quota=None if job.quota is None else split(job.quota, processes, i),
            concurrency=max(1, split(job.concurrency, processes, i)),
            rate=job.rate / processes,
            probe_pid=job.probe_pid if i == 0 else None,
        )
        for i in range(processes)
    ]


def run_workers(job: Job, processes: int) -> Tally:
    """Run `job` in this process or split over spawned ones (fresh gRPC state, no fork issues)."""
    if processes == 1:
        return run_loop(run_job(job, None))
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    results = context.Queue()
    workers = [context.Process(target=process_main, args=(part, barrier, results)) for part in shares(job, processes)]
    for worker in workers:
        worker.start()
    total, received = Tally(), 0
    while received < processes:
        try:
            total.absorb(results.get(timeout=1.0))
            received += 1
        except queue.Empty:
            if not any(worker.is_alive() for worker in workers):
                total.fail(f"{processes - received} worker process(es) died", processes - received)
                break
    for worker in workers:
        worker.join(timeout=START_TIMEOUT)
    return total


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else 0.0


def figures_of(tally: Tally) -> dict[str, Any]:
    """The numbers every scenario reports."""
    return {
        "messages": tally.ok,
        "seconds": round(tally.seconds, 3),
        "messages_per_s": round(tally.ok / tally.seconds, 1),
        "requests_per_s": round(tally.requests / tally.seconds, 1),
        "errors": tally.errors,
        "error_samples": tally.samples,
        "client_cpu_pct": round(tally.client_cpu_pct, 1),
        "broker_cpu_pct": None if tally.broker_cpu_pct is None else round(tally.broker_cpu_pct, 1),
    }


def base_job(opts: Options, kind: str, scenario: str, batch: int) -> Job:
    """A job with the scenario's default in-flight count unless `--concurrency` overrides it."""
    return Job(
        kind=kind,
        opts=opts,
        batch=batch,
        concurrency=opts.concurrency or DEFAULT_CONCURRENCY.get(scenario, 1),
        probe_pid=opts.broker_pid,
    )


def produce(opts: Options, scenario: str) -> dict[str, Any]:
    """produce-batch / produce-single: the same loop, `--batch` or 1 message per request."""
    batch = opts.batch if scenario == "produce-batch" else 1
    job = replace(base_job(opts, "produce", scenario, batch), quota=opts.messages)
    return figures_of(run_workers(job, opts.processes))


def consume(opts: Options, scenario: str) -> dict[str, Any]:
    """Prefill with batched sends (so the topic holds at least N more), then POP N messages.

    The group resumes where it left off, so with a fixed `--group` it may read messages of earlier
    runs first; the figure counts messages received and acked, whichever they are.
    """
    count = opts.messages or opts.consume_messages
    prefill_job = replace(base_job(opts, "produce", "produce-batch", opts.batch), quota=count)
    prefill = run_workers(prefill_job, opts.processes)
    job = replace(base_job(opts, scenario, scenario, opts.batch), quota=count)
    figures = figures_of(run_workers(job, opts.processes))
    figures["prefill_messages_per_s"] = round(prefill.ok / prefill.seconds, 1)
    figures["prefill_errors"] = prefill.errors
    figures["error_samples"] = prefill.samples + figures["error_samples"]
    return figures


def latency(opts: Options) -> dict[str, Any]:
    """Percentiles over every successful send; the achieved rate shows whether the schedule held."""
    job = replace(base_job(opts, "latency", "latency", 1), rate=opts.rate)
    tally = run_workers(job, opts.processes)
    ordered = sorted(tally.latencies_ms)
    figures = figures_of(tally)
    figures["messages_per_s"] = round(tally.ok / opts.duration, 1)  # achieved vs. --rate
    figures["target_rate"] = opts.rate
    for name, q in (("p50_ms", 0.50), ("p90_ms", 0.90), ("p99_ms", 0.99), ("max_ms", 1.0)):
        figures[name] = round(percentile(ordered, q), 3)
    return figures


def run_scenario(opts: Options, scenario: str) -> dict[str, Any]:
    """Run one scenario, bracketed by broker RSS samples."""
    before = broker_sample(opts.broker_pid) if opts.broker_pid else None
    if scenario in ("consume", "consume-batch"):
        figures = consume(opts, scenario)
    elif scenario == "latency":
        figures = latency(opts)
    elif scenario == "soak":
        tally = run_workers(base_job(opts, "soak", "soak", opts.batch), 1)
        figures = figures_of(tally)
        figures["consumed_per_s"] = round(tally.consumed / tally.seconds, 1)
        figures["rss_mib_samples"] = tally.rss_mib
    else:
        figures = produce(opts, scenario)
    after = broker_sample(opts.broker_pid) if opts.broker_pid else None
    if before and after:
        figures["broker_rss_mib"] = [round(before[0] / 1024, 1), round(after[0] / 1024, 1)]
    return figures


def render(scenario: str, f: dict[str, Any]) -> list[str]:
    """Human-readable lines: the headline figure first, then CPU/RSS and error samples."""
    tail = f"{f['errors']:,} errors, {f['messages']:,} msgs in {f['seconds']:.1f} s"
    if scenario == "soak":
        rss = f["rss_mib_samples"]
        head = (f"soak: produced {f['messages_per_s']:,.0f} msg/s and consumed {f['consumed_per_s']:,.0f} msg/s "
                f"at once ({tail})")
        if rss:
            head += f"\n  broker RSS MiB every {SOAK_SAMPLE_S:.0f} s: {', '.join(map(str, rss))} (max {max(rss)})"
    elif scenario == "latency":
        head = (
            f"latency: p50 {f['p50_ms']:.2f} ms, p90 {f['p90_ms']:.2f} ms, p99 {f['p99_ms']:.2f} ms, "
            f"max {f['max_ms']:.2f} ms ({f['messages_per_s']:,.0f} of {f['target_rate']:,.0f} msg/s, {tail})"
        )
    else:
        head = f"{scenario}: {f['messages_per_s']:,.0f} msg/s ({f['requests_per_s']:,.0f} req/s, {tail})"
    lines = [head]
    if scenario in ("consume", "consume-batch"):
        lines.append(f"  prefill: {f['prefill_messages_per_s']:,.0f} msg/s, {f['prefill_errors']:,} errors")
    resources = [f"client CPU {f['client_cpu_pct']:.0f}%"]
    if f["broker_cpu_pct"] is not None:
        resources.append(f"broker CPU {f['broker_cpu_pct']:.0f}%")
    if "broker_rss_mib" in f:
        resources.append("broker RSS {:.1f} -> {:.1f} MiB".format(*f["broker_rss_mib"]))
    lines.append("  " + ", ".join(resources))
    lines.extend(f"  error: {sample}" for sample in f["error_samples"])
    return lines


def parse_args(argv: list[str] | None) -> Options:
    """Flags to Options; refuse non-positive sizes and rates early rather than mid-run."""
    parser = argparse.ArgumentParser(prog="rockmq bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--endpoint", default="127.0.0.1:8081", help="broker gRPC address (host:port)")
    parser.add_argument("--scenario", choices=(*SCENARIOS, "soak", "all"), default="all",
                        help="'all' runs every scenario but soak (a long run: give --duration 300)")
    parser.add_argument("--topic", default="bench")
    parser.add_argument("--group", default="bench-group", help="consumer group for the consume scenario")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per produce/latency run")
    parser.add_argument("--messages", type=int, help="produce exactly N messages instead of --duration; consume N")
    parser.add_argument("--consume-messages", type=int, default=100_000, help="consume N when --messages is unset")
    parser.add_argument("--batch", type=int, default=32, help="messages per SendMessage (produce-batch) and receive")
    parser.add_argument("--size", type=int, default=1024, help="body bytes")
    parser.add_argument(
        "--concurrency",
        type=int,
        help="requests (produce) or receive-then-ack loops (consume) in flight, over all processes (at least one per process); "
             "default: " + ", ".join(f"{name} {n}" for name, n in DEFAULT_CONCURRENCY.items())
             + " (consume's prefill as produce-batch); latency and soak keep their own schedule",
    )
    parser.add_argument("--processes", type=int, default=1, help="client processes sharing the load")
    parser.add_argument("--rate", type=float, default=1000.0, help="latency scenario: messages per second")
    parser.add_argument("--rpc-timeout", type=float, default=10.0, help="seconds per RPC")
    parser.add_argument("--broker-pid", type=int, help="report this process's RSS and CPU")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    args = parser.parse_args(argv)
    for name in ("duration", "batch", "size", "processes", "rate", "rpc_timeout", "consume_messages"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if args.messages is not None and args.messages <= 0:
        parser.error("--messages must be positive")
    if args.broker_pid is not None and broker_sample(args.broker_pid) is None:  # not silently left out of the figures
        parser.error(f"--broker-pid {args.broker_pid}: no such process is running")
    return Options(**vars(args))


def main(argv: list[str] | None = None) -> int:
    """Run the chosen scenarios; exit status 1 if any message failed."""
    opts = parse_args(argv)
    chosen = SCENARIOS if opts.scenario == "all" else (opts.scenario,)
    results: dict[str, dict[str, Any]] = {}
    for scenario in chosen:
        results[scenario] = run_scenario(opts, scenario)
        if not opts.json:
            print("\n".join(render(scenario, results[scenario])), flush=True)
    if opts.json:
        print(json.dumps({"endpoint": opts.endpoint, "scenarios": results}, indent=2))
    failed = any(f["errors"] or f.get("prefill_errors") for f in results.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
