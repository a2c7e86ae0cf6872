"""One local SparkSession for the Spark tests (startup costs seconds), plus the shared broker."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the spark extra: pip install -e '.[test,spark]'")


HERE = Path(__file__).parent
_session = None


def _start_spark():
    global _session
    if _session is None:
        from pyspark.sql import SparkSession

        from rockmq.spark import register

        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        _session = (SparkSession.builder.master("local[2]")
                    .config("spark.ui.enabled", "false")
                    .config("spark.ui.showConsoleProgress", "false")
                    .config("spark.sql.shuffle.partitions", "2")
                    .config("spark.sql.session.timeZone", "UTC")
                    .config("spark.driver.bindAddress", "127.0.0.1")
                    .config("spark.driver.host", "127.0.0.1")
                    .getOrCreate())
        register(_session)
    return _session


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start Spark's JVM before any test opens a gRPC channel. PySpark launches its gateway
    through a plain fork of this process (a preexec_fn); after the gRPC tests had left gRPC's
    threads running here, such a child once died before exec (JAVA_GATEWAY_EXITED, with gRPC's
    "epoll_wait error: Bad file descriptor")."""
    if any(item.path.is_relative_to(HERE) for item in session.items):
        _start_spark()


@pytest.fixture(scope="session")
def spark():
    session = _start_spark()
    yield session
    session.stop()
