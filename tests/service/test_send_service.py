"""SendMessage at the service level: what each entry of a reply says, and what the store holds after.

Every test looks in the broker (tests/harness.py) as well as at the reply: a refusal must leave
nothing behind, and an OK must mean stored exactly once, in the right place.
"""

from __future__ import annotations

import logging
import time

import pytest
from mqwire import RPC_TIMEOUT, message
from waiting import wait_for

from rockmq.protocol import pb, rpc
from rockmq.protocol.conventions import RECONSUME_TIMES, dlq_topic, retry_topic

LIMITS = {"max_body_size": 1024, "max_properties_size": 64, "max_delay_s": 60}


def codes(reply: rpc.SendMessageResponse) -> list[str]:
    return [pb.Code.Name(e.status.code) for e in reply.entries]


def delayed(topic: str, body: str, delay_ms: int) -> pb.Message:
    msg = message(topic, body)
    msg.system_properties.message_type = pb.DELAY
    msg.system_properties.delivery_timestamp.FromMilliseconds(int(time.time() * 1000) + delay_ms)
    return msg


def transactional(topic: str, body: str) -> pb.Message:
    msg = message(topic, body)
    msg.system_properties.message_type = pb.TRANSACTION
    return msg


def end_transaction(harness, topic: str, entry: rpc.SendResultEntry, commit: bool) -> rpc.EndTransactionResponse:
    end = rpc.EndTransactionRequest(topic=pb.Resource(name=topic), message_id=entry.message_id,
                                    transaction_id=entry.transaction_id, resolution=pb.COMMIT if commit else pb.ROLLBACK)
    return harness.conn.mq.EndTransaction(end, timeout=RPC_TIMEOUT)


def with_system(msg: pb.Message, **fields: object) -> pb.Message:
    for name, value in fields.items():
        setattr(msg.system_properties, name, value)
    return msg


# Each refusal: (what is wrong, a message to `topic` with that fault, the entry's status code).
REFUSALS = [
    ("empty body", lambda t: message(t, b""), "MESSAGE_BODY_EMPTY"),
    ("body over the limit", lambda t: message(t, b"x" * 1025), "MESSAGE_BODY_TOO_LARGE"),
    ("tag with |", lambda t: message(t, "b", tag="a|b"), "ILLEGAL_MESSAGE_TAG"),
    ("blank tag", lambda t: message(t, "b", tag=" "), "ILLEGAL_MESSAGE_TAG"),
    ("blank key", lambda t: message(t, "b", keys=(" ",)), "ILLEGAL_MESSAGE_KEY"),
    ("blank message group", lambda t: message(t, "b", group=" "), "ILLEGAL_MESSAGE_GROUP"),
    ("properties over the limit", lambda t: message(t, "b", properties={"k": "v" * 64}), "MESSAGE_PROPERTIES_TOO_LARGE"),
    ("empty property key", lambda t: message(t, "b", properties={"": "v"}), "ILLEGAL_MESSAGE_PROPERTY_KEY"),
    ("FIFO without a group", lambda t: with_system(message(t, "b"), message_type=pb.FIFO), "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE"),
    ("DELAY without a time", lambda t: with_system(message(t, "b"), message_type=pb.DELAY),
     "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE"),
    ("delivery past the max delay", lambda t: delayed(t, "b", 61_000), "ILLEGAL_DELIVERY_TIME"),
]


