"""Sends to a PRIORITY topic against sends to a plain topic of the same size, interleaved in one run
(issue 29: a priority send costs at most 1.1× a plain one in broker CPU per message).

    PYTHONPATH=$PWD/src python bench/priority_bench.py [--rounds 6] [--requests 200] [--batch 32] [--size 1024]

One broker in-process (RocksDB in a temporary directory, default durable flush), two topics of 10
queues: `plain` (NORMAL) and `prio` (PRIORITY, max_priority 9: one lane of 10 levels). Each round
feeds each topic, in alternating order, `--requests` serialized SendMessageRequests of `--batch`
messages of `--size` bytes through what the gRPC method runs (`send_request.read`,
`SendService.send`, `send_reply`); a priority message has a random priority 0..9. Prints the
process CPU µs per message (time.process_time: every thread, RocksDB's and the fsync thread's
too), medians of the rounds, and priority / plain with the per-round ratios. The gRPC layer,
identical for both, is left out: the ratio is of the part that differs, so it is the strict one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time

from rockmq.broker.api.replies import send_reply
from rockmq.broker.server import Broker
from rockmq.config import Settings
from rockmq.protocol import pb, rpc
from rockmq.protocol.message_id import new_message_id
from rockmq.protocol.send_request import read

TOPICS = {"plain": None, "prio": "PRIORITY"}  # name -> its one type (None: the defaults)
QUEUES = 10


def request(topic: str, batch: int, size: int, prioritized: bool) -> bytes:
    messages = []
    for _ in range(batch):
        msg = pb.Message(topic=pb.Resource(name=topic), body=os.urandom(size // 2).hex().encode(),
                         user_properties={"trace": "abc"})
        sp = msg.system_properties
        sp.message_id, sp.tag, sp.born_host = new_message_id(), "created", "127.0.0.1"
        sp.message_type = pb.PRIORITY if prioritized else pb.NORMAL
        if prioritized:
            sp.priority = random.randrange(10)
        sp.keys.append("order-1")
        sp.born_timestamp.GetCurrentTime()
        messages.append(msg)
    return rpc.SendMessageRequest(messages=messages).SerializeToString()


async def measure(broker: Broker, raws: list[bytes]) -> float:
    """CPU µs per message of sending `raws`, one request at a time."""
    sender = broker.sender
    count = sum(len(read(raw)) for raw in raws[:1]) * len(raws)
    start = time.process_time()
    for raw in raws:
        reply = send_reply(await sender.send(read(raw)))
    elapsed = time.process_time() - start
    assert rpc.SendMessageResponse.FromString(reply).status.code == pb.OK
    return elapsed / count * 1e6


async def run(data_dir: str, rounds: int, requests: int, batch: int, size: int) -> dict[str, list[float]]:
    broker = Broker(Settings(host="127.0.0.1", port=0, data_dir=data_dir))
    await broker.start()
    try:
        for name, kind in TOPICS.items():
            broker.ctx.meta.create_topic(name, QUEUES, [kind] if kind else None)
        figures: dict[str, list[float]] = {name: [] for name in TOPICS}
        for name in TOPICS:  # warm up: caches filled, the allocator grown
            await measure(broker, [request(name, batch, size, name == "prio") for _ in range(20)])
        for r in range(rounds):
            order = list(TOPICS) if r % 2 == 0 else list(reversed(TOPICS))
            for name in order:
                raws = [request(name, batch, size, name == "prio") for _ in range(requests)]
                figures[name].append(await measure(broker, raws))
        return figures
    finally:
        await broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        figures = asyncio.run(run(data_dir, args.rounds, args.requests, args.batch, args.size))
    medians = {name: statistics.median(values) for name, values in figures.items()}
    for name, values in figures.items():
        print(f"{name:5} {medians[name]:6.2f} µs/msg  (rounds: {', '.join(f'{v:.2f}' for v in values)})")
    ratios = [p / q for p, q in zip(figures["prio"], figures["plain"], strict=True)]
    print(f"priority/plain: {medians['prio'] / medians['plain']:.3f} (per round: {', '.join(f'{x:.2f}' for x in ratios)})")


if __name__ == "__main__":
    main()
