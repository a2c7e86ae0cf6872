"""ack_many of messages that all outlived their invisible time: the broker refuses each alike and
puts that status on top; the client still returns every one with why (they come again), as it does
when only some are refused, instead of raising."""

from __future__ import annotations

import asyncio

from rockmq.client import AsyncProducer, AsyncSimpleConsumer, Message
from rockmq.client.consumer import Filter


def test_ack_many_of_messages_all_expired_returns_them(broker, conn, unique):
    topic, group = unique("ack-refused"), unique("g")
    conn.create_topic(topic, queues=1)

    async def scenario() -> None:
        async with AsyncProducer(broker.endpoint) as p:
            await p.send_batch([Message(topic, b"a"), Message(topic, b"b")])
        async with AsyncSimpleConsumer(broker.endpoint, group, {topic: Filter.tag("*")}) as c:
            got = await c.receive(2, invisible_s=0.2)
            assert len(got) == 2
            await asyncio.sleep(0.4)
            refused = await c.ack_many(got)
            assert [(m, e.status_name) for m, e in refused] == [(m, "INVALID_RECEIPT_HANDLE") for m in got]
            again = await c.receive(2, invisible_s=30)
            assert sorted(m.body for m in again) == [b"a", b"b"] and await c.ack_many(again) == []

    asyncio.run(scenario())
