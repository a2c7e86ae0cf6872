"""Priority messages (docs/priority.md) with the unmodified official Python client 5.1.2: a backlog
of low- and high-priority messages is received high first, and an out-of-range priority is refused
with the range the topic takes."""

from __future__ import annotations

import pytest
from official_client import make_message, producer, receive_until, simple_consumer
from rocketmq.v5.exception import BadRequestException

PRIORITY = 6  # Message.message_type code as the client reports it
LOW, HIGH = 0, 9


def _create_priority_topic(broker, name: str) -> None:
    r = broker.cli("topic", "create", name, "--types", "PRIORITY")
    assert r.returncode == 0, f"rockmq topic create {name} failed:\n{r.stdout}\n{r.stderr}"


def _send(p, topic: str, body: bytes, priority: int) -> str:
    m = make_message(topic, body)
    m.priority = priority
    assert p.send(m).message_id == m.message_id
    return m.message_id


def test_backlog_of_500_low_and_50_high_goes_out_high_first(broker, unique):
    topic, group = unique("py-prio"), unique("py-prio-g")
    _create_priority_topic(broker, topic)
    with producer(broker.endpoint, topic) as p:
        sent = {_send(p, topic, f"{'high' if i % 11 == 10 else 'low'}-{i}".encode(), HIGH if i % 11 == 10 else LOW): i
                for i in range(550)}  # the 50 high ones scattered through the 500 low ones
    with simple_consumer(broker.endpoint, group, {topic: "*"}) as c:
        got = receive_until(c, lambda g: len(g) >= 550, timeout=30)
        for m in got:
            c.ack(m)
    assert sorted(m.message_id for m in got) == sorted(sent), "not every message received exactly once"
    levels = [m.priority for m in got]
    assert levels == [HIGH] * 50 + [LOW] * 500, f"a low one came before a high one: {levels[:60]}"
    assert all(m.message_type == PRIORITY for m in got)
    lows = [sent[m.message_id] for m in got if m.priority == LOW]
    assert lows == sorted(lows), "the low ones left their send order"


def test_out_of_range_priority_is_refused(broker, unique):
    topic = unique("py-prio-range")
    _create_priority_topic(broker, topic)
    with producer(broker.endpoint, topic) as p:
        with pytest.raises(BadRequestException) as refused:
            _send(p, topic, b"too high", 12)
        assert "priority must be 0..9, not 12" in str(refused.value)
        _send(p, topic, b"fine", 9)
