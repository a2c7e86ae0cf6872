"""Concurrent `send()` calls are gathered per queue into shared requests (accumulator.py,
sender.py), against a real broker: each caller still gets its own receipt or its own error, every
message is stored once, a FIFO group keeps the order of the send calls, close() sends what is
pending, and the buffer's byte cap holds senders back instead of growing. The sync Producer's
send makes its first attempt from the caller's thread, and its retries and spool on the loop."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import pytest

from rockmq.client import AsyncProducer, Message, Producer
from rockmq.client.errors import ClientClosed, IllegalArgument


def _requests(producer: AsyncProducer) -> list[int]:
    """Record the number of messages of every gathered request the producer starts."""
    sizes: list[int] = []
    start = producer.sender._start

    def counting(key, queue, batch):  # type: ignore[no-untyped-def]
        sizes.append(len(batch))
        start(key, queue, batch)

    producer.sender._start = counting  # type: ignore[method-assign]
    return sizes


def test_concurrent_sends_share_requests_and_each_gets_its_own_receipt(broker, conn, unique):
    topic = unique("acc-many")
    conn.create_topic(topic, queues=4)
    messages = [Message(topic, b"m%d" % i) for i in range(256)]

    async def scenario() -> list:
        async with AsyncProducer(broker.endpoint) as p:
            await p.queues(topic)
            sizes = _requests(p)
            receipts = await asyncio.gather(*(p.send(m) for m in messages))
        assert sum(sizes) == 256 and len(sizes) < 64, sizes  # gathered, not one request each
        return receipts

    receipts = asyncio.run(scenario())
    assert [r.message_id for r in receipts] == [m.message_id for m in messages]
    assert len({(r.broker, r.offset, r.message_id) for r in receipts}) == 256
    stored = [m for q in range(4) for m in conn.pull_all(topic, q)]
    assert Counter(m.body for m in stored) == Counter(m.body for m in messages)  # each exactly once


def test_a_fifo_group_keeps_the_order_of_concurrent_send_calls(broker, conn, unique):
    topic = unique("acc-fifo")
    conn.create_topic(topic, queues=4, types=("FIFO",))
    groups = [f"g{i}" for i in range(8)]
    messages = [Message(topic, f"{g}:{i}".encode(), message_group=g) for i in range(40) for g in groups]

    async def scenario() -> None:
        # Small requests and one slot per broker: many requests follow one another per queue.
        async with AsyncProducer(broker.endpoint, batch_max_messages=7, max_in_flight=1) as p:
            await asyncio.gather(*(p.send(m) for m in messages))

    asyncio.run(scenario())
    for q in range(4):
        seen: dict[str, list[int]] = {}
        for m in conn.pull_all(topic, q):
            group, i = m.body.decode().split(":")
            seen.setdefault(group, []).append(int(i))
        assert all(order == list(range(40)) for order in seen.values()), seen


def test_a_refused_message_fails_only_its_own_send(broker, conn, unique):
    topic = unique("acc-refused")
    conn.create_topic(topic, queues=1)

    async def scenario() -> None:
        async with AsyncProducer(broker.endpoint) as p:
            await p.queues(topic)
            sizes = _requests(p)
            results = await asyncio.gather(*(p.send(Message(topic, b"" if i == 5 else b"ok%d" % i)) for i in range(20)),
                                           return_exceptions=True)
        assert sizes[0] > 5  # the empty one shared its request with others
        assert isinstance(results[5], IllegalArgument)
        assert all(not isinstance(r, BaseException) for i, r in enumerate(results) if i != 5)

    asyncio.run(scenario())
    assert sorted(m.body for m in conn.pull_all(topic, 0)) == sorted(b"ok%d" % i for i in range(20) if i != 5)


def test_close_sends_what_is_pending_and_refuses_what_comes_after(broker, conn, unique):
    topic = unique("acc-close")
    conn.create_topic(topic, queues=2)

    async def scenario() -> None:
        p = AsyncProducer(broker.endpoint, max_in_flight=1, batch_max_messages=10)
        await p.send(Message(topic, b"first"))
        pending = [p.send_nowait(Message(topic, b"n%d" % i)) for i in range(100)]
        await asyncio.sleep(0)
        await p.close()
        assert all(f.done() and not f.cancelled() and f.exception() is None for f in pending)
        with pytest.raises(ClientClosed):
            await p.send(Message(topic, b"late"))

    asyncio.run(scenario())
    assert len([m for q in range(2) for m in conn.pull_all(topic, q)]) == 101


def test_the_buffer_cap_holds_senders_back(broker, conn, unique):
    topic = unique("acc-cap")
    conn.create_topic(topic, queues=2)
    body = b"x" * 1000
    cap = 8 * 1024

    async def scenario() -> None:
        async with AsyncProducer(broker.endpoint, buffer_bytes=cap) as p:
            await p.queues(topic)
            highest = 0

            async def watch() -> None:
                nonlocal highest
                while True:
                    highest = max(highest, p.accumulator.held)
                    await asyncio.sleep(0)

            watcher = asyncio.create_task(watch())
            receipts = await asyncio.gather(*(p.send(Message(topic, body)) for _ in range(200)))
            watcher.cancel()
        assert len({r.message_id for r in receipts}) == 200
        assert 0 < highest <= cap

    asyncio.run(scenario())
    assert len([m for q in range(2) for m in conn.pull_all(topic, q)]) == 200


def test_a_lone_send_goes_at_once_in_a_request_of_its_own(broker, conn, unique):
    topic = unique("acc-lone")
    conn.create_topic(topic, queues=1)

    async def scenario() -> None:
        async with AsyncProducer(broker.endpoint) as p:
            await p.queues(topic)
            sizes = _requests(p)
            for i in range(5):
                await p.send(Message(topic, b"%d" % i))
        assert sizes == [1] * 5

    asyncio.run(scenario())


def test_a_sync_send_tries_first_from_its_own_thread_then_retries_and_spools_on_the_loop(fresh_broker, tmp_path, unique):
    topic = unique("sync-direct")
    with Producer(fresh_broker.endpoint, spool_dir=tmp_path / "spool", spool_schedule_s=(600,), request_timeout=1.0,
                  delivery_timeout=0) as p:
        first = p.send(Message(topic, b"first"))  # routes the topic, through the loop
        calls = []
        attempt = p._inner.sender.attempt_blocking

        def counting(request, queue):  # type: ignore[no-untyped-def]
            calls.append(threading.current_thread())
            return attempt(request, queue)

        p._inner.sender.attempt_blocking = counting  # type: ignore[method-assign]
        second = p.send(Message(topic, b"second"))
        assert calls == [threading.current_thread()] and second.broker == first.broker and not second.spooled
        fifo = p.send(Message(topic, b"fifo", message_group="g"))  # a group's order is the loop's to keep
        assert len(calls) == 1 and not fifo.spooled

        fresh_broker.stop()
        down = p.send(Message(topic, b"while down"))  # the first attempt fails here; retries, then the spool
        assert len(calls) == 2 and down.spooled


def test_a_sync_send_refused_by_the_broker_raises_its_error(broker, unique):
    with Producer(broker.endpoint) as p:
        p.send(Message(unique("sync-refused"), b"route me"))
        with pytest.raises(IllegalArgument):
            p.send(Message(unique("sync-refused"), b""))
