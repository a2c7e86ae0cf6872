"""Pipeline jobs built on the `rockmq` Spark source and sink (`rockmq pipeline ...` runs them).

- `archive`: stream a topic into Parquet files partitioned by the day each message was stored
  (`date=YYYY-MM-DD`). Exactly once: the source's offsets and the file sink's commit log live in
  one checkpoint, so a restarted job neither skips nor repeats a message (Spark's file sink
  ignores files of a batch it did not commit).
- `replay`: send archived messages (optionally a time window of them) into a topic, to backfill
  or to reprocess. A retried task or a rerun of a failed write stage adds no copy (the sink is
  exactly once). Beyond that, each replayed message's id derives from its archived id and the
  target topic, so running the same replay twice within the broker's de-dup window
  (`dedup_window_s`, 10 min by default) also leaves one copy of each message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

# What an archive keeps of a message: everything the source reads, plus the partition column.
ARCHIVE_PARTITION = "date"


def session(master: str, app: str, shuffle_partitions: int | None = None) -> SparkSession:
    """A SparkSession for a job, with the rockmq data source registered. `shuffle_partitions`:
    partitions of a shuffle, and so of a stateful stream's state (Spark's default is 200, which
    a small job pays for in every micro-batch)."""
    from pyspark.sql import SparkSession

    from rockmq.spark import register

    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.showConsoleProgress", "false"))
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    spark = builder.getOrCreate()
    register(spark)
    return spark


def archive(spark: SparkSession, *, endpoint: str, topic: str, path: str, checkpoint: str, available_now: bool = False,
            interval_s: float = 10.0, max_messages_per_trigger: int | None = None,
            connection: Mapping[str, str] | None = None) -> StreamingQuery:
    """Start archiving `topic` to Parquet under `path`; -> the running query (`available_now`:
    archive what is there now and stop). `connection`: more source options (TLS: connection.py)."""
    from pyspark.sql import functions as F

    reader = (spark.readStream.format("rockmq").option("endpoint", endpoint).option("topic", topic)
              .options(**(connection or {})).option("startingOffsets", "earliest"))
    if max_messages_per_trigger is not None:
        reader = reader.option("maxMessagesPerTrigger", str(max_messages_per_trigger))
    stream = reader.load().withColumn(ARCHIVE_PARTITION, F.date_format("store_timestamp", "yyyy-MM-dd"))
    writer = (stream.writeStream.format("parquet").partitionBy(ARCHIVE_PARTITION).option("path", path)
              .option("checkpointLocation", checkpoint).queryName(f"rockmq-archive-{topic}"))
    writer = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime=f"{interval_s} seconds")
    return writer.start()


def replay(spark: SparkSession, *, endpoint: str, path: str, topic: str, start_ms: int | None = None,
           end_ms: int | None = None, connection: Mapping[str, str] | None = None) -> int:
    """Send the archived messages stored in [start_ms, end_ms) to `topic`; -> how many.
    `connection`: more sink options (TLS: connection.py)."""
    from pyspark.sql import functions as F

    archived = spark.read.parquet(path)
    if start_ms is not None:
        archived = archived.where(F.col("store_timestamp") >= F.timestamp_millis(F.lit(start_ms)))
    if end_ms is not None:
        archived = archived.where(F.col("store_timestamp") < F.timestamp_millis(F.lit(end_ms)))
    messages = archived.select(
        "body", "tag", "keys", "properties",
        # A stable id per (archived message, target topic): replays of it collapse into one.
        F.upper(F.sha2(F.concat_ws("|", F.lit(topic), F.col("topic"), F.col("message_id")), 256)).substr(1, 32)
        .alias("message_id"))
    messages.cache()
    try:
        count = messages.count()
        (messages.write.format("rockmq").option("endpoint", endpoint).option("topic", topic).options(**(connection or {}))
         .mode("append").save())
    finally:
        messages.unpersist()
    return count
