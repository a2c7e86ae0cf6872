"""`rockmq topic update` against a real broker: queues added (or removed while never used) and the
read/write permission, which sends, receives, pulls and routes honour."""

from __future__ import annotations

from mqwire import Conn, message
from test_cli import assert_one_line_error, ok

from rockmq.protocol import pb


def test_grow_and_shrink_unused_queues(broker, conn, unique):
    topic = unique("upd-topic")
    conn.create_topic(topic, queues=2)
    assert "4 queues" in ok(broker.cli("topic", "update", topic, "--queues", "4"))
    assert conn.describe_topic(topic).queue_count == 4
    assert len(conn.query_route(topic).message_queues) == 4
    assert "3 queues" in ok(broker.cli("topic", "update", topic, "--queues", "3"))  # queue 3 never held a message
    assert conn.describe_topic(topic).queue_count == 3


def test_shrinking_past_a_used_queue_is_refused(broker, conn, unique):
    topic = unique("upd-used")
    conn.create_topic(topic, queues=2)
    for i in range(8):  # round robin: both queues hold messages
        conn.send_ok(message(topic, str(i)))
    assert_one_line_error(broker.cli("topic", "update", topic, "--queues", "1"), 1, "has held messages")
    assert conn.describe_topic(topic).queue_count == 2


def test_read_only_refuses_sends_and_write_only_refuses_receives(broker, conn, unique):
    topic, group = unique("perm-topic"), unique("perm-group")
    conn.create_topic(topic)
    conn.create_group(group)
    conn.send_ok(message(topic, "before"))
    assert "perm r" in ok(broker.cli("topic", "update", topic, "--perm", "r"))
    refused = conn.send(message(topic, "refused"))
    assert refused.entries[0].status.code == pb.FORBIDDEN and "read-only" in refused.entries[0].status.message
    staged = conn.stage(message(topic, "staged"))  # the Spark sink's way in
    assert staged.status.code == pb.FORBIDDEN and "read-only" in staged.status.message
    assert [q.permission for q in conn.query_route(topic).message_queues] == [pb.READ]
    assert [m.body for m in conn.receive_n(group, topic, 1)] == [b"before"]  # receives go on

    ok(broker.cli("topic", "update", topic, "--perm", "w"))
    conn.send_ok(message(topic, "written"))
    code, _ = conn.receive(group, topic, poll_s=0.1)
    assert code == pb.FORBIDDEN
    assert conn.pull(unique("perm-puller"), topic, 0, 0)[0] == pb.FORBIDDEN
    assert [q.permission for q in conn.query_route(topic).message_queues] == [pb.WRITE]
    assert "perm w" in ok(broker.cli("topic", "describe", topic))

    ok(broker.cli("topic", "update", topic, "--perm", "rw"))
    assert [q.permission for q in conn.query_route(topic).message_queues] == [pb.READ_WRITE]


def test_bad_input_is_one_line(broker, conn, unique):
    topic = unique("upd-bad")
    conn.create_topic(topic)
    assert_one_line_error(broker.cli("topic", "update", unique("nope"), "--perm", "r"), 1, "does not exist")
    assert_one_line_error(broker.cli("topic", "update", topic), 2, "nothing to change")
    assert_one_line_error(broker.cli("topic", "update", topic, "--perm", "x"), 2, "invalid choice")
    assert_one_line_error(broker.cli("topic", "update", topic, "--queues", "5000"), 1, "queue count")


def test_perm_outlives_a_restart(fresh_broker, unique):
    topic = unique("perm-kept")
    ok(fresh_broker.cli("topic", "create", topic))
    ok(fresh_broker.cli("topic", "update", topic, "--perm", "r", "--queues", "2"))
    fresh_broker.restart()
    conn = Conn(fresh_broker.endpoint)
    try:
        assert conn.send(message(topic, "x")).entries[0].status.code == pb.FORBIDDEN
        info = conn.describe_topic(topic)
        assert (info.perm, info.queue_count) == ("r", 2)
    finally:
        conn.close()


def test_grown_queues_serve_a_filtered_group(broker, conn, unique):
    """A group registered its filter when the topic had 2 queues; the queues added later are read too."""
    topic, group = unique("grow-filter"), unique("grow-filter-group")
    conn.create_topic(topic, queues=2)
    conn.create_group(group)
    assert conn.receive(group, topic, tag="keep")[0] in (pb.OK, pb.MESSAGE_NOT_FOUND)  # registers the filter
    ok(broker.cli("topic", "update", topic, "--queues", "4"))
    for i in range(8):  # round robin: every queue, the new ones too
        conn.send_ok(message(topic, f"k{i}", tag="keep"), message(topic, f"d{i}", tag="drop"))
    got = conn.receive_n(group, topic, 8, tag="keep")
    assert sorted(m.body for m in got) == sorted(f"k{i}".encode() for i in range(8))
