"""`rockmq topic list` through one broker lists the cluster's topics (as `topic describe` does), and
`rockmq cluster list` shows the brokers, name servers and `--workers` shards (issue 28 §8)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from shard_set import ShardSet
from waiting import wait_for


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result.stdout


def table(stdout: str, header_first: str) -> list[list[str]]:
    """The rows of the table whose header starts with `header_first`, up to the next blank line."""
    lines = stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [header_first])
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].strip()), len(lines))
    return [ln.split() for ln in lines[start + 1:end]]


def test_topic_list_through_any_broker_lists_every_brokers_topics(cluster):
    b1, b2, b3 = (cluster.brokers[n] for n in ("b1", "b2", "b3"))
    ok(b1.cli("topic", "create", "only-b2", "--queues", "2", "--brokers", "b2"))
    ok(b1.cli("topic", "create", "spread", "--queues", "6"))
    for broker in (b1, b3):  # neither holds only-b2
        wait_for(lambda broker=broker: {r[0]: r[1] for r in table(ok(broker.cli("topic", "list")), "TOPIC")}
                 == {"only-b2": "2", "spread": "6"}, 10, 0.2, what=f"{broker.endpoint} to list the cluster's topics")
    listed = json.loads(ok(b3.cli("topic", "list", "--json")))
    assert [(t["name"], t["queue_count"]) for t in listed] == [("only-b2", 2), ("spread", 6)]
    assert listed[0]["message_types"] == ["NORMAL", "FIFO", "DELAY", "TRANSACTION"]
    described = json.loads(ok(b2.cli("topic", "describe", "spread", "--json")))
    assert sorted(q["broker"] for q in described["queues"]) == ["b1", "b1", "b2", "b2", "b3", "b3"]


def test_cluster_list_shows_brokers_and_name_servers(cluster):
    out = ok(cluster.brokers["b2"].cli("cluster", "list"))
    brokers = {r[0]: r for r in table(out, "BROKER")}
    assert sorted(brokers) == ["b1", "b2", "b3"]
    assert all(brokers[n][1] == cluster.brokers[n].endpoint and brokers[n][2] == "-" for n in brokers)
    assert table(out, "NAME_SERVER") == [[cluster.namesrv.endpoint, "answered"]]
    shown = json.loads(ok(cluster.brokers["b1"].cli("cluster", "list", "--json")))
    assert shown["broker"] == "b1" and [b["name"] for b in shown["brokers"]] == ["b1", "b2", "b3"]
    assert shown["name_servers"] == [{"address": cluster.namesrv.endpoint, "answered": True}]

    cluster.namesrv.kill()
    alone = ok(cluster.brokers["b1"].cli("cluster", "list"))
    assert table(alone, "NAME_SERVER") == [[cluster.namesrv.endpoint, "did", "not", "answer"]]
    assert [r[0] for r in table(alone, "BROKER")] == ["b1"]


def test_cluster_list_of_a_workers_server_shows_its_shards(tmp_path: Path, broker):
    shards = ShardSet(tmp_path / "data", 2).start()
    try:
        out = ok(shards.cli("cluster", "list"))
        rows = table(out, "BROKER")
        assert [(r[0], r[2:5]) for r in rows] == [("broker-a-0", ["0", "of", "broker-a"]),
                                                  ("broker-a-1", ["1", "of", "broker-a"])]
        assert len(table(out, "NAME_SERVER")) == 1  # the server's own
    finally:
        shards.stop()
    standalone = ok(broker.cli("cluster", "list"))
    assert [r[:3] for r in table(standalone, "BROKER")] == [["broker-a", broker.endpoint, "-"]]
    assert "no name servers: broker-a runs standalone" in standalone
