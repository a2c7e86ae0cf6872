"""Find and trace in a cluster and under `--workers` (issue 28 §4, §5): asked through any broker,
`rockmq message get/find/list/trace` search every broker, each message shown with the broker
that stored it; a broker that does not hold the topic adds nothing; one that is down is named."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from mqwire import Conn, message
from shard_set import ShardSet


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def cli_json(broker, *args: str) -> dict:
    result = broker.cli(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def send_to(endpoint: str, topic: str, *bodies: str, key: str) -> list[str]:
    conn = Conn(endpoint)
    try:
        return [conn.send_ok(message(topic, b, keys=(key,)))[0].message_id for b in bodies]
    finally:
        conn.close()


def test_find_and_trace_through_a_broker_that_does_not_hold_the_topic(cluster):
    b1, b2, b3 = (cluster.brokers[n] for n in ("b1", "b2", "b3"))
    assert b1.cli("topic", "create", "spread", "--queues", "2", "--brokers", "b2,b3").returncode == 0
    since = int(time.time() * 1000)
    on_b2 = send_to(b2.endpoint, "spread", "two-a", "two-b", key="order")
    on_b3 = send_to(b3.endpoint, "spread", "three", key="order")

    (got,) = cli_json(b1, "message", "get", "spread", on_b3[0])["messages"]
    assert (got["broker"], got["body"]) == ("b3", "three")
    found = cli_json(b1, "message", "find", "spread", "--key", "order")
    assert [(m["broker"], m["message_id"]) for m in found["messages"]] == [("b2", on_b2[0]), ("b2", on_b2[1]),
                                                                            ("b3", on_b3[0])]
    limited = cli_json(b1, "message", "list", "spread", "--from", iso(since), "--max", "2")
    assert [m["message_id"] for m in limited["messages"]] == on_b2 and limited["more"] is True

    conn = Conn(b3.endpoint)
    try:
        (received,) = conn.receive_n("readers", "spread", 1)
        conn.ack("readers", "spread", received)
    finally:
        conn.close()
    trace = cli_json(b1, "message", "trace", "spread", on_b3[0])["events"]
    assert [(e["event"], e["broker"]) for e in trace] == [("stored", "b3"), ("delivered", "b3"), ("acked", "b3")]

    missing = b1.cli("message", "get", "spread", "NO-SUCH-ID")
    assert missing.returncode == 1 and missing.stderr.strip() == "rockmq: no message 'NO-SUCH-ID' in topic 'spread'"

    b3.kill()
    partial = b1.cli("message", "find", "spread", "--key", "order", "--json")
    assert partial.returncode == 0, partial.stderr
    answer = json.loads(partial.stdout)
    assert [m["broker"] for m in answer["messages"]] == ["b2", "b2"] and answer["unreachable"] == ["b3"]


@pytest.fixture
def shards(tmp_path: Path):
    s = ShardSet(tmp_path / "data", 2).start()
    yield s
    s.kill()


def test_workers_search_every_shard(shards):
    shards.cli("topic", "create", "sharded", "--queues", "4", check=True)
    sent = {name: send_to(endpoint, "sharded", f"on {name}", key="k") for name, endpoint in shards.shards("sharded").items()}
    found = cli_json(shards, "message", "find", "sharded", "--key", "k")["messages"]
    assert sorted((m["broker"], m["message_id"]) for m in found) == sorted((b, ids[0]) for b, ids in sent.items())
    for name, (message_id,) in sent.items():
        (got,) = cli_json(shards, "message", "get", "sharded", message_id)["messages"]
        assert got["broker"] == name
        assert [e["event"] for e in cli_json(shards, "message", "trace", "sharded", message_id)["events"]] == ["stored"]
