"""Spark's data-source discovery imports every top-level `pyspark_*` module and registers its
`DefaultSource`: this one makes `format("rockmq")` work without `rockmq.spark.register(spark)`.
It must import cleanly even without pyspark (a failing module breaks discovery for all)."""

try:
    from rockmq.spark.source import RockmqDataSource as DefaultSource
except ImportError:  # pyspark or pyarrow missing: nothing to register
    DefaultSource = None

__all__ = ["DefaultSource"]
