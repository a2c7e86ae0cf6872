"""Run a Job in this process or split over spawned worker processes, and measure the client's and
the broker's CPU over exactly the span of the load."""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import replace
from multiprocessing.queues import Queue as ProcessQueue
from typing import Any, TypeVar

import grpc

from rockmq.bench import own
from rockmq.bench.jobs import Job, Tally
from rockmq.bench.load import run_consume, run_latency, run_produce, run_soak
from rockmq.bench.probe import broker_sample
from rockmq.bench.wire import Client, SetupError

START_TIMEOUT = 60.0  # spawned workers import grpc first; slow on a loaded 2-core box
RUNNERS: dict[str, Callable[[Client, Job, Tally], Awaitable[None]]] = {
    "produce": run_produce,
    "consume": run_consume,
    "consume-batch": run_consume,
    "stream": run_consume,
    "soak": run_soak,
    "latency": run_latency,
    "consume-own": own.run_consume_own,
    "pull-mark": own.run_pull_mark,
    "pull-own": own.run_pull_own,
    "send-own": own.run_send_own,
    "send-sync": own.run_send_sync,
}


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
            tally.broker_cpu_s = after.cpu_s - probe.cpu_s
            tally.broker_cpu_pct = 100.0 * tally.broker_cpu_s / wall
    finally:
        await client.close()
    return tally


T = TypeVar("T")


def run_loop(coro: Coroutine[Any, Any, T]) -> T:
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


