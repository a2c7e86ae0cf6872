"""`rockmq group reset|update|delete` against a real broker."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from mqwire import META, RPC_TIMEOUT, message
from test_cli import assert_one_line_error, ok

from rockmq.protocol import pb, rpc


def send(conn, topic: str, *bodies: str) -> list[str]:
    return [e.message_id for e in conn.send_ok(*(message(topic, b) for b in bodies))]


def ids(messages) -> list[str]:
    return [m.system_properties.message_id for m in messages]


def test_reset_to_earliest_drops_what_is_in_flight(broker, conn, unique):
    topic, group = unique("reset-topic"), unique("reset-group")
    conn.create_topic(topic)
    conn.create_group(group)
    sent = send(conn, topic, "a", "b", "c")
    held = conn.receive_n(group, topic, 3)  # in flight, never acknowledged
    assert sorted(ids(held)) == sorted(sent)
    out = ok(broker.cli("group", "reset", group, "--topic", topic, "--to", "earliest"))
    assert f"reset group {group} on {topic}" in out
    queue = conn.describe_group(group).queues[0]
    assert (queue.pop_offset, queue.inflight, queue.lag) == (0, 0, 3)
    ack = conn.ack(group, topic, held[0])  # its delivery was dropped: the handle is stale
    assert ack.entries[0].status.code != pb.OK
    again = conn.receive_n(group, topic, 3)
    assert sorted(ids(again)) == sorted(sent) and all(m.system_properties.delivery_attempt == 1 for m in again)
    conn.ack(group, topic, *again)


def test_reset_to_latest_and_to_a_time(broker, conn, unique):
    topic, group = unique("reset-topic"), unique("reset-group")
    conn.create_topic(topic)
    conn.create_group(group)
    send(conn, topic, "old")
    time.sleep(0.05)
    cut = datetime.now(UTC).isoformat()
    time.sleep(0.05)
    new = send(conn, topic, "new")
    ok(broker.cli("group", "reset", group, "--topic", topic, "--to", "latest"))
    code, got = conn.receive(group, topic, poll_s=0.3)
    assert got == []
    ok(broker.cli("group", "reset", group, "--topic", topic, "--to", cut))
    assert ids(conn.receive_n(group, topic, 2, within=2)) == new


def test_reset_releases_a_fifo_queue(broker, conn, unique):
    topic, group = unique("reset-fifo"), unique("reset-fifo-group")
    conn.create_topic(topic)
    conn.create_group(group, fifo=True)
    conn.send_ok(message(topic, "1", group="g"), message(topic, "2", group="g"))
    first = conn.receive_n(group, topic, 1)
    assert [m.body for m in first] == [b"1"]
    assert conn.receive(group, topic, poll_s=0.2)[1] == []  # held behind "1", in flight
    ok(broker.cli("group", "reset", group, "--topic", topic, "--to", "latest"))
    conn.send_ok(message(topic, "3", group="g"))
    assert [m.body for m in conn.receive_n(group, topic, 1)] == [b"3"]  # the hold went with the reset


def test_update_changes_what_create_set(broker, conn, unique):
    group = unique("upd-group")
    conn.create_group(group)
    out = ok(broker.cli("group", "update", group, "--max-attempts", "5", "--fifo"))
    assert "FIFO" in out and "max attempts 5" in out
    info = conn.describe_group(group)
    assert info.fifo and info.max_attempts == 5
    ok(broker.cli("group", "update", group, "--no-fifo"))
    info = conn.describe_group(group)
    assert not info.fifo and info.max_attempts == 5


def test_delete_refused_while_connected_unless_forced(broker, conn, unique):
    topic, group = unique("del-topic"), unique("del-group")
    conn.create_topic(topic)
    conn.create_group(group)
    send(conn, topic, "x")
    conn.receive_n(group, topic, 1)
    conn.mq.Heartbeat(rpc.HeartbeatRequest(group=pb.Resource(name=group), client_type=pb.SIMPLE_CONSUMER),
                      metadata=META, timeout=RPC_TIMEOUT)
    assert_one_line_error(broker.cli("group", "delete", group), 1, "connected consumers", "--force")
    assert group in conn.group_names()
    ok(broker.cli("group", "delete", group, "--force"))
    assert group not in conn.group_names()
    assert f"%RETRY%{group}" not in conn.topic_names()


def test_delete_without_members(broker, conn, unique):
    group = unique("del-idle")
    conn.create_group(group)
    assert f"deleted group {group}" in ok(broker.cli("group", "delete", group))
    assert_one_line_error(broker.cli("group", "describe", group), 1, "does not exist")


def test_bad_input_is_one_line(broker, conn, unique):
    topic, group = unique("bad-topic"), unique("bad-group")
    conn.create_topic(topic)
    conn.create_group(group)
    assert_one_line_error(broker.cli("group", "reset", unique("nope"), "--topic", topic, "--to", "earliest"), 1,
                          "does not exist")
    assert_one_line_error(broker.cli("group", "reset", group, "--topic", unique("nope"), "--to", "earliest"), 1,
                          "does not exist")
    assert_one_line_error(broker.cli("group", "reset", group, "--topic", topic, "--to", "2026-11-29T10:00:00"), 1,
                          "zone")
    assert_one_line_error(broker.cli("group", "reset", group, "--topic", topic, "--to", "soon"), 1, "invalid time")
    assert_one_line_error(broker.cli("group", "update", unique("nope"), "--max-attempts", "3"), 1, "does not exist")
    assert_one_line_error(broker.cli("group", "delete", unique("nope")), 1, "does not exist")


def test_a_filtered_group_reset_gets_its_matches_again(broker, conn, unique):
    topic, group = unique("reset-tags"), unique("reset-tags-group")
    conn.create_topic(topic)
    conn.create_group(group)
    conn.send_ok(message(topic, "mine", tag="a"), message(topic, "other", tag="b"), message(topic, "mine-too", tag="a"))
    first = conn.receive_n(group, topic, 2, tag="a")
    conn.ack(group, topic, *first)
    ok(broker.cli("group", "reset", group, "--topic", topic, "--to", "earliest"))
    again = conn.receive_n(group, topic, 2, tag="a")
    assert sorted(m.body for m in again) == [b"mine", b"mine-too"]
