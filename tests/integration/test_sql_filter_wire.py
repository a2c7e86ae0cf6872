"""SQL92 filters on the wire: POP receive and pull filter on the broker, bad expressions are
refused with ILLEGAL_FILTER_EXPRESSION, and a filtered-out message counts as consumed."""

from __future__ import annotations

import pytest
from mqwire import message

from rockmq.protocol import pb

ORDERS = [
    ("o1", "a", {"region": "eu", "amount": "150"}),
    ("o2", "a", {"region": "us", "amount": "300"}),
    ("o3", "b", {"region": "eu", "amount": "20"}),
    ("o4", None, {"region": "eu", "amount": "abc"}),
    ("o5", "b", {"amount": "500"}),
]


@pytest.fixture
def orders(conn, unique):
    topic = unique("sql")
    conn.create_topic(topic, queues=1)
    conn.send_ok(*(message(topic, body, tag=tag, properties=props) for body, tag, props in ORDERS))
    return topic


@pytest.mark.parametrize("sql,bodies", [
    ("region = 'eu' AND amount > 100", ["o1"]),
    ("region = 'eu' OR amount >= 500", ["o1", "o3", "o4", "o5"]),
    ("region IS NULL", ["o5"]),
    ("TAGS = 'b'", ["o3", "o5"]),
    ("amount BETWEEN 100 AND 400", ["o1", "o2"]),
    ("region IN ('us', 'apac') OR TAGS IS NULL", ["o2", "o4"]),
    ("NOT (region = 'eu')", ["o2"]),
])
def test_receive_and_pull_filter_with_sql(conn, unique, orders, sql, bodies):
    group = unique("sql-g")
    got = conn.receive_n(group, orders, len(bodies), within=5, sql=sql)
    assert sorted(m.body.decode() for m in got) == bodies
    conn.ack(group, orders, *got)
    code, more = conn.receive(group, orders, sql=sql, poll_s=0)
    assert code == pb.MESSAGE_NOT_FOUND and not more, "a filtered-out message was delivered later"

    code, pulled, next_offset = conn.pull(unique("sql-pull"), orders, 0, 0, sql=sql)
    assert code in (pb.OK, pb.MESSAGE_NOT_FOUND)
    assert sorted(m.body.decode() for m in pulled) == bodies and next_offset == len(ORDERS)


@pytest.mark.parametrize("sql", ["region = ", "amount >> 5", "region = 'eu", "", "a IN ()", "AND b = 1"])
def test_bad_sql_is_refused_with_illegal_filter_expression(conn, unique, orders, sql):
    code, msgs = conn.receive(unique("sql-bad"), orders, sql=sql, poll_s=0)
    assert code == pb.ILLEGAL_FILTER_EXPRESSION and not msgs
    code, msgs, _ = conn.pull(unique("sql-bad"), orders, 0, 0, sql=sql)
    assert code == pb.ILLEGAL_FILTER_EXPRESSION and not msgs
