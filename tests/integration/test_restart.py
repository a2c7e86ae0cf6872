"""What survives a graceful stop/start on the same data dir and port.

Messages, topics and groups, committed offsets, POP progress, acknowledgements and in-flight
deliveries (whose receipt handles stay valid while their invisible time runs).
"""

from __future__ import annotations

import time

import pytest
from mqwire import Conn, message

from rockmq.protocol import admin, pb


@pytest.fixture
def restartable(fresh_broker):
    """(broker, connect): connect() opens a Conn to the broker as it is now; all are closed at the end."""
    conns: list[Conn] = []

    def connect() -> Conn:
        c = Conn(fresh_broker.endpoint)
        conns.append(c)
        return c

    yield fresh_broker, connect
    for c in conns:
        c.close()


def restart(broker) -> None:
    port = broker.port
    broker.stop()
    broker.start()
    assert broker.port == port


def test_state_survives_graceful_restart(restartable):
    broker, connect = restartable
    c = connect()
    topic, group, puller = "orders", "billing", "offset-reader"
    c.create_topic(topic, queues=2, types=("NORMAL",))
    c.create_group(group, max_attempts=5)
    c.create_group("fifo-group", fifo=True, max_attempts=7)
    sent = c.send_ok(*[message(topic, f"m{i}", tag="t", keys=(f"k{i}",)) for i in range(7)])
    ids = {e.message_id for e in sent}
    before = {q.queue_id: (q.min_offset, q.max_offset) for q in c.describe_topic(topic).queues}
    assert sum(hi for _, hi in before.values()) == 7

    # Pull consumer commits offsets.
    assert c.update_offset(puller, topic, 0, 2).status.code == pb.OK
    assert c.update_offset(puller, topic, 1, 1).status.code == pb.OK

    # POP consumer: 1 acked (D), 2 held for 60 s (A), 2 held for 2 s (B), 2 never received (C).
    acked = c.receive_n(group, topic, 1, within=5, invisible_ms=60_000)
    assert len(acked) == 1 and c.ack(group, topic, *acked).status.code == pb.OK
    held_long = c.receive_n(group, topic, 2, within=5, invisible_ms=60_000)
    held_short = c.receive_n(group, topic, 2, within=5, invisible_ms=2_000)
    assert len(held_long) == 2 and len(held_short) == 2
    short_deadline = time.monotonic() + 2.0
    received_ids = {m.system_properties.message_id for m in acked + held_long + held_short}
    assert len(received_ids) == 5
    never_received = ids - received_ids
    inflight_before = c.describe_group(group).inflight
    assert inflight_before == 4

    restart(broker)
    c = connect()

    # Topics and groups, with their settings.
    topics = {t.name: t for t in c.admin.ListTopics(admin.ListTopicsRequest(), timeout=10).topics}
    assert topics[topic].queue_count == 2 and list(topics[topic].message_types) == ["NORMAL"]
    groups = {g.name: g for g in c.admin.ListGroups(admin.ListGroupsRequest(), timeout=10).groups}
    assert (groups[group].fifo, groups[group].max_attempts) == (False, 5)
    assert (groups["fifo-group"].fifo, groups["fifo-group"].max_attempts) == (True, 7)

    # Messages and offsets.
    after = {q.queue_id: (q.min_offset, q.max_offset) for q in c.describe_topic(topic).queues}
    assert after == before
    stored = [m for q in range(2) for m in c.pull_all(topic, q)]
    assert {m.system_properties.message_id for m in stored} == ids
    for m in stored:
        i = m.body.decode()[1:]
        assert m.system_properties.tag == "t" and list(m.system_properties.keys) == [f"k{i}"]
    assert c.get_offset(puller, topic, 0).offset == 2
    assert c.get_offset(puller, topic, 1).offset == 1

    # In-flight state: still 4 (or 2 + 2 waiting for redelivery, if the short ones ran out).
    assert c.describe_group(group).inflight == 4

    # The long-held deliveries' old handles still work: one renewed, both acked.
    renewed = c.change_invisible(group, topic, held_long[0].system_properties.receipt_handle, ms=60_000)
    assert renewed.status.code == pb.OK, renewed
    assert c.ack(group, topic, renewed.receipt_handle).status.code == pb.OK
    assert c.ack(group, topic, held_long[1]).status.code == pb.OK

    # Next receives: the 2 never received (attempt 1) and, once their 2 s ran out, the 2 short
    # ones (attempt 2). Neither the acked one nor the long-held ones come back.
    time.sleep(max(0.0, short_deadline - time.monotonic()))
    got = c.receive_n(group, topic, 4, within=8, invisible_ms=60_000)
    by_id = {m.system_properties.message_id: m.system_properties.delivery_attempt for m in got}
    assert len(got) == 4 and len(by_id) == 4, [m.body for m in got]
    expected = {i: 1 for i in never_received} | {m.system_properties.message_id: 2 for m in held_short}
    assert by_id == expected
    assert c.ack(group, topic, *got).status.code == pb.OK
    code, extra = c.receive(group, topic, poll_s=0.5)
    assert code == pb.MESSAGE_NOT_FOUND and not extra
    assert c.describe_group(group).inflight == 0


