"""rockmq's AsyncPushConsumer against a real broker: rebalance as members come and go, failed
messages through the retry topic to the DLQ, broadcast, flow control, orderly, POP mode, lanes."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from mqwire import Conn
from waiting import async_wait_for

from rockmq.client import AsyncProducer, Message
from rockmq.client.push import AsyncPushConsumer

UNTIL_S = 20.0
FAST = dict(heartbeat_s=0.3, rebalance_s=2.0, commit_interval_s=0.3, poll_s=1.0, shutdown_timeout_s=2.0)


def _shares(consumers: list[AsyncPushConsumer], topic: str) -> list[int]:
    return sorted((len([q for q in c.assignment if q.topic == topic]) for c in consumers), reverse=True)


async def _send(endpoint: str, topic: str, n: int, start: int = 0, lane: str | None = None, **fields) -> list[str]:
    async with AsyncProducer(endpoint, lane=lane) as p:
        ids = []
        for i in range(start, start + n, 50):
            receipts = await p.send_batch([Message(topic, f"m{j}".encode(), **fields) for j in range(i, min(i + 50, start + n))])
            ids += [r.message_id for r in receipts]
        return ids


def test_members_split_queues_and_rebalance_as_they_join_and_leave(broker, unique, conn: Conn):
    topic, group = unique("push-rb"), unique("push-rb-g")
    conn.create_topic(topic, queues=8)
    seen: Counter[str] = Counter()

    async def handler(m):
        seen[m.message_id] += 1

    async def scenario():
        consumers = [AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, handler, **FAST) for _ in range(3)]
        for c in consumers:
            await c.start()
        await async_wait_for(lambda: _shares(consumers, topic) == [3, 3, 2], UNTIL_S, what="a 3/3/2 split")
        sent = await _send(broker.endpoint, topic, 300)
        fourth = AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, handler, **FAST)
        await fourth.start()
        consumers.append(fourth)
        await async_wait_for(lambda: _shares(consumers, topic) == [2, 2, 2, 2], UNTIL_S, what="a 2/2/2/2 split")
        sent += await _send(broker.endpoint, topic, 300, start=300)
        leaving = consumers.pop(0)
        await leaving.close()
        await async_wait_for(lambda: _shares(consumers, topic) == [3, 3, 2], UNTIL_S, what="3/3/2 after one left")
        sent += await _send(broker.endpoint, topic, 300, start=600)
        await async_wait_for(lambda: set(sent) <= set(seen), UNTIL_S, what="every message processed")
        all_queues = {q for c in consumers for q in c.assignment if q.topic == topic}
        assert len(all_queues) == 8
        for c in consumers:
            await c.close()
        return sent

    sent = asyncio.run(scenario())
    assert set(seen) == set(sent)
    # At least once: a handover may repeat a few messages past the last commit, never lose one.
    assert sum(seen.values()) - len(sent) < 60


def test_committed_offsets_let_the_next_consumer_continue(broker, unique, conn: Conn):
    topic, group = unique("push-commit"), unique("push-commit-g")
    conn.create_topic(topic, queues=2)
    first: list[str] = []
    second: list[str] = []

    async def scenario():
        sent = await _send(broker.endpoint, topic, 100)
        async with AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, lambda m: first.append(m.message_id), **FAST):
            await async_wait_for(lambda: len(first) == 100, UNTIL_S, what="the first consumer's 100 messages")
        sent += await _send(broker.endpoint, topic, 50, start=100)
        async with AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, lambda m: second.append(m.message_id), **FAST):
            await async_wait_for(lambda: len(second) >= 50, UNTIL_S, what="the next 50")
            await asyncio.sleep(0.5)
        return sent

    sent = asyncio.run(scenario())
    assert sorted(first) == sorted(sent[:100])
    assert sorted(second) == sorted(sent[100:]), "the second consumer re-read or skipped messages"


def test_failed_messages_come_back_with_backoff_then_go_to_the_dlq(broker, unique, conn: Conn):
    topic, group = unique("push-retry"), unique("push-retry-g")  # the session broker allows 3 attempts
    conn.create_topic(topic, queues=2)
    attempts: dict[str, list[tuple[int, float]]] = {}

    async def handler(m):
        attempts.setdefault(m.body.decode(), []).append((m.delivery_attempt, time.monotonic()))
        assert m.topic == topic and "RETRY_TOPIC" not in m.properties
        if m.body == b"poison" or (m.body == b"flaky" and m.delivery_attempt == 1):
            raise RuntimeError("boom")

    async def scenario():
        async with AsyncProducer(broker.endpoint) as p:
            poison = await p.send(Message(topic, b"poison", tag="t"))
            await p.send(Message(topic, b"flaky"))
        async with AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, handler, retry_backoff_s=(0.3, 0.6),
                                     **FAST):
            await async_wait_for(lambda: len(attempts.get("poison", ())) == 3 and len(attempts.get("flaky", ())) == 2,
                                 UNTIL_S, what=f"three deliveries of the poison message, two of the flaky one: {attempts}")
            await asyncio.sleep(1.5)
        return poison

    poison = asyncio.run(scenario())
    assert [a for a, _ in attempts["flaky"]] == [1, 2]
    assert [a for a, _ in attempts["poison"]] == [1, 2, 3], "delivered more often than the group allows"
    gaps = [b - a for (_, a), (_, b) in zip(attempts["poison"], attempts["poison"][1:], strict=False)]
    assert gaps[0] >= 0.25 and gaps[1] >= 0.5, gaps
    dead = conn.pull_all(f"%DLQ%{group}", 0)
    assert [m.body for m in dead] == [b"poison"]
    assert dead[0].user_properties["ORIGIN_MESSAGE_ID"] == poison.message_id


def test_broadcast_members_each_see_every_message(broker, unique, conn: Conn, tmp_path):
    topic, group = unique("push-bc"), unique("push-bc-g")
    conn.create_topic(topic, queues=4)
    seen: dict[int, list[str]] = {0: [], 1: [], 2: []}

    def consumer(i: int) -> AsyncPushConsumer:
        return AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, lambda m: seen[i].append(m.message_id),
                                 mode="broadcast", offset_file=str(tmp_path / f"offsets-{i}.json"), **FAST)

    async def scenario():
        sent = await _send(broker.endpoint, topic, 120)
        async with consumer(0), consumer(1):
            await async_wait_for(lambda: len(seen[0]) == len(seen[1]) == 120, UNTIL_S, what="both members see all 120")
        sent += await _send(broker.endpoint, topic, 30, start=120)
        async with consumer(0):  # restarts from its local offsets
            await async_wait_for(lambda: len(seen[0]) == 150, UNTIL_S, what="the 30 new ones")
            await asyncio.sleep(0.5)
        return sent

    sent = asyncio.run(scenario())
    assert sorted(seen[0]) == sorted(sent) and sorted(seen[1]) == sorted(sent[:120])


def test_flow_control_bounds_what_a_slow_consumer_holds(broker, unique, conn: Conn):
    topic, group = unique("push-flow"), unique("push-flow-g")
    conn.create_topic(topic, queues=1)
    done: list[str] = []
    peak = 0

    async def slow(m):
        await asyncio.sleep(0.01)
        done.append(m.message_id)

    async def scenario():
        nonlocal peak
        await _send(broker.endpoint, topic, 2000)
        async with AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, slow, max_cached_messages=50, concurrency=4,
                                     **FAST) as c:
            while len(done) < 300:
                peak = max([peak] + [s.cached for s in c.stats().values()])
                await asyncio.sleep(0.005)

    asyncio.run(scenario())
    assert 0 < peak <= 50


def test_orderly_consumption_keeps_queue_order_through_a_failure(broker, unique, conn: Conn):
    topic, group = unique("push-order"), unique("push-order-g")
    conn.create_topic(topic, queues=1)
    order: list[int] = []
    failed = set()

    async def handler(m):
        n = int(m.body[1:])
        if n == 5 and n not in failed:
            failed.add(n)
            raise RuntimeError("once")
        order.append(n)

    async def scenario():
        await _send(broker.endpoint, topic, 40)
        async with AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, handler, orderly=True, retry_backoff_s=(0.1,),
                                     **FAST):
            await async_wait_for(lambda: len(order) == 40, UNTIL_S, what="all 40 in order")

    asyncio.run(scenario())
    assert order == list(range(40))


def test_pop_mode_acks_and_retries(broker, unique, conn: Conn):
    topic, group = unique("push-pop"), unique("push-pop-g")
    conn.create_topic(topic, queues=4)
    calls: Counter[str] = Counter()

    def handler(m):  # a plain function: runs on the consumer's threads
        calls[m.body.decode()] += 1
        if m.body == b"m7" and m.delivery_attempt == 1:
            raise RuntimeError("once")

    async def scenario():
        await _send(broker.endpoint, topic, 50)
        async with AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, handler, mode="pop", retry_backoff_s=(0.3,),
                                     **FAST):
            await async_wait_for(lambda: len(calls) == 50 and calls["m7"] == 2, UNTIL_S, what="50 messages, m7 twice")
            await asyncio.sleep(1.0)

    asyncio.run(scenario())
    assert calls["m7"] == 2 and all(v == 1 for k, v in calls.items() if k != "m7")


def test_pop_mode_with_slow_handlers_delivers_each_message_once(broker, unique, conn: Conn):
    """A receive takes `batch_size` (32) messages, two receive loops run, and only `concurrency`
    (4) handlers: 64 messages at 0.25 s each keep the last one waiting ~4 s, twice the invisible
    time, and a batch is acked only once its last handler is done. What waits (for a handler, or
    for its batch's ack) must not come back: each message is handled once and none is lost."""
    topic, group = unique("push-pop-slow"), unique("push-pop-slow-g")
    conn.create_topic(topic, queues=2)
    calls: Counter[str] = Counter()

    async def handler(m):
        calls[m.body.decode()] += 1
        await asyncio.sleep(0.25)

    async def scenario():
        await _send(broker.endpoint, topic, 64)
        async with AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, handler, mode="pop", concurrency=4,
                                     invisible_s=2.0, **FAST):
            await async_wait_for(lambda: len(calls) == 64, UNTIL_S, what="all 64 messages")
            await asyncio.sleep(2.5)  # past an invisible time: anything not acked comes again

    asyncio.run(scenario())
    assert set(calls) == {f"m{i}" for i in range(64)}
    assert {k: v for k, v in calls.items() if v > 1} == {}, "delivered more than once"


