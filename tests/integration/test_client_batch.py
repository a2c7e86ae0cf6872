"""send_batch never hides what it stored: refused entries raise BatchSendError with a receipt per
stored message; messages keep their ids, so a resend of any of them stores nothing new."""

from __future__ import annotations

import asyncio

import pytest

from rockmq.client import AsyncProducer, Message, Producer, RockmqError
from rockmq.client.errors import BatchSendError, IllegalArgument


def test_a_partly_refused_batch_says_what_was_stored_and_resends_store_nothing_twice(broker, conn, unique):
    topic = unique("batch-partial")
    conn.create_topic(topic, queues=1)
    good, empty = Message(topic, b"good"), Message(topic, b"")

    async def scenario() -> None:
        async with AsyncProducer(broker.endpoint) as p:
            with pytest.raises(BatchSendError) as caught:
                await p.send_batch([good, empty])
            e = caught.value
            assert isinstance(e, RockmqError) and not e.retriable
            first, refused = e.receipts
            assert refused is None and first is not None and first.message_id == good.message_id
            assert list(e.errors) == [1] and isinstance(e.errors[1], IllegalArgument)

            again = await p.send(good)  # alone
            assert (again.message_id, again.offset) == (first.message_id, first.offset)
            other = Message(topic, b"other")
            in_batch, new = await p.send_batch([good, other])  # in a batch, with a new one
            assert in_batch.message_id == first.message_id and new.message_id == other.message_id != first.message_id

            with pytest.raises(BatchSendError) as all_refused:
                await p.send_batch([empty, Message(topic, b"")])
            assert all_refused.value.receipts == [None, None] and set(all_refused.value.errors) == {0, 1}

    asyncio.run(scenario())
    assert [m.body for m in conn.pull_all(topic, 0)] == [b"good", b"other"]


def test_the_sync_producer_raises_the_same(broker, conn, unique):
    topic = unique("batch-sync")
    conn.create_topic(topic, queues=1)
    with Producer(broker.endpoint) as p:
        with pytest.raises(BatchSendError) as caught:
            p.send_batch([Message(topic, b""), Message(topic, b"stored")])
        assert caught.value.receipts[0] is None and caught.value.receipts[1] is not None
        assert list(caught.value.errors) == [0]
    assert [m.body for m in conn.pull_all(topic, 0)] == [b"stored"]
