"""The `rockmq` source in a real local Spark against a real broker, end to end: batch read equals
what was sent, streaming restarts from a checkpoint exactly once, and a streaming driver killed
with kill -9 mid-batch and restarted leaves every message exactly once in its Parquet output."""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mqwire import Conn, message

import rockmq.spark
import rockmq.spark.source

HERE = Path(__file__).resolve().parent


def send(conn: Conn, topic: str, n: int, start: int = 0) -> list:
    sent = [message(topic, f"m{start + i}".encode(), tag="odd" if i % 2 else None, keys=(f"k{start + i}", "all"),
                    properties={"n": str(start + i)} if i % 3 else {}) for i in range(n)]
    for m in sent:
        conn.send_ok(m)
    return sent


def read(spark, endpoint: str, topic: str, **options):
    reader = spark.read.format("rockmq").option("endpoint", endpoint).option("topic", topic)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_batch_read_equals_what_was_sent(spark, broker, unique):
    topic = unique("sbatch")
    conn = Conn(broker.endpoint)
    conn.create_topic(topic, queues=2)
    sent = send(conn, topic, 20)
    df = read(spark, broker.endpoint, topic)
    assert df.schema == rockmq.spark.source.SCHEMA
    got = {r["message_id"]: r for r in df.collect()}
    assert len(got) == 20
    for m in sent:
        r, sp = got[m.system_properties.message_id], m.system_properties
        assert (r["topic"], r["broker"], r["body"], r["tag"], r["keys"], r["properties"] or {}) == (
            topic, "broker-a", m.body, sp.tag if sp.HasField("tag") else None, list(sp.keys), dict(m.user_properties))
        assert abs(r["born_timestamp"].timestamp() * 1000 - sp.born_timestamp.ToMilliseconds()) < 1
        # Stored at ms precision, born at µs: within one millisecond the store time can look earlier.
        assert -0.001 < r["store_timestamp"].timestamp() - r["born_timestamp"].timestamp() < 5  # session zone is UTC
    assert sorted((r["queue_id"], r["queue_offset"]) for r in got.values()) == [(q, o) for q in (0, 1) for o in range(10)]

    later = json.dumps({topic: {"broker-a:0": 8, "broker-a:1": -1}})
    assert sorted(r["queue_offset"] for r in read(spark, broker.endpoint, topic, startingOffsets=later).collect()) == [8, 9]
    first = sorted(got.values(), key=lambda r: r["store_timestamp"])[5]["store_timestamp"]
    before = read(spark, broker.endpoint, topic, endingOffsets=first.isoformat() + "Z").count()
    assert 0 < before <= 5
    conn.close()


def test_stream_restarts_from_checkpoint_exactly_once(spark, broker, unique, tmp_path):
    topic = unique("sstream")
    conn = Conn(broker.endpoint)
    conn.create_topic(topic, queues=3)
    sent = send(conn, topic, 50)
    out, ckpt = str(tmp_path / "out"), str(tmp_path / "ckpt")

    def run():
        stream = (spark.readStream.format("rockmq").option("endpoint", broker.endpoint).option("topic", topic)
                  .option("startingOffsets", "earliest").option("maxMessagesPerTrigger", "20").load())
        query = (stream.writeStream.format("parquet").option("path", out).option("checkpointLocation", ckpt)
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)
        assert query.exception() is None
        return query

    first = run()
    assert [p["numInputRows"] for p in first.recentProgress if p["numInputRows"]] == [20, 20, 10]  # the limit holds
    last = [p for p in first.recentProgress if p["numInputRows"]][-1]["sources"][0]
    assert rockmq.spark.lag(last) == {topic: {f"broker-a:{q}": 0 for q in range(3)}}  # lag shows in the progress
    sent += send(conn, topic, 30, start=50)
    run()
    rows = spark.read.parquet(out).select("message_id", "body").collect()
    assert len(rows) == 80
    assert sorted(r["message_id"] for r in rows) == sorted(m.system_properties.message_id for m in sent)
    conn.close()


def test_killed_driver_restarts_exactly_once(spark, broker, unique, tmp_path):
    """A driver killed with kill -9 while a batch is planned but not committed, then the query
    restarted from its checkpoint in another driver: Spark replays that batch (same offsets, same
    rows) and the Parquet sink's log keeps one copy of it."""
    topic = unique("skill")
    conn = Conn(broker.endpoint)
    conn.create_topic(topic, queues=2)
    sent = send(conn, topic, 400)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[1] / "src"), os.environ.get("PYTHONPATH", "")])}

    command = [sys.executable, str(HERE / "stream_driver.py"), broker.endpoint, topic, str(out), str(ckpt), "--continuous"]

    def count(sub: str) -> int:
        d = ckpt / sub
        return len([f for f in d.iterdir() if f.name.isdigit()]) if d.exists() else 0

    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)  # its own process group: the kill takes its JVM and workers too
    try:
        deadline = time.monotonic() + 90
        while not (count("commits") >= 1 and count("offsets") > count("commits")):  # mid-batch
            assert proc.poll() is None, proc.stdout.read()[-3000:]
            assert time.monotonic() < deadline, "the streaming driver made no progress"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert count("commits") < 10, "killed too late to be mid-stream"
    sent += send(conn, topic, 20, start=400)
    # Restarted by another driver (this test's session) from the same checkpoint, up to what is there now.
    query = (spark.readStream.format("rockmq").option("endpoint", broker.endpoint).option("topic", topic)
             .option("startingOffsets", "latest").load()  # ignored: the checkpoint decides
             .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None
    rows = spark.read.parquet(str(out)).select("message_id").collect()  # through _spark_metadata: committed files only
    assert len(rows) == len(sent) == 420
    assert sorted(r["message_id"] for r in rows) == sorted(m.system_properties.message_id for m in sent)
    conn.close()


def test_discovery_module_is_import_safe(monkeypatch):
    """Spark imports every pyspark_* module and tests issubclass(DefaultSource, DataSource): the
    module must neither raise nor offer a non-class DefaultSource when pyspark is missing."""
    from pyspark.sql.datasource import DataSource

    import pyspark_rockmq

    assert issubclass(pyspark_rockmq.DefaultSource, DataSource) and pyspark_rockmq.DefaultSource.name() == "rockmq"
    monkeypatch.setitem(sys.modules, "rockmq.spark.source", None)  # as if pyspark were not installed
    monkeypatch.delitem(sys.modules, "pyspark_rockmq")
    crippled = importlib.import_module("pyspark_rockmq")
    assert crippled is not pyspark_rockmq and not hasattr(crippled, "DefaultSource")
