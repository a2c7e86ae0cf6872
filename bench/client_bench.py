"""Produce and consume throughput of rockmq's own client against the official RocketMQ Python client
(rocketmq-python-client 5.1.2), in one run against the same broker (1 KiB bodies by default).

Starts nothing: point it at a running broker.

    python bench/client_bench.py --endpoint 127.0.0.1:8081 [--duration 10] [--only produce|consume]

Produce (`--duration` seconds each):
- official: `rocketmq.Producer.send_async` with up to `--in-flight` sends outstanding (its own
  event loop thread does the I/O);
- rockmq single: `AsyncProducer.send` with `--in-flight` concurrent sends;
- rockmq batched: `AsyncProducer.send_batch` of `--batch` messages, 8 batches in flight;
- rockmq gathered (issue 18 §2.7): `AsyncProducer.send` with `--own-in-flight` (256) sends in
  flight, against `send_batch` of 64 with as many messages in flight, in the same run: the
  accumulator gathers concurrent sends per queue, target >= 0.8x;
- rockmq sync: `Producer.send` one at a time for `--sync-messages`, p50 and p99 (target p50 <= 0.5 ms).
Target (issue 5): rockmq's client >= 3x the official client's produce throughput.

Consume: every contender gets a fresh topic preloaded with `--consume-messages` messages (rockmq's
`send_batch`, before its clock starts) and a fresh group, and consumes until it has them all or
`--duration` seconds have passed since its start. Its rate is messages / (last handled - first
handled): steady state, without start-up (the official PushConsumer first scans its assignments 1 s
after start); the time to the first message is a column apart, and so is the client's CPU time per
message (and the broker's, given `--broker-pid`).
- official simple: `rocketmq.SimpleConsumer`, `--official-threads` threads of receive(32, invisible
  30 s, long poll 1 s), each acking its batch on a pool of `--official-ack-threads` threads (5.1.2's
  ack_async is unusable: it returns nothing and fails outside the main thread) and waiting for it;
- official push: `rocketmq.PushConsumer` (5.1.2 has one: POP with auto-renew, cache 1024 messages,
  `--official-push-threads` consumption threads, each acking synchronously), a listener that counts;
- rockmq push: `AsyncPushConsumer`, clustering (PullMessage + offset commits), an async handler
  that counts; also `mode="pop"`; `--push-batch` and `--push-concurrency` set batch_size and
  concurrency, every other option is the default;
- rockmq simple: `AsyncSimpleConsumer`, `--simple-tasks` tasks of receive(32, 30 s, long poll 1 s),
  each acking its batch in one request (ack_many).
Target (issue 5): rockmq's consumer >= 2x the official client's consume throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from rockmq.client import AsyncProducer, AsyncSimpleConsumer, Message, Producer
from rockmq.client.push import AsyncPushConsumer


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



def sync_latencies(endpoint: str, topic: str, body: bytes, n: int) -> list[float]:
    """Milliseconds of each of n one-at-a-time `Producer.send` calls, sorted."""
    with Producer(endpoint) as producer:
        producer.send(Message(topic, body))  # routes fetched before the clock starts
        latencies = []
        for _ in range(n):
            start = time.perf_counter()
            producer.send(Message(topic, body))
            latencies.append((time.perf_counter() - start) * 1000)
    return sorted(latencies)


def produce(args: argparse.Namespace, body: bytes) -> None:
    topic = f"client-bench-{uuid.uuid4().hex[:6]}"
    base = official(args.endpoint, topic, body, args.duration, args.in_flight)
    single = asyncio.run(ours(args.endpoint, topic, body, args.duration, 1, args.in_flight))
    batched = asyncio.run(ours(args.endpoint, topic, body, args.duration, args.batch, 8))
    gathered = asyncio.run(ours(args.endpoint, topic, body, args.duration, 1, args.own_in_flight))
    batches = max(1, args.own_in_flight // 64)
    of64 = asyncio.run(ours(args.endpoint, topic, body, args.duration, 64, batches))
    rows = [(f"official client, send_async x{args.in_flight}", base, ""),
            (f"rockmq client, send x{args.in_flight}", single, f"  ({single / base:.1f}x)"),
            (f"rockmq client, send_batch({args.batch}) x8", batched, f"  ({batched / base:.1f}x; target >= 3x)"),
            (f"rockmq client, send x{args.own_in_flight}", gathered, f"  ({gathered / of64:.2f}x the next; target >= 0.8x)"),
            (f"rockmq client, send_batch(64) x{batches}", of64, "")]
    print(f"produce: {args.duration:g} s per contender, {args.size} B bodies")
    for name, rate, note in rows:
        print(f"{name:<36}{rate:10,.0f} msg/s{note}")
    latencies = sync_latencies(args.endpoint, topic, body, args.sync_messages)
    p50, p99 = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]
    print(f"{'rockmq client, sync send one at a time':<36} p50 {p50:.2f} ms, p99 {p99:.2f} ms (target p50 <= 0.5 ms)")


# -- consume -----------------------------------------------------------------------------------


class Clock:
    """Counts handled messages (from any thread) and notes when the first and the last came."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.count = 0
        self.start = time.monotonic()
        self.first = self.last = 0.0
        self.first_n = 0  # handled at `first` (a whole batch for the simple consumers)
        self.done = threading.Event()
        self._lock = threading.Lock()

    def add(self, n: int = 1) -> None:
        with self._lock:
            now = time.monotonic()
            if not self.count:
                self.first, self.first_n = now, n
            self.count += n
            self.last = now
            if self.count >= self.target:
                self.done.set()

    def rate(self) -> float:
        """Messages per second from the first to the last one handled."""
        return (self.count - self.first_n) / (self.last - self.first) if self.last > self.first else 0.0

    def report(self, name: str) -> tuple[str, float, float, int]:
        return name, self.rate(), (self.first - self.start) if self.count else float("nan"), self.count


