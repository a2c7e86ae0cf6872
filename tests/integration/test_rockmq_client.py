"""rockmq's own client against a real broker: asyncio and sync, SQL subscriptions, delays at
millisecond precision with recall, FIFO order, and errors that say whether to retry."""

from __future__ import annotations

import asyncio
import time

import pytest

from rockmq.client import AsyncProducer, AsyncSimpleConsumer, Filter, Message, Producer, SimpleConsumer
from rockmq.client.errors import IllegalArgument


async def _drain(consumer: AsyncSimpleConsumer, want: int, within: float = 10.0) -> list:
    got: list = []
    deadline = time.monotonic() + within
    while len(got) < want and time.monotonic() < deadline:
        batch = await consumer.receive(32, invisible_s=30)
        for m in batch:
            await consumer.ack(m)
        got += batch
    return got


def test_async_round_trip_with_sql_subscription(broker, unique):
    topic, group = unique("rc-sql"), unique("rc-sql-g")

    async def scenario():
        async with AsyncProducer(broker.endpoint) as p:
            receipts = await p.send_batch([Message(topic, f"o{i}".encode(), tag="order",
                                                   properties={"region": "eu" if i % 2 else "us", "amount": str(i * 10)})
                                           for i in range(10)])
            assert len({r.message_id for r in receipts}) == 10 and all(r.broker for r in receipts)
        async with AsyncSimpleConsumer(broker.endpoint, group, {topic: Filter.sql92("region = 'eu' AND amount > 20")},
                                       await_s=1) as c:
            got = await _drain(c, 4)
            extra = await c.receive(32)
        assert sorted(m.body for m in got) == [b"o3", b"o5", b"o7", b"o9"]
        assert extra == []
        assert all(m.properties["region"] == "eu" and m.tag == "order" and m.delivery_attempt == 1 for m in got)

    asyncio.run(scenario())


def test_sync_wrapper_delay_precision_and_recall(broker, unique):
    topic, group = unique("rc-delay"), unique("rc-delay-g")
    with Producer(broker.endpoint) as p:
        sent_at = time.time()
        soon = p.send(Message(topic, b"soon", delay=700))
        later = p.send(Message(topic, b"later", delay=60_000))
        assert later.recall_handle and p.recall(topic, later.recall_handle) == later.message_id
    with SimpleConsumer(broker.endpoint, group, {topic: "*"}, await_s=2) as c:
        got = []
        while not got and time.time() - sent_at < 10:
            got = c.receive(8)
        assert [m.message_id for m in got] == [soon.message_id]
        assert time.time() - sent_at >= 0.69, "delivered before its delay"
        c.ack(got[0])


def test_fifo_order_and_clear_errors(broker, unique):
    topic, group = unique("rc-fifo"), unique("rc-fifo-g")

    async def scenario():
        async with AsyncProducer(broker.endpoint) as p:
            for i in range(12):
                await p.send(Message(topic, f"{i}".encode(), message_group=f"g{i % 3}"))
            with pytest.raises(IllegalArgument) as e:
                await p.send(Message(topic, b""))  # an empty body
            assert not e.value.retriable and e.value.status_name == "MESSAGE_BODY_EMPTY"
        async with AsyncSimpleConsumer(broker.endpoint, group, {topic: "*"}, await_s=1) as c:
            got = await _drain(c, 12)
            with pytest.raises(IllegalArgument):
                await AsyncSimpleConsumer(broker.endpoint, group, {"no such/topic": "*"}, await_s=0).receive()
            with pytest.raises(IllegalArgument) as stale:
                await c.ack(got[0])  # already acknowledged: its handle is stale
            assert stale.value.status_name == "INVALID_RECEIPT_HANDLE"
        per_group: dict[str, list[int]] = {}
        for m in got:
            per_group.setdefault(m.message_group, []).append(int(m.body))
        assert {g: sorted(v) for g, v in per_group.items()} == per_group, f"out of order: {per_group}"
        assert sum(len(v) for v in per_group.values()) == 12

    asyncio.run(scenario())


def test_sync_push_and_pull_consumers(broker, unique):
    import threading

    from rockmq.client import PullConsumer, PushConsumer

    topic, group = unique("rc-sync-push"), unique("rc-sync-push-g")
    with Producer(broker.endpoint) as p:
        sent = [r.message_id for r in p.send_batch([Message(topic, f"s{i}".encode()) for i in range(20)])]
    got: list[str] = []
    threads: set[str] = set()
    done = threading.Event()

    def handler(m):  # a plain function, on the consumer's worker threads
        got.append(m.message_id)
        threads.add(threading.current_thread().name)
        if len(got) == 20:
            done.set()

    with PushConsumer(broker.endpoint, group, {topic: "*"}, handler, heartbeat_s=0.3, poll_s=1.0) as c:
        assert done.wait(10), f"only {len(got)} of 20"
        assert len(c.assignment) == 8 + 1  # the topic's 8 queues and the group's retry queue
    assert sorted(got) == sorted(sent)
    assert all(name.startswith("rockmq-consume") for name in threads)
    with PullConsumer(broker.endpoint, group) as puller:
        queues = puller.queues(topic)
        assert sum(puller.committed(q) or 0 for q in queues) == 20, "the push consumer committed on close"
        q = queues[0]
        result = puller.pull(q, puller.offset_at(q, "earliest"), max_messages=100)
        assert result.next_offset == puller.offset_at(q, "latest")
        assert {m.message_id for m in result.messages} <= set(sent)


def test_pull_reads_the_same_through_batch_and_streaming_paths(broker, unique):
    from rockmq.client import AsyncPullConsumer

    topic = unique("rc-pull-paths")

    async def scenario():
        async with AsyncProducer(broker.endpoint) as p:
            await p.send_batch([Message(topic, f"p{i}".encode(), tag="a" if i % 3 else "b") for i in range(40)])
        async with AsyncPullConsumer(broker.endpoint, unique("rc-pull-g")) as c:
            queue = (await c.queues(topic))[0]
            start = await c.offset_at(queue, "earliest")
            batched = await c.pull(queue, start, max_messages=100, filter="a")
            c._streaming_only.add(queue.endpoint)  # what a broker without BatchMessaging gets
            streamed = await c.pull(queue, start, max_messages=100, filter="a")
        return batched, streamed

    batched, streamed = asyncio.run(scenario())
    assert batched == streamed
    assert batched.messages and all(m.tag == "a" and m.delivery_attempt == 1 for m in batched.messages)


def test_one_way_sends_arrive(broker, unique):
    topic, group = unique("rc-oneway"), unique("rc-oneway-g")
    with Producer(broker.endpoint) as p:
        for i in range(5):
            p.send_oneway(Message(topic, f"w{i}".encode()))
    with SimpleConsumer(broker.endpoint, group, {topic: "*"}, await_s=1) as c:
        got: list = []
        deadline = time.time() + 10
        while len(got) < 5 and time.time() < deadline:
            batch = c.receive(8)
            got += batch
            for m in batch:
                c.ack(m)
    assert sorted(m.body for m in got) == [f"w{i}".encode() for i in range(5)]
