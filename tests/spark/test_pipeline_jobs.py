"""The pipeline jobs and the example pipeline against a real broker and a real local Spark:
archive -> replay round trip (twice: no duplicates), the CLI, and the order pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mqwire import Conn, message

from rockmq.spark import jobs

ROOT = Path(__file__).resolve().parents[2]


def _all(conn: Conn, topic: str) -> list:
    return [m for q in range(len(conn.query_route(topic).message_queues)) for m in conn.pull_all(topic, q)]


def test_archive_then_replay_twice_gives_one_copy(spark, broker, unique, tmp_path):
    source, target = unique("arch-src"), unique("arch-dst")
    conn = Conn(broker.endpoint)
    conn.create_topic(source, queues=2)
    sent = [message(source, f"a{i}".encode(), tag="t" if i % 2 else None, keys=[f"k{i}"], properties={"n": str(i)})
            for i in range(30)]
    for m in sent:
        conn.send_ok(m)
    query = jobs.archive(spark, endpoint=broker.endpoint, topic=source, path=str(tmp_path / "archive"),
                         checkpoint=str(tmp_path / "ckpt"), available_now=True)
    query.awaitTermination(120)
    assert query.exception() is None
    archived = spark.read.parquet(str(tmp_path / "archive"))
    assert archived.count() == 30
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert {r["date"] for r in archived.select("date").distinct().collect()} == {datetime.strptime(today, "%Y-%m-%d").date()}

    assert jobs.replay(spark, endpoint=broker.endpoint, path=str(tmp_path / "archive"), topic=target) == 30
    assert jobs.replay(spark, endpoint=broker.endpoint, path=str(tmp_path / "archive"), topic=target) == 30
    replayed = _all(conn, target)
    assert sorted(m.body for m in replayed) == sorted(m.body for m in sent), "a replay added or lost messages"
    by_body = {m.body: m for m in replayed}
    assert by_body[b"a3"].system_properties.tag == "t" and list(by_body[b"a3"].system_properties.keys) == ["k3"]
    assert by_body[b"a3"].user_properties["n"] == "3"
    conn.close()


def test_replay_window_and_cli(broker, unique, tmp_path):
    """`rockmq pipeline archive --available-now` then `replay --from/--to` as a user runs them."""
    source, target = unique("cli-src"), unique("cli-dst")
    conn = Conn(broker.endpoint)
    for i in range(5):
        conn.send_ok(message(source, f"c{i}".encode()))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYSPARK_PYTHON": sys.executable}
    common = ["--endpoint", broker.endpoint, "--master", "local[1]"]
    arch = subprocess.run([sys.executable, "-m", "rockmq", "pipeline", "archive", "--topic", source, "--path",
                           str(tmp_path / "a"), "--available-now", *common], capture_output=True, text=True, env=env, timeout=180)
    assert arch.returncode == 0, arch.stderr[-2000:]
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    none = subprocess.run([sys.executable, "-m", "rockmq", "pipeline", "replay", "--path", str(tmp_path / "a"), "--topic",
                           target, "--from", future, *common], capture_output=True, text=True, env=env, timeout=180)
    assert none.returncode == 0 and "replayed 0 messages" in none.stdout, none.stderr[-2000:]
    bad = subprocess.run([sys.executable, "-m", "rockmq", "pipeline", "replay", "--path", str(tmp_path / "a"), "--topic",
                          target, "--from", "yesterday", *common], capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "invalid time" in bad.stderr
    conn.close()


def test_order_pipeline_example(broker, unique, tmp_path):
    orders, alerts = unique("orders"), unique("order-alerts")
    conn = Conn(broker.endpoint)
    start = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    events = [("o1", 10.0, 0), ("o2", 2500.0, 20), ("o1", 10.0, 25),  # o1 re-sent: counted once
              ("o3", 30.0, 70), ("o4", 1200.0, 80), ("o5", 5.0, 600)]  # o5 moves the watermark past both minutes
    for order_id, amount, second in events:
        body = json.dumps({"order_id": order_id, "customer": f"c-{order_id}", "amount": amount,
                           "ts": (start + timedelta(seconds=second)).isoformat()})
        conn.send_ok(message(orders, body.encode()))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "order_pipeline.py"), "--endpoint", broker.endpoint,
                          "--topic", orders, "--alerts-topic", alerts, "--output", str(tmp_path / "out"),
                          "--master", "local[2]", "--available-now"], capture_output=True, text=True, env=env, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    alerted = _all(conn, alerts)
    assert sorted(json.loads(m.body)["order_id"] for m in alerted) == ["o2", "o4"]
    assert all(m.system_properties.tag == "large-order" for m in alerted)
    import pyarrow.parquet as pq

    minutes = pq.read_table(str(tmp_path / "out" / "minutes")).to_pylist()
    by_minute = {row["minute"].replace(tzinfo=UTC): (row["orders"], row["revenue"]) for row in minutes}
    assert by_minute[start] == (2, 2510.0) and by_minute[start + timedelta(minutes=1)] == (2, 1230.0)
    conn.close()
