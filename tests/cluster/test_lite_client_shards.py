"""rockmq's own client and CLI with lite topics under `rockmq serve --workers 2` (issue 29 §4): lite
topics live on different shards, yet a simple consumer subscribed at the access point receives
exactly its own from both, `topic describe --lite` lists all of them, and `message tail
--lite-topic` reads one on whichever shard holds it."""

from __future__ import annotations

import asyncio
import time

from rockmq.client import AsyncProducer, AsyncSimpleConsumer, Message, ReceivedMessage
from rockmq.protocol.conventions import lite_owner

NAMES = [f"session-{i}" for i in range(8)]


def test_lite_topics_across_shards_through_the_client_and_the_cli(two_shards, unique):
    topic, group = unique("agents"), unique("agents-g")
    created = two_shards.cli("topic", "create", topic, "--types", "LITE", "--queues", "2")
    assert created.returncode == 0, created.stderr
    owners = list(two_shards.shards(topic))
    assert len({lite_owner(n, owners) for n in NAMES}) == 2, "the names spread over both shards"
    wanted = NAMES[::2]

    async def scenario() -> list[ReceivedMessage]:
        async with AsyncSimpleConsumer(two_shards.endpoint, group, {topic: "*"}, await_s=1) as consumer:
            for name in wanted:
                await consumer.subscribe_lite(name)
            async with AsyncProducer(two_shards.endpoint) as producer:
                for i in range(2):
                    for name in NAMES:
                        await producer.send(Message(topic, f"{name}/{i}".encode(), lite_topic=name))
            got: list[ReceivedMessage] = []
            deadline = time.monotonic() + 15
            while len(got) < 2 * len(wanted) and time.monotonic() < deadline:
                batch = await consumer.receive(32, invisible_s=30)
                if batch:
                    assert await consumer.ack_many(batch) == []
                got += batch
            return got

    got = asyncio.run(scenario())
    assert sorted(m.lite_topic or "" for m in got) == sorted(wanted * 2)
    for name in wanted:
        assert [m.body for m in got if m.lite_topic == name] == [f"{name}/{i}".encode() for i in range(2)]
    assert {m.broker for m in got} == set(owners)

    listed = two_shards.cli("topic", "describe", topic, "--lite")
    assert listed.returncode == 0, listed.stderr
    rows = [ln.split() for ln in listed.stdout.splitlines()[1:] if ln.strip()]
    assert [r[0] for r in rows] == sorted(NAMES) and {r[1] for r in rows} == set(owners)
    for owner in owners:  # a lite topic of each shard
        name = next(n for n in NAMES if lite_owner(n, owners) == owner)
        tail = two_shards.cli("message", "tail", topic, "--lite-topic", name, "--group", unique("tail-g"), "--count", "2",
                          "--timeout", "5")
        assert tail.returncode == 0, tail.stderr
        assert [ln.split()[-1] for ln in tail.stdout.splitlines() if ln.strip()] == [f"{name}/0", f"{name}/1"]
