"""Streaming ingest from rockmq into Spark: rows/s through the `rockmq` source (Arrow path) into a
noop sink and a Parquet sink, 1 KiB bodies by default.

Starts no broker: point it at a running one. It starts a local Spark (`--master`, default local[2]).

    rockmq serve --data-dir /tmp/bench-data &
    python bench/spark_bench.py --endpoint 127.0.0.1:8081 [--messages 1000000] [--broker-pid $!]

It preloads `--messages` messages (tag, one key, one property, `--body-size` random bytes) into a
fresh topic of `--queues` queues with `AsyncProducer.send_batch`, warms the JVM up with a batch
read of the first `--warmup` share of the topic (its JIT needs tens of seconds, paid once by a
long-running stream; the figure is printed apart), then, per sink, runs a streaming
query from the earliest offsets with Trigger.AvailableNow (so `--max-per-trigger` micro-batches)
until it has read them all (every sink `--rounds` times), and prints messages / wall time of the query (start to end, Spark's
per-batch fixed costs included) and the same over the batches after the first (steady state).
CPU seconds used meanwhile by the broker (with `--broker-pid`), Spark's JVM and its Python
workers; and the 1-minute load average at the end (anything else running skews the figures).
Target (issue 7): >= 150,000 messages/s of 1 KiB on the 2-core machine, broker and Spark together.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid

from rockmq.client import AsyncProducer, Message
from rockmq.protocol import admin, admin_grpc


def cpu_seconds(pid: int) -> float:
    """CPU seconds a process used so far (user + system, children not included)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spark_cpu() -> dict[int, tuple[str, float]]:
    """(jvm|python, CPU seconds) of this process's Spark JVM and Python workers (its descendants)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    children.setdefault(int(f.read().rsplit(")", 1)[1].split()[1]), []).append(int(entry))
            except OSError:
                pass
    out, todo = {}, list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                kind = "jvm" if b"java" in f.read().split(b"\0")[0] else "python"
            out[pid] = (kind, cpu_seconds(pid))
        except OSError:
            continue
        todo.extend(children.get(pid, []))
    return out


def create_topic(endpoint: str, topic: str, queues: int) -> None:
    import grpc

    with grpc.insecure_channel(endpoint) as channel:
        admin_grpc.AdminStub(channel).CreateTopic(admin.CreateTopicRequest(name=topic, queue_count=queues), timeout=10)


async def preload(endpoint: str, topic: str, count: int, body_size: int, batch: int, in_flight: int) -> float:
    bodies = [os.urandom(body_size) for _ in range(64)]
    sent = 0
    start = time.perf_counter()
    async with AsyncProducer(endpoint, request_timeout=30) as producer:
        async def worker(first: int, step: int) -> None:
            nonlocal sent
            for at in range(first * batch, count, step * batch):
                n = min(batch, count - at)
                await producer.send_batch([Message(topic, bodies[(at + i) % 64], tag="bench", keys=(f"k{at + i}",),
                                                   properties={"source": "bench"}) for i in range(n)])
                sent += n
        await asyncio.gather(*(worker(i, in_flight) for i in range(in_flight)))
    return count / (time.perf_counter() - start)


def warm_up(spark, args, topic: str) -> tuple[int, float]:
    """A batch read of the first `--warmup` share of every queue into noop: the JVM compiles its
    hot paths (JIT) in the first tens of seconds, which a long-running stream pays once."""
    from rockmq.spark.fetch import Brokers

    ends = {topic: {q.key: q.min_offset + int((q.max_offset - q.min_offset) * args.warmup)
                    for q in Brokers(args.endpoint, 30).queues(topic)}}
    df = (spark.read.format("rockmq").option("endpoint", args.endpoint).option("topic", topic)
          .option("endingOffsets", json.dumps(ends)).load())
    t0 = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return sum(ends[topic].values()), time.perf_counter() - t0


def run(spark, args, topic: str, sink: str, workdir: str) -> dict:
    stream = (spark.readStream.format("rockmq").option("endpoint", args.endpoint).option("topic", topic)
              .option("startingOffsets", "earliest").option("maxMessagesPerTrigger", str(args.max_per_trigger)).load())
    run_dir = tempfile.mkdtemp(prefix=f"{sink}-", dir=workdir)
    writer = stream.writeStream.trigger(availableNow=True).option("checkpointLocation", os.path.join(run_dir, "checkpoint"))
    if sink == "parquet":
        writer = writer.format("parquet").option("path", os.path.join(run_dir, "out"))
    else:
        writer = writer.format("noop")
    broker0 = cpu_seconds(args.broker_pid) if args.broker_pid else None
    spark0 = spark_cpu()
    t0 = time.perf_counter()
    query = writer.start()
    query.awaitTermination()
    wall = time.perf_counter() - t0
    broker1 = cpu_seconds(args.broker_pid) if args.broker_pid else None
    spark1 = spark_cpu()
    if query.exception() is not None:
        raise RuntimeError(query.exception())
    batches = [p for p in query.recentProgress if p.numInputRows]
    rows = sum(p.numInputRows for p in batches)
    later = batches[1:]
    later_s = sum(p.durationMs.get("triggerExecution", 0) for p in later) / 1000
    return {"sink": sink, "rows": rows, "wall_s": wall, "rate": rows / wall, "batches": len(batches),
            "steady": sum(p.numInputRows for p in later) / later_s if later_s else float("nan"),
            "broker_cpu_s": None if broker0 is None else broker1 - broker0,
            **{f"{kind}_cpu_s": sum(t - spark0.get(pid, (kind, 0.0))[1] for pid, (k, t) in spark1.items() if k == kind)
               for kind in ("jvm", "python")}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--endpoint", default="127.0.0.1:8081")
    p.add_argument("--messages", type=int, default=1_000_000)
    p.add_argument("--body-size", type=int, default=1024)
    p.add_argument("--queues", type=int, default=8)
    p.add_argument("--max-per-trigger", type=int, default=500_000)
    p.add_argument("--sinks", default="noop,parquet")
    p.add_argument("--rounds", type=int, default=2, help="times to run every sink (the JVM keeps warming up)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--topic", help="read this already loaded topic instead of preloading a fresh one")
    p.add_argument("--broker-pid", type=int)
    p.add_argument("--batch", type=int, default=256, help="messages per send_batch when preloading")
    p.add_argument("--in-flight", type=int, default=4, help="send_batch calls outstanding when preloading")
    p.add_argument("--warmup", type=float, default=0.25, help="share of the topic read once before the timed runs (0: none)")
    args = p.parse_args()

    topic = args.topic
    if topic is None:
        topic = f"spark-bench-{uuid.uuid4().hex[:8]}"
        create_topic(args.endpoint, topic, args.queues)
        rate = asyncio.run(preload(args.endpoint, topic, args.messages, args.body_size, args.batch, args.in_flight))
        print(f"preloaded {args.messages:,} messages of {args.body_size} B into {topic} ({args.queues} queues): "
              f"{rate:,.0f} msg/s", flush=True)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import rockmq.spark

    spark = (SparkSession.builder.master(args.master).appName("rockmq-spark-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    rockmq.spark.register(spark)
    if args.warmup > 0:
        n, seconds = warm_up(spark, args, topic)
        print(f"warm-up: batch read of {n:,} messages to noop in {seconds:.1f} s ({n / seconds:,.0f} msg/s)", flush=True)
    print(f"{'sink':8} {'messages':>10} {'batches':>7} {'wall s':>7} {'msg/s':>9} {'steady msg/s':>12} "
          f"{'cpu s: broker':>13} {'jvm':>5} {'python':>6} {'load':>5}")
    with tempfile.TemporaryDirectory(prefix="rockmq-spark-bench-") as workdir:
        for sink in args.sinks.split(",") * args.rounds:
            r = run(spark, args, topic, sink.strip(), workdir)
            cpu = "" if r["broker_cpu_s"] is None else f"{r['broker_cpu_s']:.1f}"
            print(f"{r['sink']:8} {r['rows']:>10,} {r['batches']:>7} {r['wall_s']:>7.1f} {r['rate']:>9,.0f} "
                  f"{r['steady']:>12,.0f} {cpu:>13} {r['jvm_cpu_s']:>5.1f} {r['python_cpu_s']:>6.1f} {os.getloadavg()[0]:>5.1f}",
                  flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
