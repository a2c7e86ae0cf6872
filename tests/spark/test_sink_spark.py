"""The sink through Spark: `df.write.format("rockmq")` / `writeStream`, read back from the broker.

The failure tests run their drivers in subprocesses: a task retry needs `local[2,2]` (the shared
session is `local[2]`, which never retries), and a driver killed with -9 must be its own process
group (JVM and Python workers with it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mqwire import Conn
from test_sink_broker import read_topic

ROOT = Path(__file__).resolve().parents[2]


def write(df, endpoint: str, topic: str | None = None, mode: str = "append", **options):
    w = df.write.format("rockmq").option("endpoint", endpoint).mode(mode)
    if topic is not None:
        w = w.option("topic", topic)
    for k, v in options.items():
        w = w.option(k, v)
    w.save()


def test_batch_write_carries_every_column(spark, broker, unique):
    from pyspark.sql.types import ArrayType, BinaryType, MapType, StringType, StructField, StructType, TimestampType

    topic, other = unique("sink-cols"), unique("sink-cols-other")
    schema = StructType([StructField("body", BinaryType()), StructField("topic", StringType()),
                         StructField("tag", StringType()), StructField("keys", ArrayType(StringType())),
                         StructField("message_group", StringType()), StructField("delivery_timestamp", TimestampType()),
                         StructField("properties", MapType(StringType(), StringType()))])
    rows = [(b"plain", None, None, None, None, None, None),
            (b"full", None, "paid", ["order-1", "user-9"], None, None, {"region": "eu", "amount": "12"}),
            (b"fifo", None, None, None, "order-7", None, None),
            (b"elsewhere", other, None, None, None, None, None)]
    rows += [(f"bulk-{i}".encode(), None, None, None, None, None, None) for i in range(996)]
    write(spark.createDataFrame(rows, schema).repartition(3), broker.endpoint, topic)

    conn = Conn(broker.endpoint)
    try:
        got = {m.body: m for m in read_topic(conn, topic)}
        assert len(got) == 999
        assert {m.body for m in read_topic(conn, other)} == {b"elsewhere"}
        full = got[b"full"].system_properties
        assert (full.tag, list(full.keys), dict(got[b"full"].user_properties)) == (
            "paid", ["order-1", "user-9"], {"region": "eu", "amount": "12"})
        assert got[b"fifo"].system_properties.message_group == "order-7"
        assert len({m.system_properties.message_id for m in got.values()}) == 999

        due = datetime.now(UTC).replace(microsecond=123000) + timedelta(seconds=3)
        write(spark.createDataFrame([(b"delayed", "later", due)], "body binary, tag string, delivery_timestamp timestamp"),
              broker.endpoint, topic)
        if datetime.now(UTC) < due - timedelta(milliseconds=200):
            assert b"delayed" not in {m.body for m in read_topic(conn, topic)}  # it waits in the timers
        deadline = time.monotonic() + 15
        while b"delayed" not in (got := {m.body: m for m in read_topic(conn, topic)}) and time.monotonic() < deadline:
            time.sleep(0.2)
        delayed = got[b"delayed"].system_properties
        assert delayed.tag == "later"
        assert delayed.delivery_timestamp.ToMilliseconds() == int(due.timestamp() * 1000)
        assert delayed.store_timestamp.ToMilliseconds() >= int(due.timestamp() * 1000)
    finally:
        conn.close()


def test_string_bodies_and_message_ids_dedup_reruns(spark, broker, unique):
    """A `message_id` column: a job run twice leaves one copy (the broker's dedup window)."""
    topic = unique("sink-ids")
    df = spark.createDataFrame([(f"s{i}", f"id-{i}") for i in range(50)], "body string, message_id string")
    write(df, broker.endpoint, topic)
    write(df, broker.endpoint, topic)
    conn = Conn(broker.endpoint)
    try:
        msgs = read_topic(conn, topic)
        assert sorted(m.body for m in msgs) == sorted(f"s{i}".encode() for i in range(50))
        assert {m.system_properties.message_id for m in msgs} == {f"id-{i}" for i in range(50)}
    finally:
        conn.close()


def test_foreach_batch_style_writes_with_sink_and_batch_ids_publish_once(spark, broker, unique):
    """`sinkId` + `batchId` (what a foreachBatch function passes): a rerun of a batch is dropped."""
    topic, sink = unique("sink-fe"), unique("fe")
    df = spark.createDataFrame([(f"b{i}",) for i in range(20)], "body string")
    for batch_id in (0, 0, 1, 0):
        write(df.where(f"body LIKE 'b{batch_id}%'"), broker.endpoint, topic, sinkId=sink, batchId=str(batch_id))
    conn = Conn(broker.endpoint)
    try:
        assert sorted(m.body for m in read_topic(conn, topic)) == sorted(f"b{i}".encode() for i in range(20)
                                                                         if str(i).startswith(("0", "1")))
    finally:
        conn.close()


@pytest.mark.parametrize(("columns", "options", "mode", "error"), [
    ("body binary, colour string", {}, "append", "does not know column(s) 'colour'"),
    ("tag string", {}, "append", "needs a `body` column"),
    ("body binary, keys string", {}, "append", "column `keys` must be array<string>, not string"),
    ("body binary", {}, "overwrite", "only appends"),
    ("body binary", {"endpoint": ""}, "append", "needs option `endpoint`"),
    ("body binary", {"topic": ""}, "append", "needs option `topic`"),
    ("body binary", {"batchSize": "lots"}, "append", "option `batchSize` must be a number"),
])
def test_writer_refuses_what_it_cannot_write(spark, broker, columns, options, mode, error):
    df = spark.createDataFrame([], columns)
    opts = {"endpoint": broker.endpoint, "topic": "never-written", **options}
    w = df.write.format("rockmq").mode(mode)
    for k, v in opts.items():
        w = w.option(k, v)
    with pytest.raises(Exception, match=error.replace("(", r"\(").replace(")", r"\)")):
        w.save()


# --- failures: task retries and a killed driver, in their own Spark drivers -----------------

_SESSION = """
import os, sys, time
from pyspark.sql import SparkSession
import rockmq.spark
spark = (SparkSession.builder.master("local[2,2]")  # a task may fail once and be retried
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
endpoint, topic, work = sys.argv[1], sys.argv[2], sys.argv[3]
"""

_RETRIES = """
rockmq.spark.register(spark)
from pyspark import TaskContext
from pyspark.sql import functions as F

@F.udf("binary")
def body(i):
    # Attempt 0 of partition 1 fails at its last row, after the sink staged earlier ones.
    if i == 1999 and TaskContext.get().attemptNumber() == 0:
        open(os.path.join(work, "udf-failed"), "w").close()
        raise RuntimeError("injected failure at the last row of partition 1")
    return str(i).encode()

spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
spark.range(0, 4000, numPartitions=4).select(body("id").alias("body")).write.format("rockmq") \\
    .option("endpoint", endpoint).option("topic", topic + "-udf").option("batchSize", "50").mode("append").save()

from sink_test_hook import HookedRockmq
spark.dataSource.register(HookedRockmq)  # format "rockmq", whose tasks can fail after writing
spark.range(0, 4000, numPartitions=4).selectExpr("CAST(CAST(id AS STRING) AS BINARY) AS body").write.format("rockmq") \\
    .option("endpoint", endpoint).option("topic", topic + "-late").mode("append").save()
"""

_STREAM = """
from sink_test_hook import HookedRockmq
spark.dataSource.register(HookedRockmq)  # format "rockmq", with the pausing commit
lines = spark.readStream.format("text").option("maxFilesPerTrigger", "1").load(os.path.join(work, "in"))
query = (lines.selectExpr("value AS body").writeStream.format("rockmq").option("endpoint", endpoint)
         .option("topic", topic).option("checkpointLocation", os.path.join(work, "ckpt"))
         .trigger(availableNow=True).start())
query.awaitTermination()
"""

# The writers are the real ones, subclassed only to fail a task after its write() returned, or
# to pause a stream's commit right after the broker's PublishStaged, so that the test can kill
# the driver exactly there.
_HOOK_MODULE = """
import os, time
from pyspark import TaskContext
from rockmq.spark.sink import RockmqBatchWriter, RockmqStreamWriter
from rockmq.spark.source import RockmqDataSource

class FailingBatchWriter(RockmqBatchWriter):
    def write(self, iterator):
        # Attempt 0 of partition 2 dies after the real write() staged every row and returned.
        message = super().write(iterator)
        ctx = TaskContext.get()
        if ctx.partitionId() == 2 and ctx.attemptNumber() == 0:
            with open(os.path.join(os.environ["SINK_TEST_WORK"], "late-failed"), "w") as f:
                f.write(str(message.messages))
            raise RuntimeError("injected failure after the sink's write() returned")
        return message

class PausingStreamWriter(RockmqStreamWriter):
    def commit(self, messages, batchId):
        reply = self._publish(messages, None, batchId, 0)
        work = os.environ["SINK_TEST_WORK"]
        with open(os.path.join(work, "commits.log"), "a") as f:
            f.write(f"batch {batchId}: duplicate={reply.duplicate} published={reply.published}\\n")
        if batchId == int(os.environ["SINK_TEST_PAUSE_AFTER"]):
            with open(os.path.join(work, "paused"), "w") as f:
                f.write(f"paused after publishing batch {batchId}")
            time.sleep(600)

class HookedRockmq(RockmqDataSource):
    def writer(self, schema, overwrite):
        return FailingBatchWriter(self.options, schema, overwrite)

    def streamWriter(self, schema, overwrite):
        return PausingStreamWriter(self.options, schema, overwrite)
"""


def _driver(script: str, work: Path, endpoint: str, topic: str, **env) -> subprocess.Popen:
    path = work / "driver.py"
    path.write_text(textwrap.dedent(_SESSION + script))
    full_env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
                "PYTHONPATH": os.pathsep.join([str(work), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
                "SINK_TEST_WORK": str(work), **env}
    return subprocess.Popen([sys.executable, str(path), endpoint, topic, str(work)], env=full_env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


_RERUNS = """
rockmq.spark.register(spark)
rows = spark.createDataFrame([(f"row-{i}", f"id-{i}") for i in range(50)], "body string, message_id string")
writes = [(topic + "-own", rows.select("body"), {}), (topic + "-ids", rows, {}),
          (topic + "-named", rows.select("body"), {"sinkId": topic + "-job"})]
for name, df, options in writes:
    for run in range(2):  # the job, then the same job again
        df.write.format("rockmq").option("endpoint", endpoint).option("topic", name).options(**options) \\
            .mode("append").save()
"""


def _kill_when_paused(proc: subprocess.Popen, work: Path, timeout: float = 150) -> str:
    marker = work / "paused"
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"driver never paused:\n{proc.communicate()[0][-4000:]}")
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and Python workers: kill -9, all at once
    proc.communicate()
    what = marker.read_text()
    marker.unlink()
    return what


def test_retried_tasks_and_killed_drivers_publish_exactly_once(spark, broker, unique, tmp_path):
    """A driver on local[2,2] (a task may fail once): one task fails at its last row, after the
    sink staged the rows before it; another fails after the sink's write() staged all its rows
    and returned; both are retried. Then the driver streams files into a topic, one file per
    batch, and is killed -9 after the broker published batch 1 but before Spark recorded it.
    The test's own session restarts the stream from the checkpoint; its commit of batch 3 fails
    after the tasks staged their rows, before the publish (the query dies); a last restart
    finishes. Every row must be in its topic exactly once."""
    from rockmq.spark.sink import RockmqStreamWriter
    from rockmq.spark.source import RockmqDataSource

    topic = unique("sink-fail")
    (tmp_path / "in").mkdir()
    expected = set()
    for f in range(5):
        lines = [f"file{f}-line{i}" for i in range(200)]
        expected.update(x.encode() for x in lines)
        (tmp_path / "in" / f"part-{f}.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "sink_test_hook.py").write_text(textwrap.dedent(_HOOK_MODULE))
    log = tmp_path / "commits.log"

    def restart(fmt: str):
        lines = spark.readStream.format("text").option("maxFilesPerTrigger", "1").load(str(tmp_path / "in"))
        query = (lines.selectExpr("value AS body").writeStream.format(fmt).option("endpoint", broker.endpoint)
                 .option("topic", topic).option("checkpointLocation", str(tmp_path / "ckpt"))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(120)
        except Exception as e:  # the query died: what it died of
            return query, e
        return query, query.exception()

    # Defined here, so that Spark pickles them by value (the test module is not importable by
    # Spark's Python workers): the real writer, whose commit logs and can die before publishing.
    class DyingStreamWriter(RockmqStreamWriter):
        def commit(self, messages, batchId):  # noqa: N803
            if batchId == 3:
                raise RuntimeError("driver lost before publishing batch 3")
            reply = self._publish(messages, None, batchId, 0)
            with open(log, "a") as f:
                f.write(f"batch {batchId}: duplicate={reply.duplicate} published={reply.published}\n")

    class DyingRockmq(RockmqDataSource):
        @classmethod
        def name(cls):
            return "rockmq_dying"

        def streamWriter(self, schema, overwrite):
            return DyingStreamWriter(self.options, schema, overwrite)

    conn = Conn(broker.endpoint)
    try:
        run = _driver(_RETRIES + _STREAM, tmp_path, broker.endpoint, topic, SINK_TEST_PAUSE_AFTER="1")
        assert _kill_when_paused(run, tmp_path) == "paused after publishing batch 1"
        assert (tmp_path / "udf-failed").exists(), "the failure at the last row never happened"
        assert (tmp_path / "late-failed").read_text() == "1000", "the failure after write() never happened"
        for name in (topic + "-udf", topic + "-late"):
            bodies = [m.body for m in read_topic(conn, name)]
            assert len(bodies) == 4000 and set(bodies) == {str(i).encode() for i in range(4000)}, name
        assert len(read_topic(conn, topic)) == 400  # batches 0 and 1 are in the topic...
        assert not (tmp_path / "ckpt" / "commits" / "1").exists()  # ...but Spark never recorded batch 1

        spark.dataSource.register(DyingRockmq)
        _, error = restart("rockmq_dying")
        assert "driver lost before publishing batch 3" in str(error)
        assert len(read_topic(conn, topic)) == 600  # batch 1 replayed and dropped, batch 2 published
        assert log.read_text().splitlines() == [
            "batch 0: duplicate=False published=200", "batch 1: duplicate=False published=200",
            "batch 1: duplicate=True published=0", "batch 2: duplicate=False published=200"]

        query, error = restart("rockmq")
        assert error is None
        assert [p["batchId"] for p in query.recentProgress] == [3, 4]  # 3 replayed: staged before, published now
        bodies = [m.body for m in read_topic(conn, topic)]
        assert len(bodies) == 1000 and set(bodies) == expected, "duplicates or gaps"
    finally:
        conn.close()


def test_batch_write_without_sink_id_warns_once_per_write_that_a_rerun_sends_again(broker, unique, tmp_path):
    """A batch job run twice without `sinkId` stores every row twice (a new sink id per run), so
    each such write warns its user, once, on the console of the driver (the writer is made in a
    Python worker whose stderr Spark copies there); with a `message_id` column the warning names
    the de-dup window instead; with `sinkId` the rerun publishes nothing and nothing is logged.
    Its own driver: the test's session shares the test process's stderr with pytest."""
    topic = unique("sink-rerun")
    run = _driver(_RERUNS, tmp_path, broker.endpoint, topic)
    try:
        console, _ = run.communicate(timeout=240)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 0, console[-4000:]
    warned = [line for line in console.splitlines() if "has no option `sinkId`" in line]
    own, ids = f"to topic '{topic}-own' ", f"to topic '{topic}-ids' "
    assert [own in line and "a rerun sends every row again" in line for line in warned].count(True) == 2, warned
    assert [ids in line and "de-dup window" in line for line in warned].count(True) == 2, warned
    assert len(warned) == 4 and not [line for line in warned if f"{topic}-named" in line], warned
    conn = Conn(broker.endpoint)
    try:
        own_bodies = [m.body for m in read_topic(conn, topic + "-own")]
        assert len(own_bodies) == 100 and len(set(own_bodies)) == 50  # what the warning is about
        assert len(read_topic(conn, topic + "-ids")) == 50  # within the de-dup window
        assert sorted(m.body for m in read_topic(conn, topic + "-named")) == sorted(f"row-{i}".encode() for i in range(50))
    finally:
        conn.close()
