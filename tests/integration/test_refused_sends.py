"""Validation happens before any write: a refused send or stage creates no topic, no group, and
stores nothing (issue 16 §1.1). Checked against the shared broker through topic and group lists."""

from __future__ import annotations

import pytest
from mqwire import Conn, code_name, message

from rockmq.protocol import pb
from rockmq.protocol.conventions import RECONSUME_TIMES


def topic_names(conn: Conn) -> set[str]:
    return set(conn.topic_names())


def group_names(conn: Conn) -> set[str]:
    return set(conn.group_names())


def codes(conn: Conn, *messages: pb.Message) -> list[str]:
    return [code_name(e.status.code) for e in conn.send(*messages).entries]


def stored(conn: Conn, topic: str) -> int:
    return sum(q.max_offset - q.min_offset for q in conn.describe_topic(topic).queues)


def test_a_dead_letter_topic_takes_no_sends_whatever_the_request(conn, unique):
    name = f"%DLQ%{unique('billing')}"
    reply = conn.send(message(name, "one"), message(name, "two"))
    assert [code_name(e.status.code) for e in reply.entries] == ["FORBIDDEN", "FORBIDDEN"]
    assert code_name(reply.status.code) == "FORBIDDEN"
    assert name not in topic_names(conn)


def test_an_existing_dead_letter_topic_takes_no_sends_either(conn, unique):
    name = f"%DLQ%{unique('billing')}"
    conn.create_topic(name)
    assert codes(conn, message(name, "one"), message(name, "two"), message(name, "three")) == ["FORBIDDEN"] * 3
    assert stored(conn, name) == 0


@pytest.mark.parametrize("bad", [
    pytest.param(lambda t: message(t, b""), id="empty-body"),
    pytest.param(lambda t: message(t, "x", tag="a|b"), id="bad-tag"),
    pytest.param(lambda t: message(t, "x", keys=(" ",)), id="blank-key"),
    pytest.param(lambda t: message(t, "x", properties={"": "v"}), id="empty-property-key"),
    pytest.param(lambda t: _typed(message(t, "x"), pb.FIFO), id="fifo-without-group"),
    pytest.param(lambda t: _typed(message(t, "x"), pb.DELAY), id="delay-without-time"),
])
def test_a_refused_send_creates_no_topic(conn, unique, bad):
    topic = unique("refused")
    assert codes(conn, bad(topic), bad(topic)) != ["OK", "OK"]
    assert topic not in topic_names(conn)


def _typed(msg: pb.Message, mtype: int) -> pb.Message:
    msg.system_properties.message_type = mtype
    return msg


def test_a_refused_send_back_to_a_retry_topic_creates_no_group(conn, unique):
    group = unique("retry-g")
    retry = f"%RETRY%{group}"
    empty = message(retry, b"")
    bad_count = message(retry, "x", properties={RECONSUME_TIMES: "many"})
    assert codes(conn, empty, bad_count) == ["MESSAGE_BODY_EMPTY", "ILLEGAL_MESSAGE_PROPERTY_KEY"]
    assert retry not in topic_names(conn)
    assert group not in group_names(conn)


def test_a_good_send_back_creates_the_group_and_its_retry_topic(conn, unique):
    group = unique("retry-ok")
    retry = f"%RETRY%{group}"
    assert codes(conn, message(retry, "x", properties={RECONSUME_TIMES: "1"})) == ["OK"]
    assert retry in topic_names(conn) and group in group_names(conn)
    assert len(conn.describe_topic(retry).queues) == 1


def test_a_refused_stage_creates_no_topic(conn, unique):
    topic = unique("refused-stage")
    reply = conn.stage(message(topic, "fine"), message(f"%DLQ%{topic}", "dead"))
    assert code_name(reply.status.code) == "FORBIDDEN", reply.status
    assert topic not in topic_names(conn) and f"%DLQ%{topic}" not in topic_names(conn)


@pytest.mark.parametrize("bad, code", [
    pytest.param(lambda t: message(t, "x", tag="t" * 70_000), "ILLEGAL_MESSAGE_TAG", id="tag"),
    pytest.param(lambda t: message(t, "x", keys=("k" * 1000,) * 20), "MESSAGE_PROPERTIES_TOO_LARGE", id="keys"),
])
def test_a_stage_keeps_the_send_limits(conn, unique, bad, code):
    """Stage (the Spark sink) refuses what SendMessage refuses (issue 20 §1.1-1.2): nothing of the chunk is staged."""
    topic = unique("limit-stage")
    reply = conn.stage(message(topic, "fine"), bad(topic))
    assert code_name(reply.status.code) == code, reply.status
    assert topic not in topic_names(conn)
