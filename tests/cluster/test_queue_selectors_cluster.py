"""Queue selectors across brokers (issue 17 §1): queue ids are per broker, so the id a producer
names is read as the id on the broker it sends to; one that broker does not have is refused even
when another broker has it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from mqwire import Conn

from rockmq.client import AsyncProducer, Message, Queue, by_index
from rockmq.client.errors import BrokerRefused
from rockmq.protocol import pb


def _stored(cluster, topic: str) -> dict[tuple[str, int], int]:
    """Messages per (broker, queue id), for the queues holding any."""
    out: dict[tuple[str, int], int] = {}
    for name, b in cluster.brokers.items():
        conn = Conn(b.endpoint)
        try:
            for q in conn.describe_topic(topic, local=True).queues:
                if n := conn.query_offset(topic, q.queue_id, pb.END).offset:
                    out[(name, q.queue_id)] = n
        finally:
            conn.close()
    return out


def _send(endpoint: str, topic: str, n: int, selector: Any, arg: Any = None) -> None:
    async def go() -> None:
        async with AsyncProducer(endpoint, selector=selector) as p:
            for i in range(n):
                await p.send(Message(topic, f"m{i}".encode()), arg=arg)
    asyncio.run(go())


def test_the_chosen_queue_is_that_brokers_queue(cluster):
    b1 = cluster.brokers["b1"]
    b1.cli("topic", "create", "sel", "--queues", "5", check=True)  # b1: 0, 1; b2: 0, 1; b3: 0
    _send(b1.endpoint, "sel", 4, by_index, arg=3)  # sorted: b1:0 b1:1 b2:0 b2:1 b3:0
    assert _stored(cluster, "sel") == {("b2", 1): 4}

    def on_b3(queues: Sequence[Queue], message: Message, arg: Any) -> Queue:
        return next(q for q in queues if q.broker == "b3")

    _send(b1.endpoint, "sel", 3, on_b3)
    assert _stored(cluster, "sel") == {("b2", 1): 4, ("b3", 0): 3}

    def b3_queue_1(queues: Sequence[Queue], message: Message, arg: Any) -> Queue:
        b3 = on_b3(queues, message, arg)
        return Queue(b3.topic, b3.broker, b3.endpoint, 1)  # b1 and b2 have a queue 1, b3 has not

    with pytest.raises(BrokerRefused) as refused:
        _send(b1.endpoint, "sel", 1, b3_queue_1)
    assert refused.value.code == pb.BAD_REQUEST and "(it has 1: 0-0)" in str(refused.value)
    assert _stored(cluster, "sel") == {("b2", 1): 4, ("b3", 0): 3}
