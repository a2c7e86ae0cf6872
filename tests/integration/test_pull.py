"""Offset-based consumption: PullMessage, QueryOffset, GetOffset and UpdateOffset."""

from __future__ import annotations

import threading
import time

import pytest
from mqwire import message

from rockmq.protocol import pb


@pytest.fixture
def filled(conn, unique):
    """A 1-queue topic holding b0..b4 at offsets 0..4, and a group that exists."""
    topic, group = unique("pull"), unique("pull-g")
    conn.create_topic(topic, queues=1)
    conn.create_group(group)
    entries = conn.send_ok(*[message(topic, f"b{i}", tag="even" if i % 2 == 0 else "odd") for i in range(5)])
    assert [e.offset for e in entries] == [0, 1, 2, 3, 4]
    return topic, group


def test_pull_from_offset_in_order(conn, filled):
    topic, group = filled
    code, msgs, nxt = conn.pull(group, topic, 0, 0)
    assert code == pb.OK
    assert [m.body for m in msgs] == [b"b0", b"b1", b"b2", b"b3", b"b4"]
    assert [m.system_properties.queue_offset for m in msgs] == [0, 1, 2, 3, 4]
    assert all(m.system_properties.queue_id == 0 and m.topic.name == topic for m in msgs)
    assert nxt == 5

    code, msgs, nxt = conn.pull(group, topic, 0, 2, batch=2)
    assert code == pb.OK and [m.body for m in msgs] == [b"b2", b"b3"] and nxt == 4
    code, msgs, nxt = conn.pull(group, topic, 0, 4, batch=10)
    assert code == pb.OK and [m.body for m in msgs] == [b"b4"] and nxt == 5


def test_pull_at_the_end(conn, filled):
    topic, group = filled
    t0 = time.monotonic()
    code, msgs, nxt = conn.pull(group, topic, 0, 5)
    assert code == pb.MESSAGE_NOT_FOUND and msgs == [] and nxt == 5
    assert time.monotonic() - t0 < 1.0  # no long poll asked for: answer at once


def test_pull_long_poll_times_out(conn, filled):
    topic, group = filled
    t0 = time.monotonic()
    code, msgs, nxt = conn.pull(group, topic, 0, 5, poll_s=1.0)
    elapsed = time.monotonic() - t0
    assert code == pb.MESSAGE_NOT_FOUND and msgs == [] and nxt == 5
    assert 0.8 <= elapsed < 3.0, elapsed


def test_pull_long_poll_wakes_on_arrival(conn, filled):
    topic, group = filled
    result: dict = {}

    def poll() -> None:
        t0 = time.monotonic()
        result["reply"] = conn.pull(group, topic, 0, 5, poll_s=10.0, timeout=15)
        result["elapsed"] = time.monotonic() - t0

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.5)
    assert t.is_alive(), f"the pull returned before any message arrived: {result}"
    conn.send_ok(message(topic, "late"))
    t.join(12)
    assert not t.is_alive()
    code, msgs, nxt = result["reply"]
    assert code == pb.OK and [m.body for m in msgs] == [b"late"] and nxt == 6
    assert result["elapsed"] < 3.0, result["elapsed"]


def test_pull_with_tag_filter(conn, filled):
    topic, group = filled
    code, msgs, nxt = conn.pull(group, topic, 0, 0, tag="odd")
    assert code == pb.OK and [m.body for m in msgs] == [b"b1", b"b3"]
    assert nxt == 5  # filtered-out messages are passed over, not re-read
    code, msgs, nxt = conn.pull(group, topic, 0, 0, tag="even||odd", batch=3)
    assert [m.body for m in msgs] == [b"b0", b"b1", b"b2"] and nxt == 3


