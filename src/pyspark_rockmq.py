"""Spark's data-source discovery imports every top-level `pyspark_*` module it finds and registers
its `DefaultSource` (a DataSource subclass, tested with issubclass): this module makes
`format("rockmq")` work without `rockmq.spark.register(spark)`.

It must import cleanly and must not define `DefaultSource` as anything but the class: Spark's
lookup raises on an import error or on a non-class `DefaultSource` (issubclass(None, ...)) and
that breaks discovery of every data source. So without pyspark/pyarrow the name is simply absent.
"""

try:
    from rockmq.spark.source import RockmqDataSource
except Exception:  # pyspark missing or too old (< 4.2): nothing to register
    __all__: list[str] = []
else:
    DefaultSource = RockmqDataSource
    __all__ = ["DefaultSource"]
