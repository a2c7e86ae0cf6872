"""An order-events pipeline on rockmq and Spark, the shape a data engineer meets every day:

    topic `orders` (JSON: order_id, customer, amount, ts)
      -> parse, drop re-sent events (same order_id) within the watermark
      -> per-minute revenue and order counts, finalised once the watermark passes the minute
      -> Parquet under OUTPUT/minutes
      -> and every large order as an alert message into topic `order-alerts`

Run it against a broker (a local Spark by default):

    python examples/order_pipeline.py --endpoint 127.0.0.1:8081 --output /tmp/orders-out

`--available-now` processes what is in the topic and stops (how the test drives it). Each of the
two queries keeps its own checkpoint under OUTPUT/_checkpoints: restarted, it picks up exactly
where it stopped.
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

ORDER_SCHEMA = "order_id STRING, customer STRING, amount DOUBLE, ts TIMESTAMP"


def orders(spark: SparkSession, endpoint: str, topic: str) -> DataFrame:
    """The order events, parsed and de-duplicated (a producer retry re-sends an order)."""
    raw = (spark.readStream.format("rockmq").option("endpoint", endpoint).option("topic", topic)
           .option("startingOffsets", "earliest").load())
    parsed = raw.select(F.from_json(F.col("body").cast("string"), ORDER_SCHEMA).alias("o")).select("o.*")
    return (parsed.where(F.col("order_id").isNotNull())
            .withWatermark("ts", "2 minutes")
            .dropDuplicatesWithinWatermark(["order_id"]))


def per_minute(events: DataFrame) -> DataFrame:
    return (events.groupBy(F.window("ts", "1 minute").alias("minute"))
            .agg(F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("revenue"))
            .select(F.col("minute.start").alias("minute"), "orders", "revenue"))


def alerts(events: DataFrame, threshold: float) -> DataFrame:
    """Large orders as messages: the body says what happened, the tag lets consumers filter."""
    big = events.where(F.col("amount") >= threshold)
    return big.select(
        F.to_json(F.struct("order_id", "customer", "amount", "ts")).cast("binary").alias("body"),
        F.lit("large-order").alias("tag"),
        F.array("order_id").alias("keys"),
        F.create_map(F.lit("customer"), F.col("customer")).alias("properties"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--endpoint", default="127.0.0.1:8081")
    p.add_argument("--topic", default="orders")
    p.add_argument("--alerts-topic", default="order-alerts")
    p.add_argument("--output", required=True)
    p.add_argument("--threshold", type=float, default=1000.0)
    p.add_argument("--master", default="local[*]")
    p.add_argument("--available-now", action="store_true")
    p.add_argument("--shuffle-partitions", type=int, default=8,
                   help="spark.sql.shuffle.partitions: state partitions of the de-duplication and the aggregation")
    args = p.parse_args(argv)

    from rockmq.spark.jobs import session

    spark = session(args.master, "order-pipeline", args.shuffle_partitions)
    events = orders(spark, args.endpoint, args.topic)
    minutes = (per_minute(events).writeStream.format("parquet").outputMode("append")
               .option("path", f"{args.output}/minutes").option("checkpointLocation", f"{args.output}/_checkpoints/minutes"))
    warnings = (alerts(events, args.threshold).writeStream.format("rockmq").option("endpoint", args.endpoint)
                .option("topic", args.alerts_topic).option("checkpointLocation", f"{args.output}/_checkpoints/alerts"))
    if args.available_now:
        minutes, warnings = minutes.trigger(availableNow=True), warnings.trigger(availableNow=True)
    queries = [minutes.start(), warnings.start()]
    for q in queries:
        q.awaitTermination()
    failed = [q.exception() for q in queries if q.exception() is not None]
    spark.stop()
    if failed:
        print(f"order pipeline failed: {failed[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
