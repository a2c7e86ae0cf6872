"""The raw load generators: loops of the bench's own calls (rockmq.bench.wire) sharing a quota
or a deadline. Each sets tally.finished when its last message is done."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from rockmq.bench.jobs import Job, Tally
from rockmq.bench.probe import broker_sample
from rockmq.bench.wire import Client, ack, ack_batched, receive, receive_batched, send

SOAK_SAMPLE_S = 10.0
SOAK_RECEIVE_BATCH = 128
T = TypeVar("T")  # what one consume loop receives and acks: entries or receipt handles


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



async def run_consume(client: Client, job: Job, tally: Tally) -> None:
    """`job.concurrency` receive-then-ack loops sharing the quota; a stream stops when drained.

    The figure ends at the last ack, so the final empty long poll does not dilute it. The
    `consume-batch` kind uses rockmq's BatchMessaging service instead of the v2 stream; the
    `stream` kind receives and never acks (a ceiling: what streaming the frames costs).
    """
    if job.kind == "consume-batch":
        await consume_loops(client, job, tally, receive_batched, ack_batched)
    elif job.kind == "stream":
        await consume_loops(client, job, tally, receive, count_only)
    else:
        await consume_loops(client, job, tally, receive, ack)


async def count_only(client: Client, tally: Tally, entries: list[T]) -> None:
    """The `stream` kind's 'ack': none, so a run measures the ReceiveMessage stream alone."""
    tally.ok += len(entries)
    tally.finished = time.monotonic()


async def consume_loops(client: Client, job: Job, tally: Tally, get: Callable[[Client, Tally, int], Awaitable[list[T] | None]],
                        put: Callable[[Client, Tally, list[T]], Awaitable[None]]) -> None:
    """`job.concurrency` loops of get-then-put sharing the quota; a loop stops when `get` finds nothing."""
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
                tally.rss_mib.append(sample.rss_mib)
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

