"""Lite topics under `rockmq serve --workers 2` (issue 29 §2): each lite topic lives on one shard, a
stable hash of its name (`conventions.lite_owner`); a lite message sent to either shard lands there,
a subscription made at one shard is known to both, and a consumer that long-polls both (as the push
consumer's assignment says) gets exactly its lite topics, in order."""

from __future__ import annotations

from pathlib import Path

import pytest
from lite_wire import Lite, bodies, lite_message
from mqwire import RPC_TIMEOUT, Conn
from shard_set import ShardSet

from rockmq.protocol import admin, pb
from rockmq.protocol.conventions import lite_owner


@pytest.fixture
def shards(tmp_path: Path):
    s = ShardSet(tmp_path / "data", 2).start()
    yield s
    s.kill()


def test_lite_topics_live_on_their_shard(shards):
    conn = Conn(shards.endpoint)
    try:
        conn.admin.CreateTopic(admin.CreateTopicRequest(name="agents", queue_count=2, message_types=["LITE"]),
                               timeout=RPC_TIMEOUT)
        owners = shards.shards("agents")
        names = [f"session-{i}" for i in range(12)]
        wanted = names[::3]
        a = Lite(conn, "replies", "agents", "client-a")
        assert a.sync(pb.COMPLETE_ADD, *wanted).status.code == pb.OK  # at the access point (shard 0) only
        for endpoint in owners.values():  # every message sent to every shard: each lands on its owner
            c = Conn(endpoint)
            try:
                c.send_ok(*(lite_message("agents", n, f"{n}@{endpoint}") for n in names))
            finally:
                c.close()
        got: list[pb.Message] = []
        for endpoint in owners.values():
            c = Conn(endpoint)
            try:
                reader = Lite(c, "replies", "agents", "client-a")
                got += reader.receive(poll_s=1)
                listed = c.admin.ListLiteTopics(admin.ListLiteTopicsRequest(topic="agents", local=True),
                                                timeout=RPC_TIMEOUT)
                here = next(b for b, e in owners.items() if e == endpoint)
                assert all(lite_owner(t.name, list(owners)) == here for t in listed.lite_topics)
                assert all(t.max_offset == 2 for t in listed.lite_topics)
            finally:
                c.close()
        merged = conn.admin.ListLiteTopics(admin.ListLiteTopicsRequest(topic="agents", limit=5), timeout=RPC_TIMEOUT)
        assert [t.name for t in merged.lite_topics] == sorted(names)[:5] and merged.more
        assert conn.describe_topic("agents").lite_topic_count == len(names)
        assert sorted(lite for lite, _ in bodies(got)) == sorted(wanted * 2)
        for name in wanted:
            assert [b for lite, b in bodies(got) if lite == name] == [f"{name}@{e}" for e in owners.values()]
    finally:
        conn.close()
