"""How long a /metrics scrape takes with many topics and groups (issue 28 §1: 1,000 topics × 1,000
groups under a second), computed in process against the real broker's services.

    python bench/metrics_scrape_bench.py [--topics 1000] [--groups 1000] [--per-group 2] [--queues 4]

Each group has a position on `--per-group` topics (lag series exist only there) and every topic one
message, so lag in time reads a record per queue. Prints the first (uncached) scrape's time, a cached
one's, the series and the text's size.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from rockmq.broker.server import Broker
from rockmq.config import Settings
from rockmq.protocol import pb
from rockmq.protocol.send_request import parsed

STALL = [0.0]


async def longest_stall() -> None:
    """The longest the loop went without running this task (what a call waiting on it would wait)."""
    while True:
        before = time.perf_counter()
        await asyncio.sleep(0)
        STALL[0] = max(STALL[0], time.perf_counter() - before)


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as data:
        broker = Broker(Settings(port=0, data_dir=str(Path(data) / "d"), max_topics=args.topics + 10,
                                 max_groups=args.groups + 10))
        await broker.start()
        meta = broker.ctx.meta
        topics = [meta.create_topic(f"t{i}", args.queues) for i in range(args.topics)]
        for t in topics:
            msg = pb.Message(topic=pb.Resource(name=t.name), body=b"x" * 100)
            msg.system_properties.message_id = f"id-{t.name}"
            msg.system_properties.message_type = pb.NORMAL
            await broker.sender.send([parsed(msg)])
        for g in range(args.groups):
            group = broker.ctx.new_group(f"g{g}")
            for k in range(args.per_group):
                broker.puller.update_offset(group, topics[(g + k) % len(topics)], 0, 0)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(broker.metrics)
        stalls = asyncio.create_task(longest_stall())
        start = time.perf_counter()
        await broker.metrics.refresh()
        text = generate_latest(registry)
        first = time.perf_counter() - start
        stalls.cancel()
        start = time.perf_counter()
        await broker.metrics.refresh()
        generate_latest(registry)
        cached = time.perf_counter() - start
        series = sum(1 for line in text.splitlines() if line and not line.startswith(b"#"))
        print(f"{args.topics} topics x {args.groups} groups ({args.per_group} topics each, {args.queues} queues): "
              f"first scrape {first * 1000:.0f} ms (the loop's longest stall meanwhile {STALL[0] * 1000:.0f} ms), "
              f"cached {cached * 1000:.0f} ms, {series} series, {len(text) / 1024:.0f} KiB")
        await broker.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--per-group", type=int, default=2)
    parser.add_argument("--queues", type=int, default=4)
    asyncio.run(main(parser.parse_args()))