@pytest.mark.broker_settings(**LIMITS)
@pytest.mark.parametrize(("fault", "build", "code"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_each_refusal_has_its_status_and_stores_nothing(harness, unique, fault, build, code):
    topic = unique("t")
    harness.conn.create_topic(topic, queues=2)
    reply = harness.conn.send(build(topic))
    assert (pb.Code.Name(reply.status.code), codes(reply)) == (code, [code]), reply
    assert reply.entries[0].status.message  # says what is wrong
    assert harness.stored(topic) == []


@pytest.mark.broker_settings(**LIMITS)
@pytest.mark.parametrize(("fault", "build", "code"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_refused_send_creates_no_topic(harness, unique, fault, build, code):
    """Validation comes before any write (issue 16 §1.1): an auto-created topic too."""
    topic = unique("t")
    assert codes(harness.conn.send(build(topic))) == [code]
    assert harness.topic(topic) is None


def test_an_illegal_message_id_or_topic_name_is_refused(harness, unique):
    topic = unique("t")
    reply = harness.conn.send(message(topic, "b", message_id=""), message(topic, "b", message_id="x" * 129),
                              message("bad name!", "b"))
    assert codes(reply) == ["ILLEGAL_MESSAGE_ID", "ILLEGAL_MESSAGE_ID", "ILLEGAL_TOPIC"]
    assert harness.topic(topic) is None and harness.topic("bad name!") is None


def test_a_topic_refuses_types_it_does_not_take(harness, unique):
    topic = unique("t")
    harness.conn.create_topic(topic, queues=1, types=("NORMAL",))
    reply = harness.conn.send(message(topic, "fifo", group="g"), transactional(topic, "txn"), message(topic, "normal"))
    assert codes(reply) == ["MESSAGE_PROPERTY_CONFLICT_WITH_TYPE"] * 2 + ["OK"]
    assert [m.body for m in harness.stored(topic)] == [b"normal"]


@pytest.mark.broker_settings(**LIMITS)
def test_a_batch_mixing_good_and_bad_entries_stores_exactly_the_good(harness, unique):
    topic = unique("t")
    harness.conn.create_topic(topic, queues=1)
    reply = harness.conn.send(message(topic, "one"), message(topic, b""), message(topic, "two", tag="a|b"),
                              message(topic, "three"))
    assert pb.Code.Name(reply.status.code) == "MULTIPLE_RESULTS"
    assert codes(reply) == ["OK", "MESSAGE_BODY_EMPTY", "ILLEGAL_MESSAGE_TAG", "OK"]
    stored = harness.stored(topic)
    assert [m.body for m in stored] == [b"one", b"three"]
    assert [e.offset for e in reply.entries if e.status.code == pb.OK] == [m.system_properties.queue_offset for m in stored]


def test_the_same_message_id_twice_in_one_request_is_stored_once(harness, unique):
    topic = unique("t")
    first, again = message(topic, "a", message_id="dup-1"), message(topic, "a", message_id="dup-1")
    entries = harness.conn.send_ok(first, again, message(topic, "b"))
    assert entries[0].offset == entries[1].offset and entries[0].message_id == entries[1].message_id == "dup-1"
    assert sorted(m.body for m in harness.stored(topic)) == [b"a", b"b"]


def test_a_resend_in_a_later_request_returns_the_first_result_and_stores_nothing(harness, unique):
    topic = unique("t")
    first = harness.conn.send_ok(message(topic, "a", message_id="dup-2"))[0]
    again = harness.conn.send_ok(message(topic, "a", message_id="dup-2"))[0]
    assert (again.message_id, again.offset) == (first.message_id, first.offset)
    assert len(harness.stored(topic)) == 1


def test_the_same_message_id_on_two_topics_is_two_messages(harness, unique):
    a, b = unique("a"), unique("b")
    harness.conn.send_ok(message(a, "x", message_id="dup-3"), message(b, "x", message_id="dup-3"))
    assert (len(harness.stored(a)), len(harness.stored(b))) == (1, 1)


@pytest.mark.broker_settings(dedup_window_s=1)
def test_de_duplication_lasts_a_window_then_forgets(harness, unique):
    """Lookups cover the current window and the one before: a resend two windows later is new."""
    topic = unique("t")
    harness.conn.send_ok(message(topic, "a", message_id="dup-4"))
    sent_window = int(time.time())
    harness.conn.send_ok(message(topic, "a", message_id="dup-4"))
    assert len(harness.stored(topic)) == 1
    time.sleep(max(0.0, sent_window + 2 - time.time()) + 0.05)  # the behaviour under test: two windows pass
    harness.conn.send_ok(message(topic, "a", message_id="dup-4"))
    assert len(harness.stored(topic)) == 2


def test_a_delayed_message_waits_outside_its_queue_until_due(harness, unique):
    topic = unique("t")
    entry = harness.conn.send_ok(delayed(topic, "later", 300))[0]
    assert entry.recall_handle
    assert harness.stored(topic) == []
    wait_for(lambda: harness.stored(topic), timeout=5, what="the delayed message in its queue")
    assert [m.body for m in harness.stored(topic)] == [b"later"]


def test_a_delivery_time_already_past_goes_straight_to_the_queue(harness, unique):
    topic = unique("t")
    entry = harness.conn.send_ok(delayed(topic, "now", -1000))[0]
    assert not entry.recall_handle
    assert [m.body for m in harness.stored(topic)] == [b"now"]


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "rollback"])
def test_a_transactional_message_is_stored_only_once_committed(harness, unique, commit):
    topic = unique("t")
    msg = transactional(topic, "half")
    entry = harness.conn.send_ok(msg)[0]
    assert entry.transaction_id
    assert harness.stored(topic) == []
    assert end_transaction(harness, topic, entry, commit).status.code == pb.OK
    assert [m.body for m in harness.stored(topic)] == ([b"half"] if commit else [])


# --- reserved topics ---------------------------------------------------------------------------


def test_a_dead_letter_topic_takes_no_send_and_is_not_created(harness, unique):
    dlq = dlq_topic(unique("billing"))
    assert codes(harness.conn.send(message(dlq, "x"))) == ["FORBIDDEN"]
    assert harness.topic(dlq) is None


def test_two_messages_to_a_dead_letter_topic_in_one_request_are_both_refused(harness, unique):
    dlq = dlq_topic(unique("billing"))
    reply = harness.conn.send(message(dlq, "x"), message(dlq, "y"))
    assert codes(reply) == ["FORBIDDEN", "FORBIDDEN"]
    assert harness.stored(dlq) == []


def test_an_existing_dead_letter_topic_takes_no_send_either(harness, unique):
    group = unique("billing")
    dlq = dlq_topic(group)
    harness.call(lambda: harness.services.ctx.dlq_topic(harness.services.ctx.group_for(group)))  # as dead-lettering does
    assert codes(harness.conn.send(message(dlq, "x"), message(dlq, "y"))) == ["FORBIDDEN", "FORBIDDEN"]
    assert harness.stored(dlq) == []


@pytest.mark.broker_settings(max_attempts=3)
def test_a_send_back_with_attempts_left_goes_to_the_retry_topic(harness, unique):
    group = unique("g")
    retry = retry_topic(group)
    harness.conn.send_ok(message(retry, "again", properties={RECONSUME_TIMES: "2"}))
    assert [m.body for m in harness.stored(retry)] == [b"again"]
    assert harness.topic(retry).queues == 1 and harness.group(group) is not None
    assert harness.topic(dlq_topic(group)) is None


@pytest.mark.broker_settings(max_attempts=3)
def test_a_send_back_that_used_up_the_attempts_goes_to_the_dead_letter_topic(harness, unique):
    group = unique("g")
    harness.conn.send_ok(message(retry_topic(group), "spent", properties={RECONSUME_TIMES: "3"}))
    assert harness.stored(retry_topic(group)) == []
    dead = harness.stored(dlq_topic(group))
    assert [m.body for m in dead] == [b"spent"] and dead[0].system_properties.message_type == pb.NORMAL


def test_a_refused_send_back_creates_no_group(harness, unique):
    group = unique("g")
    assert codes(harness.conn.send(message(retry_topic(group), b""))) == ["MESSAGE_BODY_EMPTY"]
    assert harness.group(group) is None and harness.topic(retry_topic(group)) is None


def test_a_send_back_with_a_bad_attempt_count_is_refused(harness, unique):
    group = unique("g")
    reply = harness.conn.send(message(retry_topic(group), "x", properties={RECONSUME_TIMES: "many"}))
    assert codes(reply) == ["ILLEGAL_MESSAGE_PROPERTY_KEY"]
    assert harness.stored(retry_topic(group)) == [] and harness.topic(dlq_topic(group)) is None


def test_a_recalled_delayed_message_is_never_stored(harness, unique):
    topic = unique("t")
    entry = harness.conn.send_ok(delayed(topic, "cancelled", 300))[0]
    recall = rpc.RecallMessageRequest(topic=pb.Resource(name=topic), recall_handle=entry.recall_handle)
    reply = harness.conn.mq.RecallMessage(recall, timeout=RPC_TIMEOUT)
    assert reply.status.code == pb.OK and reply.message_id == entry.message_id
    time.sleep(0.5)  # the behaviour under test: its delivery time passes
    assert harness.stored(topic) == []
    again = harness.conn.mq.RecallMessage(recall, timeout=RPC_TIMEOUT)
    assert again.status.code == pb.NOT_FOUND  # recalled already


def test_an_undecided_transaction_nobody_answers_for_is_rolled_back_after_the_checks(harness, unique, caplog):
    """FAST timings: checks at 0.3 s intervals, rolled back after txn_check_max of them."""
    topic = unique("t")
    entry = harness.conn.send_ok(transactional(topic, "orphan"))[0]
    with caplog.at_level(logging.WARNING, logger="rockmq.broker.transactions"):
        wait_for(lambda: any(entry.transaction_id in r.getMessage() for r in caplog.records), 10,
                 what="the broker giving up on the transaction")
    reply = end_transaction(harness, topic, entry, commit=True)
    assert reply.status.code == pb.INVALID_TRANSACTION_ID and "rolled back" in reply.status.message
    assert harness.stored(topic) == []
