"""Produce throughput of rockmq's own client against the official RocketMQ Python client, in one
run against the same broker (1 KiB bodies by default).

Starts nothing: point it at a running broker.

    python bench/client_bench.py --endpoint 127.0.0.1:8081 [--duration 10]

- official: `rocketmq.Producer.send_async` with up to `--in-flight` sends outstanding (its own
  event loop thread does the I/O);
- rockmq single: `AsyncProducer.send` with `--in-flight` concurrent sends;
- rockmq batched: `AsyncProducer.send_batch` of `--batch` messages, 8 batches in flight.
Target (issue 5): rockmq's client >= 3x the official client's produce throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
import uuid

from rockmq.client import AsyncProducer, Message


def official(endpoint: str, topic: str, body: bytes, seconds: float, in_flight: int) -> float:
    from rocketmq import ClientConfiguration, Credentials, Producer
    from rocketmq import Message as OfficialMessage

    producer = Producer(ClientConfiguration(endpoint, Credentials(), request_timeout=10), (topic,))
    producer.startup()
    slots = threading.BoundedSemaphore(in_flight)
    sent = 0
    errors = 0
    lock = threading.Lock()

    def done(future) -> None:
        nonlocal sent, errors
        with lock:
            if future.exception() is None:
                sent += 1
            else:
                errors += 1
        slots.release()

    try:
        deadline = time.monotonic() + seconds
        start = time.monotonic()
        while time.monotonic() < deadline:
            slots.acquire()
            m = OfficialMessage()
            m.topic, m.body = topic, body
            producer.send_async(m).add_done_callback(done)
        for _ in range(in_flight):  # wait for the last ones
            slots.acquire(timeout=30)
        elapsed = time.monotonic() - start
    finally:
        producer.shutdown()
    if errors:
        print(f"  official client: {errors} sends failed", file=sys.stderr)
    return sent / elapsed


async def ours(endpoint: str, topic: str, body: bytes, seconds: float, batch: int, concurrency: int) -> float:
    sent = 0
    async with AsyncProducer(endpoint) as producer:
        await producer.send(Message(topic, body))  # routes fetched before the clock starts
        deadline = time.monotonic() + seconds

        async def loop() -> None:
            nonlocal sent
            while time.monotonic() < deadline:
                if batch == 1:
                    await producer.send(Message(topic, body))
                else:
                    await producer.send_batch([Message(topic, body) for _ in range(batch)])
                sent += batch

        start = time.monotonic()
        await asyncio.gather(*(loop() for _ in range(concurrency)))
        return sent / (time.monotonic() - start)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--endpoint", default="127.0.0.1:8081")
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--in-flight", type=int, default=64)
    args = p.parse_args()
    body = os.urandom(args.size)
    topic = f"client-bench-{uuid.uuid4().hex[:6]}"
    base = official(args.endpoint, topic, body, args.duration, args.in_flight)
    single = asyncio.run(ours(args.endpoint, topic, body, args.duration, 1, args.in_flight))
    batched = asyncio.run(ours(args.endpoint, topic, body, args.duration, args.batch, 8))
    rows = [(f"official client, send_async x{args.in_flight}", base, ""),
            (f"rockmq client, send x{args.in_flight}", single, f"  ({single / base:.1f}x)"),
            (f"rockmq client, send_batch({args.batch}) x8", batched, f"  ({batched / base:.1f}x; target >= 3x)")]
    for name, rate, note in rows:
        print(f"{name:<36}{rate:10,.0f} msg/s{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
