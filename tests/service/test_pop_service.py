"""POP consumption at the service level: receive, ack, change of invisible time, revive, dead
letters, FIFO order and locking, receipt handles checked against their group and topic.

Invisible times here are a few hundred milliseconds: waiting them out is the behaviour under test.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from mqwire import RPC_TIMEOUT, message
from waiting import wait_for

from rockmq.protocol import pb, rpc
from rockmq.protocol.conventions import dlq_topic

SHORT_MS = 200  # an invisible time that runs out within a test
LONG_MS = 30_000  # one that does not


def ack_codes(reply: rpc.AckMessageResponse) -> list[str]:
    return [pb.Code.Name(e.status.code) for e in reply.entries]


def bodies(messages: list[pb.Message]) -> list[bytes]:
    return [m.body for m in messages]


def inflight(harness, group: str) -> int:
    return harness.conn.describe_group(group).inflight


@pytest.fixture
def topic(harness, unique):
    """A one-queue topic: receives see its messages in offset order."""
    name = unique("t")
    harness.conn.create_topic(name, queues=1)
    return name


def test_receive_hands_out_each_message_once_and_ack_settles_it(harness, unique, topic):
    group = unique("g")
    harness.conn.send_ok(*(message(topic, f"m{i}") for i in range(3)))
    code, got = harness.conn.receive(group, topic, batch=10, invisible_ms=LONG_MS)
    assert pb.Code.Name(code) == "OK" and bodies(got) == [b"m0", b"m1", b"m2"]
    sp = got[0].system_properties
    assert sp.delivery_attempt == 1 and sp.receipt_handle and sp.invisible_duration.ToMilliseconds() == LONG_MS
    assert harness.conn.receive(group, topic, batch=10, invisible_ms=LONG_MS)[1] == []  # in flight: not handed out again
    assert inflight(harness, group) == 3
    assert ack_codes(harness.conn.ack(group, topic, *got)) == ["OK"] * 3
    assert inflight(harness, group) == 0
    assert ack_codes(harness.conn.ack(group, topic, got[0])) == ["INVALID_RECEIPT_HANDLE"]  # acked already


def test_two_groups_each_get_every_message(harness, unique, topic):
    harness.conn.send_ok(message(topic, "x"))
    for group in (unique("a"), unique("b")):
        assert bodies(harness.conn.receive(group, topic, invisible_ms=LONG_MS)[1]) == [b"x"]


def test_an_unacked_message_comes_back_after_its_invisible_time(harness, unique, topic):
    group = unique("g")
    harness.conn.send_ok(message(topic, "again"))
    first = harness.conn.receive(group, topic, invisible_ms=SHORT_MS)[1]
    second = harness.conn.receive_n(group, topic, 1, within=5, invisible_ms=LONG_MS)
    assert bodies(second) == [b"again"] and second[0].system_properties.delivery_attempt == 2
    assert second[0].system_properties.message_id == first[0].system_properties.message_id
    assert ack_codes(harness.conn.ack(group, topic, first[0])) == ["INVALID_RECEIPT_HANDLE"]  # the old delivery is over
    assert ack_codes(harness.conn.ack(group, topic, second[0])) == ["OK"]


def test_an_acked_message_does_not_come_back(harness, unique, topic):
    group = unique("g")
    harness.conn.send_ok(message(topic, "once"))
    got = harness.conn.receive(group, topic, invisible_ms=SHORT_MS)[1]
    harness.conn.ack(group, topic, *got)
    assert harness.conn.receive(group, topic, poll_s=2 * SHORT_MS / 1000, invisible_ms=LONG_MS)[1] == []


def test_change_invisible_time_shortens_it_and_issues_a_new_handle(harness, unique, topic):
    group = unique("g")
    harness.conn.send_ok(message(topic, "nack"))
    got = harness.conn.receive(group, topic, invisible_ms=LONG_MS)[1]
    old = got[0].system_properties.receipt_handle
    reply = harness.conn.change_invisible(group, topic, old, ms=100)
    assert reply.status.code == pb.OK and reply.receipt_handle not in ("", old)
    assert ack_codes(harness.conn.ack(group, topic, old)) == ["INVALID_RECEIPT_HANDLE"]
    back = harness.conn.receive_n(group, topic, 1, within=5, invisible_ms=LONG_MS)
    assert bodies(back) == [b"nack"] and back[0].system_properties.delivery_attempt == 2


def test_change_invisible_time_lengthens_it(harness, unique, topic):
    group = unique("g")
    harness.conn.send_ok(message(topic, "slow"))
    got = harness.conn.receive(group, topic, invisible_ms=SHORT_MS)[1]
    handle = harness.conn.change_invisible(group, topic, got[0].system_properties.receipt_handle, ms=LONG_MS).receipt_handle
    assert harness.conn.receive(group, topic, poll_s=3 * SHORT_MS / 1000, invisible_ms=LONG_MS)[1] == []
    assert ack_codes(harness.conn.ack(group, topic, handle)) == ["OK"]


def test_after_max_attempts_a_message_goes_to_the_groups_dead_letter_topic(harness, unique, topic):
    group = unique("g")
    harness.conn.create_group(group, max_attempts=2)
    msg_id = harness.conn.send_ok(message(topic, "poison"))[0].message_id
    attempts = [m.system_properties.delivery_attempt
                for m in harness.conn.receive_n(group, topic, 1, invisible_ms=SHORT_MS)
                + harness.conn.receive_n(group, topic, 1, within=5, invisible_ms=SHORT_MS)]
    assert attempts == [1, 2]
    dead = wait_for(lambda: harness.stored(dlq_topic(group)), timeout=5, what="the dead letter")
    assert bodies(dead) == [b"poison"] and dead[0].system_properties.message_id == msg_id
    assert dead[0].system_properties.dead_letter_queue.topic == topic
    assert harness.topic(dlq_topic(group)).queues == 1
    assert harness.conn.receive(group, topic, poll_s=2 * SHORT_MS / 1000, invisible_ms=LONG_MS)[1] == []
    assert inflight(harness, group) == 0


def test_forward_to_dead_letter_queue_moves_it_at_once(harness, unique, topic):
    group = unique("g")
    harness.conn.send_ok(message(topic, "give up"))
    got = harness.conn.receive(group, topic, invisible_ms=LONG_MS)[1]
    req = rpc.ForwardMessageToDeadLetterQueueRequest(
        group=pb.Resource(name=group), topic=pb.Resource(name=topic), receipt_handle=got[0].system_properties.receipt_handle,
        message_id=got[0].system_properties.message_id, delivery_attempt=1, max_delivery_attempts=17)
    assert harness.conn.mq.ForwardMessageToDeadLetterQueue(req, timeout=RPC_TIMEOUT).status.code == pb.OK
    assert bodies(harness.stored(dlq_topic(group))) == [b"give up"]
    assert inflight(harness, group) == 0


# --- FIFO groups -------------------------------------------------------------------------------


def test_a_fifo_group_gets_a_queue_in_order_and_nothing_later_while_earlier_is_in_flight(harness, unique, topic):
    group = unique("g")
    harness.conn.create_group(group, fifo=True)
    harness.conn.send_ok(*(message(topic, f"a{i}", group="a") for i in range(4)))
    first = harness.conn.receive(group, topic, batch=2, invisible_ms=LONG_MS)[1]
    assert bodies(first) == [b"a0", b"a1"]
    assert harness.conn.receive(group, topic, batch=2, invisible_ms=LONG_MS)[1] == []  # the queue is held
    harness.conn.ack(group, topic, first[0])
    assert harness.conn.receive(group, topic, batch=2, invisible_ms=LONG_MS)[1] == []  # a1 still holds it
    harness.conn.ack(group, topic, first[1])
    assert bodies(harness.conn.receive(group, topic, batch=2, invisible_ms=LONG_MS)[1]) == [b"a2", b"a3"]


def test_a_fifo_group_gets_redeliveries_in_order_before_anything_new(harness, unique, topic):
    group = unique("g")
    harness.conn.create_group(group, fifo=True)
    harness.conn.send_ok(*(message(topic, f"a{i}", group="a") for i in range(4)))
    assert bodies(harness.conn.receive(group, topic, batch=3, invisible_ms=SHORT_MS)[1]) == [b"a0", b"a1", b"a2"]
    again = harness.conn.receive_n(group, topic, 3, within=5, invisible_ms=LONG_MS)
    assert bodies(again) == [b"a0", b"a1", b"a2"]
    assert {m.system_properties.delivery_attempt for m in again} == {2}
    harness.conn.ack(group, topic, *again)
    assert bodies(harness.conn.receive(group, topic, batch=10, invisible_ms=LONG_MS)[1]) == [b"a3"]


def test_a_normal_group_is_not_held_by_in_flight_messages(harness, unique, topic):
    group = unique("g")
    harness.conn.send_ok(*(message(topic, f"a{i}", group="a") for i in range(2)))
    assert bodies(harness.conn.receive(group, topic, batch=1, invisible_ms=LONG_MS)[1]) == [b"a0"]
    assert bodies(harness.conn.receive(group, topic, batch=1, invisible_ms=LONG_MS)[1]) == [b"a1"]


# --- receipt handles ---------------------------------------------------------------------------


def test_a_receipt_handle_is_refused_by_another_group_or_topic_and_the_delivery_stays(harness, unique, topic):
    group, other_group, other_topic = unique("g"), unique("other"), unique("other-t")
    harness.conn.create_group(other_group)
    harness.conn.create_topic(other_topic, queues=1)
    harness.conn.send_ok(message(topic, "mine"))
    got = harness.conn.receive(group, topic, invisible_ms=LONG_MS)[1]
    handle = got[0].system_properties.receipt_handle
    assert ack_codes(harness.conn.ack(other_group, topic, handle)) == ["INVALID_RECEIPT_HANDLE"]
    assert ack_codes(harness.conn.ack(group, other_topic, handle)) == ["INVALID_RECEIPT_HANDLE"]
    for g, t in ((other_group, topic), (group, other_topic)):
        reply = harness.conn.change_invisible(g, t, handle, ms=0)
        assert reply.status.code == pb.INVALID_RECEIPT_HANDLE and reply.receipt_handle == handle
    assert inflight(harness, group) == 1  # none of that touched the delivery
    assert ack_codes(harness.conn.ack(group, topic, handle)) == ["OK"]


def test_a_tampered_receipt_handle_is_refused(harness, unique, topic):
    group = unique("g")
    harness.conn.send_ok(message(topic, "x"))
    handle = harness.conn.receive(group, topic, invisible_ms=LONG_MS)[1][0].system_properties.receipt_handle
    forged = handle[:-2] + ("AA" if not handle.endswith("AA") else "BB")
    assert ack_codes(harness.conn.ack(group, topic, forged)) == ["INVALID_RECEIPT_HANDLE"]
    assert inflight(harness, group) == 1


# --- long polling ------------------------------------------------------------------------------


def test_a_long_poll_is_answered_as_soon_as_a_message_arrives(harness, unique, topic):
    group = unique("g")
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        polling = pool.submit(harness.conn.receive, group, topic, poll_s=10, invisible_ms=LONG_MS)
        wait_for(lambda: harness.waiting_receives() == 1, what="the broker holding the poll")
        harness.conn.send_ok(message(topic, "wake up"))
        code, got = polling.result(timeout=5)
    assert pb.Code.Name(code) == "OK" and bodies(got) == [b"wake up"]
    assert time.monotonic() - started < 5
    assert harness.waiting_receives() == 0


@pytest.mark.broker_settings(max_long_polling_s=0.3)
def test_a_long_poll_is_capped_by_the_broker(harness, unique, topic):
    started = time.monotonic()
    code, got = harness.conn.receive(unique("g"), topic, poll_s=10, invisible_ms=LONG_MS)
    assert pb.Code.Name(code) == "MESSAGE_NOT_FOUND" and got == []
    assert 0.25 <= time.monotonic() - started < 3


@pytest.mark.broker_settings(max_receive_batch=2, max_reply_bytes=1500)
def test_receive_and_pull_stop_at_the_reply_caps_of_the_settings(harness, unique, topic):
    """The caps come from Settings: at most max_receive_batch messages, and no more once
    max_reply_bytes are reached (at least one message, however large)."""
    harness.conn.send_ok(*(message(topic, f"s{i}") for i in range(3)), message(topic, b"L" * 2000), message(topic, "after"))
    group = unique("g")
    got = [bodies(harness.conn.receive(group, topic, batch=10, invisible_ms=LONG_MS)[1]) for _ in range(3)]
    assert got == [[b"s0", b"s1"], [b"s2", b"L" * 2000], [b"after"]]
    code, pulled, nxt = harness.conn.pull(unique("p"), topic, 0, 3, batch=10)
    assert (pb.Code.Name(code), bodies(pulled), nxt) == ("OK", [b"L" * 2000], 4)


@pytest.mark.broker_settings(receive_batch=2)
def test_a_receive_or_pull_that_names_no_batch_size_gets_the_settings_default(harness, unique, topic):
    harness.conn.send_ok(*(message(topic, f"d{i}") for i in range(3)))
    assert bodies(harness.conn.receive(unique("g"), topic, batch=0, invisible_ms=LONG_MS)[1]) == [b"d0", b"d1"]
    assert bodies(harness.conn.pull(unique("p"), topic, 0, 0, batch=0)[1]) == [b"d0", b"d1"]
