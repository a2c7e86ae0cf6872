"""A deleted topic takes its groups' positions with it (issue 20 §2.4/§2.5): the POP and committed
offsets stored per group, topic and queue, and the tables the broker keeps of them in memory, stayed
behind for a topic id never used again — a client creating, consuming and deleting topics in a loop
grew them without end (and every DescribeGroup scanned them)."""

from __future__ import annotations

from mqwire import message

from rockmq.protocol import admin, pb
from rockmq.store import keys


def test_a_deleted_topic_leaves_no_position_behind(harness, unique):
    conn = harness.conn
    topic, popper, puller = unique("gone"), unique("pop"), unique("pull")
    conn.create_topic(topic, queues=2)
    conn.create_group(popper)
    conn.create_group(puller)
    conn.send_ok(*(message(topic, f"m{i}") for i in range(4)))
    conn.ack(popper, topic, *conn.receive_n(popper, topic, 4))
    code, pulled, _ = conn.pull(puller, topic, 0, 0)
    assert code == pb.OK and pulled
    assert conn.update_offset(puller, topic, 0, len(pulled)).status.code == pb.OK
    tid = harness.topic(topic).id
    broker = harness.services

    def left() -> dict[str, int]:
        stored = sum(keys.parse_offset_key(k)[1] == tid for k, _ in broker.ctx.store.scan("offsets", b"", b"\xff" * 16))
        return {"stored": stored,
                "pop": sum(k[1] == tid for k in broker.pop.offsets._offsets),
                "cursor": sum(k[1] == tid for k in broker.pop.offsets._cursor),
                "pulled": sum(k[1] == tid for k in broker.puller._pulled)}

    assert harness.call(left)["stored"] > 0, "the test stored no position"
    conn.admin.DeleteTopic(admin.TopicRequest(name=topic), timeout=10)
    assert harness.call(left) == {"stored": 0, "pop": 0, "cursor": 0, "pulled": 0}


def test_a_deleted_topic_leaves_no_wake_up_behind(harness, unique):
    """The same for what long polls and sends keep per topic: its polls' events and the queue its
    next send goes to."""
    conn = harness.conn
    topic, group = unique("gone"), unique("g")
    conn.create_topic(topic, queues=2)
    conn.create_group(group)
    conn.send_ok(message(topic, "m"))
    assert conn.receive(group, topic, tag="never", poll_s=0.1)[0] == pb.MESSAGE_NOT_FOUND
    for queue_id in (0, 1):  # the empty one waits
        assert conn.pull(group + "-pull", topic, queue_id, 0, poll_s=0.1)[0] in (pb.OK, pb.MESSAGE_NOT_FOUND)
    tid = harness.topic(topic).id
    logs = harness.services.ctx.logs

    def left() -> list[str]:
        tables = {"pulls": logs.arrivals._pulls, "receives": logs.arrivals._receives, "tag_watched": logs.arrivals.tag_watched,
                  "round_robin": logs._round_robin, "arrived_tags": logs._arrived_tags}
        return [name for name, table in tables.items() if tid in table]

    assert harness.call(left), "the test left nothing to forget"
    conn.admin.DeleteTopic(admin.TopicRequest(name=topic), timeout=10)
    assert harness.call(left) == []
