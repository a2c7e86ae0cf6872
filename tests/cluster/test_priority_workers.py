"""Priority topics on `rockmq serve --workers 2` (docs/priority.md): created through `--port` on both
shards, each shard's share rounded up to whole lanes of its levels, routes saying PRIORITY, and
the official Python client's backlog received high first on each shard (best effort across them)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "compat"))
from mqwire import Conn  # noqa: E402
from official_client import make_message, producer, receive_until, simple_consumer  # noqa: E402

from rockmq.protocol import pb  # noqa: E402


def test_priority_topic_over_two_shards(two_shards):
    out = two_shards.cli("topic", "create", "jobs", "--types", "PRIORITY", "--max-priority", "4", check=True).stdout
    assert "10 queues" in out and "priorities 0..4" in out  # 8 asked, 4 a shard, each rounded up to a lane of 5
    conn = Conn(two_shards.endpoint)
    try:
        queues = conn.query_route("jobs").message_queues
        assert "priorities 0..4" in two_shards.cli("topic", "describe", "jobs", check=True).stdout
    finally:
        conn.close()
    assert len(queues) == 10 and len({q.broker.name for q in queues}) == 2
    assert all(list(q.accept_message_types) == [pb.PRIORITY] for q in queues)

    with producer(two_shards.endpoint, "jobs") as p:
        kinds = {}
        for i in range(220):
            m = make_message("jobs", f"m{i}".encode())
            m.priority = 4 if i % 11 == 10 else 0
            kinds[p.send(m).message_id] = m.priority
    assert sum(1 for k in kinds.values() if k == 4) == 20
    with simple_consumer(two_shards.endpoint, "jobs-g", {"jobs": "*"}) as c:
        got = receive_until(c, lambda g: len(g) >= 220, timeout=30)
        for m in got:
            c.ack(m)
    assert sorted(m.message_id for m in got) == sorted(kinds)
    # Each shard hands out its own backlog high first (which shard a receive asks is the client's round robin).
    by_shard: dict[str, list[int]] = {}
    for m in got:
        by_shard.setdefault(str(m.endpoints), []).append(m.priority)
    assert len(by_shard) == 2
    for shard, levels in by_shard.items():
        assert levels == sorted(levels, reverse=True), f"{shard} handed out a low one before a high one: {levels}"
