"""Load generators that go through rockmq's own client, as an application would: what users get.

consume-own: `AsyncSimpleConsumer.receive(max_messages=256)` + one `ack_many` per batch;
pull-own: `AsyncPullConsumer.pull` + `commit` per batch, one loop per queue; producer-own:
`await producer.send(msg)` with many sends in flight, or `send_batch`; send-sync: the
synchronous `Producer.send`, one at a time.
"""

from __future__ import annotations

import asyncio
import os
import time

from rockmq.bench.jobs import Job, Tally
from rockmq.bench.load import consume_loops
from rockmq.bench.wire import INVISIBLE_SECONDS, LONG_POLL_SECONDS, Client
from rockmq.client import AsyncProducer, AsyncPullConsumer, AsyncSimpleConsumer, Message, Producer, Queue, ReceivedMessage
from rockmq.client.errors import RockmqError

PULL_GROUP_SUFFIX = "-pull"  # pull-own's offsets are its own group's, apart from the POP group's


def pull_group(client: Client) -> str:
    return client.opts.group + PULL_GROUP_SUFFIX


def message(client: Client) -> Message:
    """A message with a fresh random body (equal bodies would compress in the store)."""
    return Message(client.opts.topic, os.urandom(client.opts.size))


async def run_consume_own(client: Client, job: Job, tally: Tally) -> None:
    """`job.concurrency` loops of receive(max_messages=job.batch) then one ack_many of the batch."""
    opts = client.opts
    async with AsyncSimpleConsumer(opts.endpoint, opts.group, {opts.topic: "*"}, await_s=LONG_POLL_SECONDS,
                                   request_timeout=opts.rpc_timeout, tls=opts.tls, credentials=client.credentials) as consumer:

        async def get(_: Client, counts: Tally, wanted: int) -> list[ReceivedMessage] | None:
            counts.requests += 1
            try:
                return await consumer.receive(max_messages=wanted, invisible_s=INVISIBLE_SECONDS)
            except RockmqError as exc:
                counts.fail(f"receive: {exc}")
                return None

        async def put(_: Client, counts: Tally, messages: list[ReceivedMessage]) -> None:
            counts.requests += 1
            try:
                refused = await consumer.ack_many(messages)
            except RockmqError as exc:
                counts.fail(f"ack_many: {exc}", len(messages))
                return
            counts.ok += len(messages) - len(refused)
            counts.finished = time.monotonic()
            for _message, error in refused:
                counts.fail(f"ack_many: {error}")

        await consume_loops(client, job, tally, get, put)


async def run_pull_mark(client: Client, job: Job, tally: Tally) -> None:
    """Move the pull group's offsets to the end of every queue, so pull-own reads what comes next."""
    async with AsyncPullConsumer(client.opts.endpoint, pull_group(client), request_timeout=client.opts.rpc_timeout,
                                 tls=client.opts.tls, credentials=client.credentials) as puller:
        for queue in await puller.queues(client.opts.topic):
            await puller.commit(queue, await puller.offset_at(queue, "latest"))
    tally.finished = time.monotonic()


async def run_pull_own(client: Client, job: Job, tally: Tally) -> None:
    """One pull-then-commit loop per queue from the group's offsets, until the quota is read or
    every queue is drained."""
    opts = client.opts
    quota = job.quota or 0
    async with AsyncPullConsumer(opts.endpoint, pull_group(client), request_timeout=opts.rpc_timeout, tls=opts.tls,
                                 credentials=client.credentials) as puller:

        async def drain(queue: Queue) -> None:
            offset = await puller.committed(queue) or 0
            while tally.ok < quota:  # loops may overshoot by a batch each: all of it is counted
                tally.requests += 2
                try:
                    result = await puller.pull(queue, offset, max_messages=job.batch)
                    if not result.messages:
                        return
                    offset = result.next_offset
                    await puller.commit(queue, offset)
                except RockmqError as exc:
                    tally.fail(f"pull {queue.queue_id}: {exc}")
                    return
                tally.ok += len(result.messages)
                tally.finished = time.monotonic()

        try:
            queues = await puller.queues(opts.topic)
        except RockmqError as exc:
            tally.fail(f"route: {exc}")
            return
        await asyncio.gather(*(drain(queue) for queue in queues))
    tally.finished = max(tally.finished, tally.started)


async def run_send_own(client: Client, job: Job, tally: Tally) -> None:
    """`job.concurrency` `await producer.send(msg)` loops (job.batch 1), or `send_batch` of job.batch."""
    deadline = tally.started + client.opts.duration
    remaining = job.quota
    async with AsyncProducer(client.opts.endpoint, request_timeout=client.opts.rpc_timeout, tls=client.opts.tls,
                             credentials=client.credentials) as producer:

        async def sender() -> None:
            nonlocal remaining
            while (time.monotonic() < deadline) if remaining is None else remaining > 0:
                count = job.batch if remaining is None else min(job.batch, remaining)
                if remaining is not None:
                    remaining -= count
                tally.requests += 1
                try:
                    if job.batch == 1:
                        await producer.send(message(client))
                    else:
                        await producer.send_batch([message(client) for _ in range(count)])
                except RockmqError as exc:
                    tally.fail(f"send: {exc}", count)
                    continue
                tally.ok += count
                tally.finished = time.monotonic()

        await asyncio.gather(*(sender() for _ in range(job.concurrency)))


async def run_send_sync(client: Client, job: Job, tally: Tally) -> None:
    """The synchronous Producer, one send at a time, each send's round trip recorded."""
    deadline = tally.started + client.opts.duration

    def loop() -> None:
        with Producer(client.opts.endpoint, request_timeout=client.opts.rpc_timeout, tls=client.opts.tls,
                      credentials=client.credentials) as producer:
            producer.send(message(client))  # the route, before the clock starts
            while time.monotonic() < deadline and (job.quota is None or tally.ok < job.quota):
                begin = time.perf_counter()
                tally.requests += 1
                try:
                    producer.send(message(client))
                except RockmqError as exc:
                    tally.fail(f"send: {exc}")
                    continue
                tally.latencies_ms.append((time.perf_counter() - begin) * 1000.0)
                tally.ok += 1
        tally.finished = time.monotonic()

    await asyncio.to_thread(loop)

