"""rockmq for Apache Spark (the `spark` extra: pyspark >= 4.2, pyarrow): the `rockmq` data source.

    import rockmq.spark
    rockmq.spark.register(spark)          # then spark.read.format("rockmq") / readStream / write

Importing this package needs neither pyspark nor pyarrow; `register` and the source do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rockmq.spark.offsets import lag

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["register", "lag"]


def register(spark: SparkSession) -> None:
    """Register the `rockmq` format with `spark` (needed where Spark's auto-discovery of the
    `pyspark_rockmq` module does not reach, e.g. an editable install)."""
    from rockmq.spark.source import RockmqDataSource

    spark.dataSource.register(RockmqDataSource)
