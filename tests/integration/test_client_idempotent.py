"""Idempotent consumption against a real broker: a message redelivered after it was processed but
not acked is skipped, not processed twice."""

from __future__ import annotations

import asyncio
import time

from rockmq.client import AsyncProducer, AsyncSimpleConsumer, Message, ReceivedMessage
from rockmq.client.idempotent import SKIPPED, Idempotent, RocksDBStore


async def _receive_one(consumer: AsyncSimpleConsumer, within: float = 10.0) -> ReceivedMessage:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        got = await consumer.receive(1, invisible_s=30)
        if got:
            return got[0]
    raise AssertionError(f"nothing received in {within} s")


def test_redelivery_after_processing_is_skipped(broker, unique, tmp_path):
    topic, group = unique("idem"), unique("idem-g")
    side_effects: list[bytes] = []

    async def scenario():
        store = RocksDBStore(tmp_path / "dedup")

        @Idempotent(store, namespace=group)
        async def handle(m: ReceivedMessage) -> str:
            side_effects.append(m.body)
            return "charged"

        async with AsyncProducer(broker.endpoint) as p:
            sent = await p.send(Message(topic, b"charge order 7"))
        async with AsyncSimpleConsumer(broker.endpoint, group, {topic: "*"}, await_s=1) as c:
            first = await _receive_one(c)
            assert first.message_id == sent.message_id
            assert await handle(first) == "charged"
            # The consumer "crashes" before its ack: the broker hands the message out again.
            await c.change_invisible_duration(first, 0)
            again = await _receive_one(c)
            assert again.message_id == sent.message_id and again.delivery_attempt > first.delivery_attempt
            assert await handle(again) is SKIPPED
            await c.ack(again)
            assert await c.receive(1) == []
        await store.close()

    asyncio.run(scenario())
    assert side_effects == [b"charge order 7"]
