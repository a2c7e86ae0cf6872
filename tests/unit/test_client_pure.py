"""rockmq.client's pure parts: the error table, fault avoidance, the wire form of messages, selectors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rockmq.client import Message, allocation, by_hash, by_index
from rockmq.client.errors import BrokerRefused, IllegalArgument, NotFound, Throttled, from_status
from rockmq.client.fault import FaultAvoidance
from rockmq.client.queues import Queue
from rockmq.client.selectors import RoundRobin, by_environment
from rockmq.protocol import pb


@pytest.mark.parametrize("code,kind,retriable", [
    (pb.TOPIC_NOT_FOUND, NotFound, False), (pb.ILLEGAL_FILTER_EXPRESSION, IllegalArgument, False),
    (pb.TOO_MANY_REQUESTS, Throttled, True), (pb.SLAVE_PERSISTENCE_TIMEOUT, Throttled, True),
    (pb.INTERNAL_ERROR, Throttled, True), (pb.NOT_IMPLEMENTED, BrokerRefused, True), (pb.FORBIDDEN, IllegalArgument, False),
])
def test_status_table(code, kind, retriable):
    e = from_status(code, "why")
    assert type(e) is kind and e.retriable is retriable and e.code == code and "why" in str(e)


def test_fault_avoidance_pauses_slow_and_failed_brokers():
    now = [0.0]
    f = FaultAvoidance(lambda: now[0])
    f.record("fast", 40)
    f.record("slow", 600)  # >= 550 ms: 2 s
    f.record("dead", 0, failed=True)  # the worst: 30 s
    assert f.available("fast") and not f.available("slow") and not f.available("dead")
    now[0] = 2000
    assert f.available("slow") and not f.available("dead")
    now[0] = 30_000
    assert f.available("dead")


def test_message_wire_form_keeps_milliseconds():
    m = Message("t", b"x", delay=timedelta(milliseconds=1500), tag="a", keys=["k"], properties={"p": "1"})
    sp = m.to_pb("ID", "host", now_ms=1_700_000_000_123).system_properties
    assert sp.delivery_timestamp.seconds == 1_700_000_001 and sp.delivery_timestamp.nanos == 623_000_000
    assert sp.message_type == pb.DELAY and sp.tag == "a" and list(sp.keys) == ["k"]
    at = Message("t", b"x", deliver_at=datetime(2026, 1, 1, 0, 0, 0, 250_000, tzinfo=UTC)).to_pb("ID", "h", 0)
    assert at.system_properties.delivery_timestamp.ToMilliseconds() % 1000 == 250
    assert Message("t", b"x", message_group="g").to_pb("ID", "h", 0).system_properties.message_type == pb.FIFO
    with pytest.raises(ValueError):
        Message("t", b"x", message_group="g", delay=5).to_pb("ID", "h", 0)
    with pytest.raises(ValueError):
        Message("t", b"x", delay=5, deliver_at=datetime.now(UTC)).to_pb("ID", "h", 0)


def test_selectors():
    queues = [Queue("t", b, f"{b}:1", q) for q in range(2) for b in ("b1", "b2")]
    rr = RoundRobin()
    picked = [rr(queues, Message("t", b""), None) for _ in range(4)]
    assert [q.broker for q in picked] == ["b1", "b2", "b1", "b2"]
    m = Message("t", b"", message_group="order-7")
    assert len({by_hash(queues, m, None) for _ in range(5)}) == 1
    assert by_index(queues, m, 5) == Queue("t", "b1", "b1:1", 1), "indexes the (broker, queue id) order"
    env2 = by_environment(2, queues_per_environment=2)
    sent_to = {env2(queues, Message("t", b""), None) for _ in range(6)}
    assert sent_to == set(allocation.by_environment(2, 2)("me", ["me"], list(reversed(queues))))
    assert sent_to == {Queue("t", "b2", "b2:1", 0), Queue("t", "b2", "b2:1", 1)}
