"""Queue selectors choose the queue (issue 17 §1), against a real broker: the producer names the
queue it chose and the broker stores the message there; FIFO placement stays the group's hash; an
id the topic does not have is refused and nothing is stored; a client that does not say it chose
(raw wire, official clients) is placed by the broker as before."""

from __future__ import annotations

import asyncio
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from mqwire import META, Conn, message
from waiting import async_wait_for, wait_for

from rockmq.client import AsyncProducer, Message, Queue, RoundRobin, allocation, at_random, by_hash, by_index, selectors
from rockmq.client.errors import BrokerRefused
from rockmq.client.push import AsyncPushConsumer
from rockmq.protocol import pb, rpc
from rockmq.protocol.conventions import CLIENT_CHOOSES, QUEUE_CHOICE_HEADER

QUEUES = 8
FAST = dict(heartbeat_s=0.3, rebalance_s=1.0, commit_interval_s=0.3, poll_s=1.0, shutdown_timeout_s=2.0)


def _counts(conn: Conn, topic: str) -> dict[int, int]:
    """Messages stored per queue (the queues holding any)."""
    ends = {q: conn.query_offset(topic, q, pb.END).offset for q in range(QUEUES)}
    return {q: n for q, n in ends.items() if n}


def _send_all(endpoint: str, topic: str, n: int, selector: Any = None, arg: Any = None, **fields: Any) -> None:
    async def go() -> None:
        async with AsyncProducer(endpoint, selector=selector) as p:
            for i in range(n):
                await p.send(Message(topic, f"m{i}".encode(), **fields), arg=arg)
    asyncio.run(go())


@pytest.fixture
def topic(conn: Conn, unique) -> str:
    name = unique("sel")
    conn.create_topic(name, queues=QUEUES)
    return name


def test_by_index_puts_every_message_in_that_queue(broker, conn: Conn, topic: str):
    _send_all(broker.endpoint, topic, 6, by_index, arg=5)
    assert _counts(conn, topic) == {5: 6}


def test_a_callable_selector_is_obeyed(broker, conn: Conn, topic: str):
    def third(queues: Sequence[Queue], message: Message, arg: Any) -> Queue:
        return next(q for q in queues if q.queue_id == 3)

    _send_all(broker.endpoint, topic, 6, third)
    assert _counts(conn, topic) == {3: 6}


def test_by_hash_keeps_one_key_in_one_queue(broker, conn: Conn, topic: str):
    _send_all(broker.endpoint, topic, 6, by_hash, keys=["order-42"])
    assert list(_counts(conn, topic).values()) == [6]


def test_round_robin_and_at_random_spread(broker, conn: Conn, unique):
    for selector, at_least in ((RoundRobin(), QUEUES), (at_random, 4)):
        name = unique("sel-spread")
        conn.create_topic(name, queues=QUEUES)
        _send_all(broker.endpoint, name, 48, selector)
        counts = _counts(conn, name)
        assert sum(counts.values()) == 48 and len(counts) >= at_least, (selector, counts)
        if isinstance(selector, RoundRobin):
            assert set(counts.values()) == {6}, counts


def test_delayed_and_transactional_messages_enter_the_chosen_queue(broker, conn: Conn, topic: str):
    async def go() -> None:
        async with AsyncProducer(broker.endpoint, selector=by_index) as p:
            for _ in range(3):
                await p.send(Message(topic, b"later", delay=200), arg=6)
            for _ in range(2):
                txn = await p.send_transactional(Message(topic, b"txn"), arg=4)
                await txn.commit()
            late = await p.send_transactional(Message(topic, b"txn later", delay=200), arg=2)
            await late.commit()
    asyncio.run(go())
    wait_for(lambda: _counts(conn, topic) == {6: 3, 4: 2, 2: 1}, 10.0, what="every message in its chosen queue")


def test_fifo_placement_stays_the_hash_of_the_group(broker, conn: Conn, topic: str):
    """Whatever the selector says, a message group's queue is the broker's hash of the group."""
    groups = [f"g{i}" for i in range(5)]
    for g in groups:
        _send_all(broker.endpoint, topic, 2, by_index, arg=7, message_group=g)
    expected = Counter(zlib.crc32(g.encode()) % QUEUES for g in groups)
    assert _counts(conn, topic) == {q: 2 * n for q, n in expected.items()}


def test_an_invalid_queue_id_is_refused_and_nothing_stored(broker, conn: Conn, topic: str):
    def beyond(queues: Sequence[Queue], message: Message, arg: Any) -> Queue:
        return Queue(queues[0].topic, queues[0].broker, queues[0].endpoint, QUEUES + 1)

    with pytest.raises(BrokerRefused) as refused:
        _send_all(broker.endpoint, topic, 1, beyond)
    assert refused.value.code == pb.BAD_REQUEST and not refused.value.retriable
    assert f"queue_id {QUEUES + 1} is not a queue of topic" in str(refused.value)
    request = rpc.SendMessageRequest(messages=[message(topic, b"x")])
    request.messages[0].system_properties.queue_id = -1
    reply = conn.mq.SendMessage(request, metadata=META + ((QUEUE_CHOICE_HEADER, CLIENT_CHOOSES),), timeout=10)
    assert reply.entries[0].status.code == pb.BAD_REQUEST, reply
    assert _counts(conn, topic) == {}


def test_without_the_header_the_broker_places_messages(conn: Conn, topic: str):
    """Official Python (5.1) and Node.js clients leave queue_id 0: their messages still spread."""
    for i in range(QUEUES):
        conn.send_ok(message(topic, f"m{i}"))
    assert _counts(conn, topic) == dict.fromkeys(range(QUEUES), 1)


def test_queue_per_environment_isolates_environments(broker, conn: Conn, topic: str, unique):
    """selectors.by_environment(n) with allocation.by_environment(n): each environment's consumers
    get exactly its producers' messages."""
    got: dict[int, list[bytes]] = {1: [], 2: []}

    def handler(env: int) -> Any:
        async def handle(m: Any) -> None:
            got[env].append(m.body)
        return handle

    async def scenario() -> None:
        consumers = [AsyncPushConsumer(broker.endpoint, unique(f"env{env}"), {topic: "*"}, handler(env),
                                       strategy=allocation.by_environment(env), **FAST) for env in (1, 2)]
        for c in consumers:
            await c.start()
        for env in (1, 2):
            async with AsyncProducer(broker.endpoint, selector=selectors.by_environment(env)) as p:
                for i in range(6):
                    await p.send(Message(topic, f"env{env}-{i}".encode()))
        await async_wait_for(lambda: len(got[1]) >= 6 and len(got[2]) >= 6, 20.0, what="both environments' messages")
        await asyncio.sleep(1.0)  # anything misplaced would arrive meanwhile
        for c in consumers:
            await c.close()

    asyncio.run(scenario())
    assert _counts(conn, topic) == {0: 6, 1: 6}
    for env in (1, 2):
        assert sorted(got[env]) == sorted(f"env{env}-{i}".encode() for i in range(6)), got