async def preload(endpoint: str, topic: str, body: bytes, n: int, batch: int = 64, concurrency: int = 8) -> float:
    """Put n messages in topic (round robin over its queues); -> msgs/s."""
    left = n

    async with AsyncProducer(endpoint) as producer:
        async def loop() -> None:
            nonlocal left
            while left > 0:
                k = min(batch, left)
                left -= k
                await producer.send_batch([Message(topic, body) for _ in range(k)])

        start = time.monotonic()
        await asyncio.gather(*(loop() for _ in range(concurrency)))
        return n / (time.monotonic() - start)


def official_simple(endpoint: str, topic: str, group: str, n: int, timeout: float, threads: int, ack_threads: int) -> Clock:
    from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer

    clock = Clock(n)
    consumer = SimpleConsumer(ClientConfiguration(endpoint, Credentials(), request_timeout=10), group,
                              {topic: FilterExpression()}, await_duration=1)
    consumer.startup()
    errors: list[BaseException] = []
    # 5.1.2's ack_async cannot help: it returns None, and makes an asyncio.Future with no running
    # loop (RuntimeError outside the main thread). So acks are the blocking ack(), run on a pool.
    acks = ThreadPoolExecutor(ack_threads, thread_name_prefix="official-ack")

    def loop() -> None:
        while not clock.done.is_set():
            try:
                messages = consumer.receive(32, 30)
                list(acks.map(consumer.ack, messages))
            except Exception as e:  # noqa: BLE001 -- count, report, go on
                errors.append(e)
                time.sleep(0.1)
                continue
            if messages:
                clock.add(len(messages))

    workers = [threading.Thread(target=loop, daemon=True) for _ in range(threads)]
    try:
        for w in workers:
            w.start()
        clock.done.wait(timeout)
        clock.done.set()
        for w in workers:
            w.join(5)
    finally:
        acks.shutdown(wait=False)
        consumer.shutdown()
    if errors:
        print(f"  official SimpleConsumer: {len(errors)} errors, e.g. {errors[0]!r}", file=sys.stderr)
    return clock


def official_push(endpoint: str, topic: str, group: str, n: int, timeout: float, threads: int) -> Clock:
    from rocketmq import ClientConfiguration, ConsumeResult, Credentials, FilterExpression, MessageListener, PushConsumer

    clock = Clock(n)

    class Counter(MessageListener):
        def consume(self, message) -> ConsumeResult:
            clock.add()
            return ConsumeResult.SUCCESS

    consumer = PushConsumer(ClientConfiguration(endpoint, Credentials(), request_timeout=10), group, Counter(),
                            {topic: FilterExpression()}, consumption_thread_count=threads)
    clock.start = time.monotonic()
    consumer.startup()
    try:
        clock.done.wait(timeout)
    finally:
        consumer.shutdown()
    return clock


async def ours_push(endpoint: str, topic: str, group: str, n: int, timeout: float, **options) -> Clock:
    clock = Clock(n)

    async def handler(message) -> None:
        clock.add()

    consumer = AsyncPushConsumer(endpoint, group, {topic: "*"}, handler, **options)
    clock.start = time.monotonic()
    await consumer.start()
    try:
        await asyncio.wait_for(asyncio.to_thread(clock.done.wait, timeout), timeout + 1)
    finally:
        await consumer.close()
    return clock


async def ours_simple(endpoint: str, topic: str, group: str, n: int, timeout: float, tasks: int) -> Clock:
    clock = Clock(n)
    errors: list[BaseException] = []
    async with AsyncSimpleConsumer(endpoint, group, {topic: "*"}, await_s=1) as consumer:
        async def loop() -> None:
            while not clock.done.is_set():
                try:
                    messages = await consumer.receive(32, 30)
                    await consumer.ack_many(messages)
                except Exception as e:  # noqa: BLE001
                    errors.append(e)
                    await asyncio.sleep(0.1)
                    continue
                if messages:
                    clock.add(len(messages))

        clock.start = time.monotonic()
        runners = [asyncio.create_task(loop()) for _ in range(tasks)]
        await asyncio.to_thread(clock.done.wait, timeout)
        clock.done.set()
        await asyncio.wait(runners, timeout=5)
    if errors:
        print(f"  rockmq AsyncSimpleConsumer: {len(errors)} errors, e.g. {errors[0]!r}", file=sys.stderr)
    return clock


