"""Lanes with the official Python client: it cannot send rockmq's lane header, so it joins lane
`dev1` of a group with the SQL92 filter `lane = 'dev1'` (docs/client.md "Environment lanes"); a
rockmq base consumer of the same group then gets none of dev1's messages, and it gets no base one."""

from __future__ import annotations

from official_client import producer, receive_for, receive_until, send
from rocketmq import ClientConfiguration, Credentials, FilterExpression
from rocketmq import SimpleConsumer as OfficialSimpleConsumer
from rocketmq.grpc_protocol import FilterType

from rockmq.client import SimpleConsumer


def test_an_official_consumer_joins_a_lane_with_its_sql_filter(broker, unique):
    topic, group = unique("py-lane"), unique("py-lane-g")
    dev1 = OfficialSimpleConsumer(ClientConfiguration(broker.endpoint, Credentials(), request_timeout=3), group,
                                  {topic: FilterExpression("lane = 'dev1'", FilterType.SQL)}, await_duration=1)
    dev1.startup()
    try:
        with producer(broker.endpoint, topic) as p:
            assert receive_for(dev1, 0.5) == []  # a live member of lane dev1
            for i in range(3):
                send(p, topic, f"dev1-{i}".encode(), properties={"lane": "dev1"})
                send(p, topic, f"base-{i}".encode())
        with SimpleConsumer(broker.endpoint, group, {topic: "*"}, await_s=1.0) as base:
            got = []
            while batch := base.receive(32):
                got += [m.body.decode() for m in batch]
                for m in batch:
                    base.ack(m)
        assert sorted(got) == ["base-0", "base-1", "base-2"]
        mine = receive_until(dev1, lambda g: len(g) >= 3, timeout=10)
        for m in mine:
            dev1.ack(m)
        mine += receive_for(dev1, 1.5)
        assert sorted(m.body.decode() for m in mine) == ["dev1-0", "dev1-1", "dev1-2"]
    finally:
        dev1.shutdown()
