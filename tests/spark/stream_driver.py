"""A streaming driver for the kill -9 test, run as its own process: rockmq topic -> Parquet.

    python stream_driver.py ENDPOINT TOPIC OUTPUT CHECKPOINT (--continuous | --available-now)

The continuous mode reads 40 messages a micro-batch, every 200 ms, until killed.

It does not call rockmq.spark.register: `format("rockmq")` must come from Spark's discovery of
the `pyspark_rockmq` module.
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    endpoint, topic, output, checkpoint, mode = sys.argv[1:6]
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("rockmq-kill-test")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    stream = (spark.readStream.format("rockmq").option("endpoint", endpoint).option("topic", topic)
              .option("startingOffsets", "earliest").option("maxMessagesPerTrigger", "40" if mode == "--continuous" else "100000")
              .load())
    writer = stream.writeStream.format("parquet").option("path", output).option("checkpointLocation", checkpoint)
    writer = writer.trigger(availableNow=True) if mode == "--available-now" else writer.trigger(processingTime="200 milliseconds")
    query = writer.start()
    print("started", flush=True)
    query.awaitTermination()
    return 0 if query.exception() is None else 1


if __name__ == "__main__":
    sys.exit(main())