def broker_cpu(pid: int | None) -> float:
    """CPU seconds the broker process has used (Linux), to see who is the bottleneck; 0 without a pid."""
    if not pid:
        return 0.0
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def consume(args: argparse.Namespace, body: bytes) -> None:
    n, timeout, ep = args.consume_messages, args.duration, args.endpoint
    push_options = {"batch_size": args.push_batch, "concurrency": args.push_concurrency}
    contenders = {
        "official-simple": (f"official SimpleConsumer {args.official_threads}+{args.official_ack_threads}t",
                            lambda t, g: official_simple(ep, t, g, n, timeout, args.official_threads, args.official_ack_threads)),
        "official-push": (f"official PushConsumer {args.official_push_threads}t",
                          lambda t, g: official_push(ep, t, g, n, timeout, args.official_push_threads)),
        "push": ("rockmq push, clustering", lambda t, g: asyncio.run(ours_push(ep, t, g, n, timeout, **push_options))),
        "push-pop": ("rockmq push, pop", lambda t, g: asyncio.run(ours_push(ep, t, g, n, timeout, mode="pop", **push_options))),
        "simple": (f"rockmq AsyncSimpleConsumer x{args.simple_tasks}",
                   lambda t, g: asyncio.run(ours_simple(ep, t, g, n, timeout, args.simple_tasks))),
    }
    chosen = args.consumers.split(",")
    unknown = [c for c in chosen if c not in contenders]
    if unknown:
        raise SystemExit(f"--consumers: unknown {', '.join(unknown)}; choose from {', '.join(contenders)}")
    rows = []
    for key in chosen:
        name, run = contenders[key]
        topic, group = f"consume-bench-{uuid.uuid4().hex[:6]}", f"consume-bench-{uuid.uuid4().hex[:6]}"
        loaded = asyncio.run(preload(ep, topic, body, n))
        print(f"  {name}: preloaded {n:,} messages into {topic} at {loaded:,.0f} msg/s", file=sys.stderr)
        cpu, broker = time.process_time(), broker_cpu(args.broker_pid)
        clock = run(topic, group)
        cpu, broker = time.process_time() - cpu, broker_cpu(args.broker_pid) - broker
        rows.append((key, *clock.report(name), cpu * 1e6 / max(clock.count, 1), broker * 1e6 / max(clock.count, 1)))
        if clock.count < n:
            print(f"  {name}: only {clock.count:,} of {n:,} messages in {timeout:.0f} s", file=sys.stderr)
    official_rates = [rate for key, _, rate, *_ in rows if key.startswith("official")]
    base = max(official_rates, default=0.0)
    print(f"consume: {n:,} messages of {args.size} B per contender; msgs/s from the first to the last message handled")
    print(f"{'contender':<36}{'msgs/s':>9}{'vs official':>13}{'1st msg':>9}{'handled':>10}{'client CPU':>12}"
          + (f"{'broker CPU':>12}" if args.broker_pid else ""))
    for _, name, rate, first, count, cpu, broker in rows:
        ratio = f"{rate / base:.1f}x" if base else "-"
        print(f"{name:<36}{rate:9,.0f}{ratio:>13}{first:8.2f}s{count:10,}{cpu:9,.0f} us"
              + (f"{broker:9,.0f} us" if args.broker_pid else ""))
    print(f"(vs official: against the best official line; target >= 2x. CPU: per message handled, "
          f"start to close.)\nrockmq push options: {push_options}, others default; "
          f"simple consumers: receive(32, invisible 30 s), long poll 1 s")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--endpoint", default="127.0.0.1:8081")
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--in-flight", type=int, default=64)
    p.add_argument("--own-in-flight", type=int, default=256, help="concurrent sends gathered by rockmq's producer")
    p.add_argument("--sync-messages", type=int, default=2000, help="one-at-a-time sync sends timed")
    p.add_argument("--only", choices=("produce", "consume"), help="run one part only")
    p.add_argument("--consume-messages", type=int, default=150_000, help="preloaded per consume contender")
    p.add_argument("--official-threads", type=int, default=8, help="receive threads of the official SimpleConsumer")
    p.add_argument("--official-ack-threads", type=int, default=32, help="its pool of blocking ack() calls")
    p.add_argument("--official-push-threads", type=int, default=20, help="consumption threads of the official PushConsumer")
    p.add_argument("--simple-tasks", type=int, default=8, help="receive+ack tasks of rockmq's AsyncSimpleConsumer")
    p.add_argument("--push-batch", type=int, default=64, help="AsyncPushConsumer batch_size")
    p.add_argument("--push-concurrency", type=int, default=64, help="AsyncPushConsumer concurrency")
    p.add_argument("--broker-pid", type=int, help="also report the broker's CPU per message (Linux /proc)")
    p.add_argument("--consumers", default="official-simple,official-push,push,push-pop,simple",
                   help="consume contenders, comma separated")
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    body = os.urandom(args.size)
    if args.only != "consume":
        produce(args, body)
    if args.only != "produce":
        consume(args, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
