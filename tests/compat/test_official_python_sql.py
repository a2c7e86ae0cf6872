"""SQL92 subscriptions with the official Python client: the broker filters on user properties
and the tag; a bad expression fails the client's receive with ILLEGAL_FILTER_EXPRESSION."""

from __future__ import annotations

import pytest
from official_client import producer, receive_for, receive_until, send
from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer
from rocketmq.grpc_protocol import FilterType

ILLEGAL_FILTER_EXPRESSION = 40010


def _sql_consumer(endpoint: str, group: str, topic: str, sql: str) -> SimpleConsumer:
    c = SimpleConsumer(ClientConfiguration(endpoint, Credentials(), request_timeout=3), group,
                       {topic: FilterExpression(sql, FilterType.SQL)}, await_duration=1)
    c.startup()
    return c


def test_sql_subscription_receives_exactly_the_matches(broker, unique):
    topic, group = unique("py-sql"), unique("py-sql-g")
    with producer(broker.endpoint, topic) as p:
        sent = {
            "big-eu": send(p, topic, b"big-eu", tag="order", properties={"region": "eu", "amount": "250"}),
            "small-eu": send(p, topic, b"small-eu", tag="order", properties={"region": "eu", "amount": "5"}),
            "big-us": send(p, topic, b"big-us", tag="order", properties={"region": "us", "amount": "900"}),
            "refund-eu": send(p, topic, b"refund-eu", tag="refund", properties={"region": "eu", "amount": "300"}),
            "no-props": send(p, topic, b"no-props", tag="order"),
        }
    c = _sql_consumer(broker.endpoint, group, topic, "TAGS = 'order' AND region = 'eu' AND amount > 100")
    try:
        got = receive_until(c, lambda g: len(g) >= 1, timeout=10)
        for m in got:
            c.ack(m)
        got += receive_for(c, 1.5)
        assert [m.message_id for m in got] == [sent["big-eu"].message_id], sorted(m.body.decode() for m in got)
        assert got[0].properties["amount"] == "250"
    finally:
        c.shutdown()


def test_bad_sql_subscription_fails_receive(broker, unique):
    topic = unique("py-sql-bad")
    with producer(broker.endpoint, topic) as p:
        send(p, topic, b"x", properties={"a": "1"})
    c = _sql_consumer(broker.endpoint, unique("py-sql-bad-g"), topic, "a = = 1")
    try:
        with pytest.raises(Exception) as e:
            c.receive(16, 5)
        assert str(ILLEGAL_FILTER_EXPRESSION) in str(e.value) or "filter" in str(e.value).lower(), e.value
    finally:
        c.shutdown()
