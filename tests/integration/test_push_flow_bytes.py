"""max_cached_bytes is an "at most" against a real broker: with 32 KiB allowed and 8 KiB bodies a
queue holds 4 messages (before, a whole 32-message pull: 256 KiB); with mixed sizes it never passes
the limit either; a message larger than the whole limit still gets through, alone; and every
message is handled once."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest
from mqwire import Conn
from waiting import async_wait_for

from rockmq.client import AsyncProducer, Message
from rockmq.client.push import AsyncPushConsumer

LIMIT = 32 * 1024
FAST = dict(heartbeat_s=0.3, rebalance_s=2.0, commit_interval_s=0.3, poll_s=1.0, shutdown_timeout_s=2.0)


def _consume(endpoint: str, topic: str, group: str, bodies: list[bytes]) -> tuple[list[tuple[int, int]], Counter[bytes]]:
    """Send `bodies`, consume them with a handler that waits for a gate, then slowly; -> (the
    queue's (cached, cached_bytes) every few ms, how often each body was handled)."""
    gate = asyncio.Event()
    handled: Counter[bytes] = Counter()

    async def handler(m) -> None:
        await gate.wait()
        await asyncio.sleep(0.002)
        handled[m.body] += 1

    async def scenario() -> list[tuple[int, int]]:
        async with AsyncProducer(endpoint) as p:
            for body in bodies:
                await p.send(Message(topic, body))
        seen: list[tuple[int, int]] = []
        async with AsyncPushConsumer(endpoint, group, {topic: "*"}, handler, max_cached_bytes=LIMIT, **FAST) as c:
            def sample() -> bool:
                seen.extend((s.cached, s.cached_bytes) for q, s in c.stats().items() if q.topic == topic)
                return sum(handled.values()) >= len(bodies)

            for _ in range(300):  # 1.5 s held at the gate: the cache is as full as it gets
                sample()
                await asyncio.sleep(0.005)
            assert max(seen)[0] > 0, "nothing was pulled"
            gate.set()
            await async_wait_for(sample, 30, 0.002, what="every message handled")
        return seen

    return asyncio.run(scenario()), handled


def test_a_queue_caches_at_most_max_cached_bytes(broker, unique, conn: Conn):
    topic = unique("flow-bytes")
    conn.create_topic(topic, queues=1)
    bodies = [b"%04d" % i + b"x" * (8 * 1024 - 4) for i in range(64)]
    seen, handled = _consume(broker.endpoint, topic, unique("flow-bytes-g"), bodies)
    peak = max(cached_bytes for _, cached_bytes in seen)
    assert peak <= LIMIT, f"one queue cached {peak // 1024} KiB with a {LIMIT // 1024} KiB limit"
    assert peak == LIMIT, "the limit is used, 4 messages of 8 KiB"
    assert handled == Counter(bodies)


def test_mixed_sizes_and_a_message_larger_than_the_limit(broker, unique, conn: Conn):
    topic = unique("flow-mixed")
    conn.create_topic(topic, queues=1)
    rng = random.Random(7)
    bodies = [b"%04d" % i + b"y" * rng.randint(100, 12 * 1024) for i in range(60)]
    bodies.insert(30, b"big!" + b"z" * (40 * 1024))
    seen, handled = _consume(broker.endpoint, topic, unique("flow-mixed-g"), bodies)
    assert all(cached_bytes <= LIMIT or cached == 1 for cached, cached_bytes in seen), "past the limit"
    assert (1, 40 * 1024 + 4) in seen, "the large message came, alone"
    assert handled == Counter(bodies)


def test_a_pull_takes_a_byte_budget(broker, unique, conn: Conn):
    """BatchMessaging.Pull's max_bytes: no more serialized bytes than the budget, but one message
    even if larger; the next pull starts after what was sent; a negative budget is refused."""
    from rockmq.client import AsyncPullConsumer
    from rockmq.client.errors import IllegalArgument

    topic = unique("flow-budget")
    conn.create_topic(topic, queues=1)

    async def scenario() -> None:
        async with AsyncProducer(broker.endpoint) as p:
            for i in range(6):
                await p.send(Message(topic, b"%d" % i + b"x" * (8 * 1024 - 1)))
        async with AsyncPullConsumer(broker.endpoint, unique("flow-budget-g")) as c:
            [q] = await c.queues(topic)
            two = await c.pull(q, 0, max_bytes=20 * 1024)
            assert [m.offset for m in two.messages] == [0, 1] and two.next_offset == 2
            one = await c.pull(q, 2, max_bytes=1)
            assert [m.offset for m in one.messages] == [2] and one.next_offset == 3
            rest = await c.pull(q, 3)
            assert [m.offset for m in rest.messages] == [3, 4, 5]
            with pytest.raises(IllegalArgument, match="max_bytes"):
                await c.pull(q, 0, max_bytes=-1)

    asyncio.run(scenario())