def test_lanes_stay_isolated_and_fall_back_to_the_base_lane(broker, unique, conn: Conn):
    topic, group = unique("push-lane"), unique("push-lane-g")
    conn.create_topic(topic, queues=2)
    got: dict[str, list[str]] = {"base": [], "dev1": [], "dev2": []}

    def consumer(lane: str | None) -> AsyncPushConsumer:
        return AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, lambda m: got[lane or "base"].append(m.body.decode()),
                                 lane=lane, **FAST)

    async def scenario():
        async with consumer(None) as base, consumer("dev1"), consumer("dev2"):
            await async_wait_for(lambda: base._membership.live_lanes == {"dev1", "dev2"}, UNTIL_S,
                                 what="the base consumer sees both lanes")
            await asyncio.sleep(FAST["poll_s"] + 0.2)  # a long poll begun before they joined uses the old filter
            for lane in ("dev1", "dev2", None):
                await _send(broker.endpoint, topic, 10, lane=lane)
            await async_wait_for(lambda: all(len(v) == 10 for v in got.values()), UNTIL_S, what="10 messages in each lane")
            await asyncio.sleep(0.5)
        assert all(len(v) == 10 for v in got.values()), {k: len(v) for k, v in got.items()}
        async with consumer(None) as base:  # dev2 has nobody now: its messages fall back to the base lane
            await async_wait_for(lambda: not base._membership.live_lanes, UNTIL_S, what="no live lanes")
            await _send(broker.endpoint, topic, 5, lane="dev2")
            await async_wait_for(lambda: len(got["base"]) == 15, UNTIL_S, what="dev2's messages at the base consumer")

    asyncio.run(scenario())