def test_pull_errors(conn, filled):
    topic, group = filled
    assert conn.pull(group, topic, 0, 6)[0] == pb.ILLEGAL_OFFSET
    assert conn.pull(group, topic, 0, -1)[0] == pb.ILLEGAL_OFFSET
    assert conn.pull(group, topic, 1, 0)[0] == pb.BAD_REQUEST  # the topic has only queue 0
    assert conn.pull("bad group", topic, 0, 0)[0] == pb.ILLEGAL_CONSUMER_GROUP
    assert conn.pull(group, "no such topic", 0, 0)[0] == pb.ILLEGAL_TOPIC


def test_query_offset(conn, unique):
    topic = unique("qo")
    conn.create_topic(topic, queues=1)
    assert conn.query_offset(topic, 0, pb.BEGINNING).offset == 0
    assert conn.query_offset(topic, 0, pb.END).offset == 0
    conn.send_ok(*[message(topic, f"early{i}") for i in range(3)])
    time.sleep(0.02)
    split_ms = int(time.time() * 1000)
    time.sleep(0.02)
    conn.send_ok(*[message(topic, f"late{i}") for i in range(2)])

    begin = conn.query_offset(topic, 0, pb.BEGINNING)
    end = conn.query_offset(topic, 0, pb.END)
    assert begin.status.code == end.status.code == pb.OK
    assert (begin.offset, end.offset) == (0, 5)
    at = conn.query_offset(topic, 0, pb.TIMESTAMP, split_ms)
    assert at.status.code == pb.OK and at.offset == 3
    assert conn.query_offset(topic, 0, pb.TIMESTAMP, 0).offset == 0
    assert conn.query_offset(topic, 0, pb.TIMESTAMP, split_ms + 3_600_000).offset == 5
    code, msgs, _ = conn.pull("qo-reader", topic, 0, at.offset)
    assert code == pb.OK and [m.body for m in msgs] == [b"late0", b"late1"]

    assert conn.query_offset(topic, 0, pb.TIMESTAMP).status.code == pb.BAD_REQUEST  # no timestamp
    assert conn.query_offset(topic, 3, pb.END).status.code == pb.BAD_REQUEST  # no queue 3
    assert conn.query_offset(unique("qo-missing"), 0, pb.END).status.code == pb.TOPIC_NOT_FOUND


def test_get_and_update_offset(conn, filled, unique):
    topic, group = filled
    reply = conn.get_offset(group, topic, 0)
    assert reply.status.code == pb.OFFSET_NOT_FOUND, reply
    assert conn.update_offset(group, topic, 0, 3).status.code == pb.OK
    assert conn.get_offset(group, topic, 0).offset == 3
    assert conn.update_offset(group, topic, 0, 5).status.code == pb.OK  # = END: everything consumed
    assert conn.get_offset(group, topic, 0).offset == 5
    assert conn.update_offset(group, topic, 0, 0).status.code == pb.OK  # rewinding is allowed
    got = conn.get_offset(group, topic, 0)
    assert got.status.code == pb.OK and got.offset == 0

    for bad in (6, 1_000_000, -1):
        reply = conn.update_offset(group, topic, 0, bad)
        assert reply.status.code == pb.ILLEGAL_OFFSET, (bad, reply)
    assert conn.get_offset(group, topic, 0).offset == 0  # untouched by the refusals
    assert conn.update_offset(group, topic, 1, 0).status.code == pb.BAD_REQUEST  # no queue 1
    assert conn.get_offset(group, unique("no-topic"), 0).status.code == pb.TOPIC_NOT_FOUND


def test_offsets_are_per_group(conn, filled, unique):
    topic, group = filled
    other = unique("pull-other")
    conn.create_group(other)
    assert conn.update_offset(group, topic, 0, 4).status.code == pb.OK
    assert conn.get_offset(other, topic, 0).status.code == pb.OFFSET_NOT_FOUND
    assert conn.update_offset(other, topic, 0, 1).status.code == pb.OK
    assert (conn.get_offset(group, topic, 0).offset, conn.get_offset(other, topic, 0).offset) == (4, 1)
