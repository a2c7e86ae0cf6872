"""Consumer throughput of a filtered group: does a group that wants 1 % of a topic read its
matches about as fast as an unfiltered group reads the same number of messages?

Starts nothing: point it at a running broker. It creates a topic, registers a filtered group
(SQL `k = 'hit'`) before producing, produces `--matches` × 100 messages of `--size` bytes of
which every hundredth matches, then times three groups reading `--matches` messages each
(BatchMessaging receive + ack, `--consumers` loops); with `--broker-pid` also the broker's CPU per
message read (steadier than msg/s on a shared machine):

- unfiltered: takes everything, reads the first `--matches` messages;
- indexed: the group registered before producing; reads its matches from the match index;
- read-time: a group with the same filter registered after producing; the broker scans the
  log and evaluates every entry (what the index replaces).

    python bench/filter_consume_bench.py --endpoint 127.0.0.1:8081 [--matches 2000] [--broker-pid PID]
Target: indexed >= 80 % of unfiltered.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid

from rockmq.bench.probe import broker_sample
from rockmq.plumbing.channels import client_metadata, new_client_id, open_aio_channel
from rockmq.protocol import admin, admin_grpc, batch, batch_grpc, pb, rpc, svc

OK, NOT_FOUND = pb.OK, pb.MESSAGE_NOT_FOUND
RPC_TIMEOUT = 30.0
SEND_BATCH = 64
SEND_CONCURRENCY = 8
RECEIVE_BATCH = 256
META = client_metadata(new_client_id("filter-bench"))
SQL = pb.FilterExpression(type=pb.SQL, expression="k = 'hit'")
EVERYTHING = pb.FilterExpression(type=pb.TAG, expression="*")


class Bench:
    def __init__(self, endpoint: str, size: int, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid
        self.channel = open_aio_channel(endpoint)
        self.mq = svc.MessagingServiceStub(self.channel)
        self.batch = batch_grpc.BatchMessagingStub(self.channel)
        self.topic = f"filter-bench-{uuid.uuid4().hex[:8]}"
        self.body = os.urandom(size)
        self.sent = 0

    async def produce(self, total: int) -> float:
        """Send `total` messages, every hundredth with k=hit; -> messages per second."""
        next_index = 0

        async def sender() -> None:
            nonlocal next_index
            while next_index < total:
                first, next_index = next_index, min(next_index + SEND_BATCH, total)
                request = rpc.SendMessageRequest()
                for i in range(first, next_index):
                    m = request.messages.add(topic=pb.Resource(name=self.topic), body=self.body)
                    m.user_properties["k"] = "hit" if i % 100 == 0 else "miss"
                    m.system_properties.message_id = f"{self.topic}-{i}"
                    m.system_properties.message_type = pb.NORMAL
                reply = await self.mq.SendMessage(request, metadata=META, timeout=RPC_TIMEOUT)
                if reply.status.code != OK:
                    raise RuntimeError(f"send failed: {reply.status.message}")
                self.sent += next_index - first

        start = time.monotonic()
        await asyncio.gather(*(sender() for _ in range(SEND_CONCURRENCY)))
        return total / (time.monotonic() - start)

    async def receive(self, group: str, expr: pb.FilterExpression, batch_size: int, poll_ms: int = 0) -> list[str]:
        reply = await self.batch.Receive(batch.ReceiveRequest(
            group=group, topic=self.topic, filter_expression=expr, batch_size=batch_size,
            invisible_duration_ms=60_000, long_polling_timeout_ms=poll_ms), metadata=META, timeout=RPC_TIMEOUT)
        if reply.status.code not in (OK, NOT_FOUND):
            raise RuntimeError(f"receive failed: {reply.status.message}")
        return [pb.Message.FromString(raw).system_properties.receipt_handle for raw in reply.messages]

    def broker_cpu_s(self) -> float | None:
        sample = broker_sample(self.broker_pid) if self.broker_pid is not None else None
        return sample.cpu_s if sample else None

    async def consume(self, group: str, expr: pb.FilterExpression, want: int, consumers: int) -> tuple[float, str]:
        """Receive and ack `want` messages with `consumers` loops; -> messages per second, timed
        to the last ack (a loop still long-polling an emptied topic does not count), and the
        broker's CPU µs per message read (empty without `--broker-pid`)."""
        got = 0
        finished = 0.0

        async def loop() -> None:
            nonlocal got, finished
            while got < want:
                handles = await self.receive(group, expr, min(RECEIVE_BATCH, want - got), poll_ms=1000)
                if not handles:
                    break
                got += len(handles)
                await self.batch.Ack(batch.AckRequest(group=group, topic=self.topic, receipt_handles=handles),
                                     metadata=META, timeout=RPC_TIMEOUT)
                finished = time.monotonic()

        cpu, start = self.broker_cpu_s(), time.monotonic()
        loops = [asyncio.create_task(loop()) for _ in range(consumers)]
        while got < want and (pending := [t for t in loops if not t.done()]):
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED, timeout=RPC_TIMEOUT)
        for t in loops:
            t.cancel()
        if got < want:
            raise RuntimeError(f"{group}: only {got} of {want} messages arrived")
        cpu_after = self.broker_cpu_s()
        per_msg = f", broker CPU {(cpu_after - cpu) * 1e6 / got:,.1f} us/msg" if cpu is not None and cpu_after is not None else ""
        return got / (finished - start), per_msg


async def run(args: argparse.Namespace) -> int:
    b = Bench(args.endpoint, args.size, args.broker_pid)
    try:
        await asyncio.wait_for(b.channel.channel_ready(), 5)
    except TimeoutError:
        print(f"filter_consume_bench: no broker at {args.endpoint}", file=sys.stderr)
        return 3
    try:
        await admin_grpc.AdminStub(b.channel).CreateTopic(admin.CreateTopicRequest(name=b.topic, queue_count=8),
                                                          timeout=RPC_TIMEOUT)
        indexed, late, everything = (f"{b.topic}-{kind}" for kind in ("indexed", "read-time", "unfiltered"))
        await b.receive(indexed, SQL, 1)  # registers the filter before anything is written
        rate = await b.produce(args.matches * 100)
        print(f"produced {args.matches * 100:,} messages ({args.matches:,} matches) at {rate:,.0f} msg/s")
        plain, plain_cpu = await b.consume(everything, EVERYTHING, args.matches, args.consumers)
        fast, fast_cpu = await b.consume(indexed, SQL, args.matches, args.consumers)
        slow, slow_cpu = await b.consume(late, SQL, args.matches, args.consumers)
    finally:
        await b.channel.close()
    print(f"unfiltered group:          {plain:10,.0f} msg/s{plain_cpu}")
    print(f"1 % filter, match index:   {fast:10,.0f} msg/s  = {fast / plain:.0%} of unfiltered (target >= 80 %){fast_cpu}")
    print(f"1 % filter, read-time eval:{slow:10,.0f} msg/s  = {slow / plain:.0%} of unfiltered{slow_cpu}")
    return 0 if fast >= 0.8 * plain else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--endpoint", default="127.0.0.1:8081")
    p.add_argument("--matches", type=int, default=2000, help="matches per group (the topic gets 100x as many messages)")
    p.add_argument("--size", type=int, default=1024, help="body bytes")
    p.add_argument("--consumers", type=int, default=4, help="concurrent receive+ack loops per group")
    p.add_argument("--broker-pid", type=int, help="print the broker's CPU per message read (from /proc)")
    return asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
