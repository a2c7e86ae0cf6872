"""The official Python client (5.1.2) leaves SystemProperties.queue_id at 0 and sends no
queue-choice header: the broker places its messages as Apache RocketMQ's proxy does, spread over
the topic's queues, not all in queue 0 (docs/protocol.md)."""

from __future__ import annotations

from mqwire import Conn
from official_client import producer, send

from rockmq.protocol import pb


def test_official_producer_messages_spread_over_the_queues(broker, unique):
    topic = unique("py-spread")
    conn = Conn(broker.endpoint)
    try:
        conn.create_topic(topic, queues=4)
        with producer(broker.endpoint, topic) as p:
            for i in range(8):
                send(p, topic, f"m{i}".encode())
        assert [conn.query_offset(topic, q, pb.END).offset for q in range(4)] == [2, 2, 2, 2]
    finally:
        conn.close()
