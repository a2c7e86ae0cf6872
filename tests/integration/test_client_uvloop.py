"""rockmq's client runs under uvloop (as under uvicorn): produce, push-consume and pull there."""

from __future__ import annotations

import asyncio

import uvloop
from waiting import async_wait_for

from rockmq.client import AsyncProducer, Message
from rockmq.client.pull import AsyncPullConsumer
from rockmq.client.push import AsyncPushConsumer


def test_producer_and_consumers_under_uvloop(broker, unique):
    topic, group = unique("uvloop"), unique("uvloop-g")
    got: list[str] = []

    async def scenario():
        assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
        async with AsyncProducer(broker.endpoint) as p:
            sent = [r.message_id for r in await p.send_batch([Message(topic, f"u{i}".encode()) for i in range(20)])]
        async with AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, lambda m: got.append(m.message_id),
                                     heartbeat_s=0.3, poll_s=1.0):
            await async_wait_for(lambda: len(got) >= 20, 10, what="20 messages pushed")
        async with AsyncPullConsumer(broker.endpoint, unique("uvloop-pull")) as puller:
            pulled = []
            for queue in await puller.queues(topic):
                start = await puller.offset_at(queue, "earliest")
                pulled += [m.message_id for m in (await puller.pull(queue, start, max_messages=64)).messages]
        return sent, pulled

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        sent, pulled = runner.run(scenario())
    assert sorted(got) == sorted(sent) == sorted(pulled)