def test_expired_while_down_is_redelivered(restartable):
    broker, connect = restartable
    c = connect()
    topic, group = "jobs", "workers"
    c.create_topic(topic, queues=1)
    c.send_ok(message(topic, "job-1"), message(topic, "job-2"))
    got = c.receive_n(group, topic, 2, within=5, invisible_ms=1_000)
    assert len(got) == 2
    broker.stop()
    time.sleep(1.2)  # the invisible time runs out while the broker is down
    broker.start()
    c = connect()
    for m in got:  # expired: the old handles are dead
        assert c.ack(group, topic, m).status.code == pb.INVALID_RECEIPT_HANDLE
    again = c.receive_n(group, topic, 2, within=5)
    assert sorted(m.body for m in again) == [b"job-1", b"job-2"]
    assert all(m.system_properties.delivery_attempt == 2 for m in again)
    assert c.ack(group, topic, *again).status.code == pb.OK


def test_fifo_hold_survives_restart(restartable):
    broker, connect = restartable
    c = connect()
    topic, group = "fifo-topic", "fifo-consumers"
    c.create_topic(topic, queues=1, types=("FIFO",))
    c.create_group(group, fifo=True)
    c.send_ok(*[message(topic, f"step-{i}", group="order-1") for i in range(3)])
    first = c.receive_n(group, topic, 1, invisible_ms=60_000)
    assert [m.body for m in first] == [b"step-0"]

    restart(broker)
    c = connect()
    # step-0 is still in flight: nothing later of its queue may go out.
    code, msgs = c.receive(group, topic, batch=1, poll_s=0.5)
    assert code == pb.MESSAGE_NOT_FOUND, [m.body for m in msgs]
    assert c.ack(group, topic, *first).status.code == pb.OK
    got = c.receive_n(group, topic, 1, within=5, invisible_ms=60_000)
    assert [m.body for m in got] == [b"step-1"]


def test_sends_after_restart_continue_the_offsets(restartable):
    broker, connect = restartable
    c = connect()
    c.create_topic("seq", queues=1)
    first = c.send_ok(*[message("seq", f"a{i}") for i in range(3)])
    assert [e.offset for e in first] == [0, 1, 2]
    restart(broker)
    c = connect()
    second = c.send_ok(*[message("seq", f"b{i}") for i in range(2)])
    assert [e.offset for e in second] == [3, 4]
    # A retry of a message sent before the restart is still recognised (dedup is persistent).
    retry = c.send_ok(message("seq", "a1", message_id=first[1].message_id))
    assert retry[0].offset == 1
    assert [m.body for m in c.pull_all("seq", 0)] == [b"a0", b"a1", b"a2", b"b0", b"b1"]
