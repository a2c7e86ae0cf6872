"""One local SparkSession for the Spark tests (startup costs seconds), plus the shared broker."""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[test,spark]'")


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    from rockmq.spark import register

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (SparkSession.builder.master("local[2]")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1")
               .getOrCreate())
    register(session)
    yield session
    session.stop()
