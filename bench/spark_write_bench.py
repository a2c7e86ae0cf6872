"""Spark -> rockmq: rows/s through the exactly-once `rockmq` sink, 1 KiB bodies by default.

Starts no broker: point it at a running one. It starts a local Spark (`--master`, default local[2]).

    rockmq serve --data-dir /tmp/bench-data &
    python bench/spark_write_bench.py --endpoint 127.0.0.1:8081 [--rows 1000000] [--broker-pid $!]

The DataFrame is `spark.range(rows)` with a `--body-size` binary body per row (the row number,
padded), in `--partitions` partitions. After a small warm-up write (Python workers start, imports),
it times, per run: the same DataFrame into Spark's `noop` sink (what Spark alone costs), then
`df.write.format("rockmq")` into a fresh topic (stage in the tasks + publish at commit, i.e.
until every message is durable in its queue), and checks the topic holds exactly `--rows`
messages. With `--broker-pid`, the broker's CPU seconds per write too. Target (issue 7):
>= 50,000 messages/s of 1 KiB on the 2-core machine, broker and Spark together.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid

import grpc

from rockmq.protocol import admin, admin_grpc


def cpu_seconds(pid: int | None) -> float | None:
    if pid is None:
        return None
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def topic_size(endpoint: str, topic: str) -> int:
    with grpc.insecure_channel(endpoint) as channel:
        info = admin_grpc.AdminStub(channel).DescribeTopic(admin.TopicRequest(name=topic), timeout=30)
    return sum(q.max_offset - q.min_offset for q in info.queues)


def create_topic(endpoint: str, topic: str, queues: int) -> None:
    with grpc.insecure_channel(endpoint) as channel:
        admin_grpc.AdminStub(channel).CreateTopic(admin.CreateTopicRequest(name=topic, queue_count=queues), timeout=10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--endpoint", default="127.0.0.1:8081")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--body-size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=2, help="Spark partitions = write tasks")
    ap.add_argument("--queues", type=int, default=8)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=256, help="sink option batchSize (messages per Stage)")
    ap.add_argument("--max-inflight", type=int, default=4, help="sink option maxInflight")
    ap.add_argument("--arrow-batch", type=int, default=10_000, help="spark.sql.execution.arrow.maxRecordsPerBatch")
    ap.add_argument("--broker-pid", type=int)
    args = ap.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import rockmq.spark

    spark = (SparkSession.builder.master(args.master).appName("rockmq-write-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(args.arrow_batch))
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    rockmq.spark.register(spark)

    def frame(rows: int):
        pad = "x" * max(0, args.body_size - 16)
        return (spark.range(0, rows, numPartitions=args.partitions)
                .select(F.concat(F.lpad(F.col("id").cast("string"), 16, "0"), F.lit(pad)).cast("binary").alias("body")))

    def write(df, topic: str) -> None:
        (df.write.format("rockmq").option("endpoint", args.endpoint).option("topic", topic)
         .option("batchSize", str(args.batch_size)).option("maxInflight", str(args.max_inflight)).mode("append").save())

    warm = f"spark-write-warmup-{uuid.uuid4().hex[:8]}"
    write(frame(20_000), warm)
    print(f"Spark -> rockmq, {args.rows:,} rows of {args.body_size} B, {args.partitions} tasks on {args.master}, "
          f"Stage requests of {args.batch_size}, {args.max_inflight} in flight per task", flush=True)
    print(f"{'run':>3} {'noop rows/s':>12} {'rockmq rows/s':>14} {'wall s':>7} {'broker CPU s':>13} {'in topic':>10}",
          flush=True)
    best = 0.0
    for run in range(1, args.runs + 1):
        df = frame(args.rows)
        t = time.perf_counter()
        df.write.format("noop").mode("append").save()
        noop = args.rows / (time.perf_counter() - t)
        topic = f"spark-write-{uuid.uuid4().hex[:8]}"
        create_topic(args.endpoint, topic, args.queues)
        cpu0 = cpu_seconds(args.broker_pid)
        t = time.perf_counter()
        write(df, topic)
        wall = time.perf_counter() - t
        cpu1 = cpu_seconds(args.broker_pid)
        stored = topic_size(args.endpoint, topic)
        rate = args.rows / wall
        best = max(best, rate)
        cpu = "" if cpu0 is None or cpu1 is None else f"{cpu1 - cpu0:.1f}"
        print(f"{run:>3} {noop:>12,.0f} {rate:>14,.0f} {wall:>7.1f} {cpu:>13} {stored:>10,}", flush=True)
        if stored != args.rows:
            print(f"ERROR: the topic holds {stored:,} messages, not {args.rows:,}", flush=True)
            return 1
    print(f"best: {best:,.0f} rows/s into rockmq (target 50,000)", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
