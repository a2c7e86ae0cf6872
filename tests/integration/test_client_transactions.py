"""Transactional sends with rockmq's producer: commit and rollback, and the checker that settles
transactions nobody ended — asked over the producer's Telemetry stream, again after UNKNOWN or a
checker that raised, and by a later producer process that declares the topic."""

from __future__ import annotations

import asyncio
import time

import pytest
from broker_process import BrokerProcess
from waiting import wait_for

from rockmq.client import AsyncProducer, AsyncSimpleConsumer, Message, Producer, ReceivedMessage, TransactionResolution
from rockmq.client.errors import IllegalArgument

FAST_CHECKS = {"ROCKMQ_TXN_CHECK_FIRST_S": "1", "ROCKMQ_TXN_CHECK_INTERVAL_S": "1", "ROCKMQ_TXN_CHECK_MAX": "10"}


@pytest.fixture(scope="module")
def checking_broker(tmp_path_factory: pytest.TempPathFactory):
    """A private broker that checks undecided transactions fast (after 1 s, then every 1 s)."""
    b = BrokerProcess(tmp_path_factory.mktemp("client-txn-broker"), env=FAST_CHECKS).start()
    yield b
    b.stop()


async def _bodies(endpoint: str, topic: str, group: str, want: int, within: float = 10.0) -> list[bytes]:
    """What the group receives within `within` s, stopping early once `want` arrived."""
    got: list[bytes] = []
    async with AsyncSimpleConsumer(endpoint, group, {topic: "*"}, await_s=1) as c:
        deadline = time.monotonic() + within
        while len(got) < want and time.monotonic() < deadline:
            for m in await c.receive(32):
                await c.ack(m)
                got.append(m.body)
    return got


class Checker:
    """Answers with `verdicts` in turn (an exception is raised), recording what it was asked."""

    def __init__(self, *verdicts: TransactionResolution | Exception) -> None:
        self.verdicts = list(verdicts)
        self.asked: list[ReceivedMessage] = []

    async def __call__(self, message: ReceivedMessage) -> TransactionResolution:
        self.asked.append(message)
        verdict = self.verdicts[min(len(self.asked), len(self.verdicts)) - 1]
        if isinstance(verdict, Exception):
            raise verdict
        return verdict


def test_commit_is_delivered_and_rollback_never(checking_broker, unique):
    topic, group = unique("ctx-end"), unique("ctx-end-g")

    async def scenario():
        async with AsyncProducer(checking_broker.endpoint) as p:
            kept = await p.send_transactional(Message(topic, b"kept", keys=("order-1",)))
            dropped = await p.send_transactional(Message(topic, b"dropped"))
            assert kept.transaction_id and kept.receipt.broker and kept.message_id != dropped.message_id
            assert await _bodies(checking_broker.endpoint, topic, group, 1, within=0.5) == [], "visible before commit"
            await kept.commit()
            await kept.commit()  # the same answer again is harmless
            await dropped.rollback()
            with pytest.raises(IllegalArgument):
                await dropped.commit()
        assert await _bodies(checking_broker.endpoint, topic, group, 2, within=1.5) == [b"kept"]

    asyncio.run(scenario())


def test_an_orphan_is_committed_by_the_checker(checking_broker, unique):
    topic, group = unique("ctx-orphan"), unique("ctx-orphan-g")
    checker = Checker(TransactionResolution.COMMIT)

    async def scenario():
        async with AsyncProducer(checking_broker.endpoint, checker=checker) as p:
            txn = await p.send_transactional(Message(topic, b"orphan", tag="paid"))
            assert await _bodies(checking_broker.endpoint, topic, group, 1) == [b"orphan"]
        [asked] = checker.asked
        assert (asked.message_id, asked.topic, asked.body, asked.tag) == (txn.message_id, topic, b"orphan", "paid")

    asyncio.run(scenario())


def test_unknown_or_a_failing_checker_is_asked_again(checking_broker, unique):
    topic, group = unique("ctx-again"), unique("ctx-again-g")
    checker = Checker(RuntimeError("the order service is down"), TransactionResolution.UNKNOWN, TransactionResolution.COMMIT)

    async def scenario():
        async with AsyncProducer(checking_broker.endpoint, checker=checker) as p:
            txn = await p.send_transactional(Message(topic, b"third time"))
            assert await _bodies(checking_broker.endpoint, topic, group, 1) == [b"third time"]
        assert [m.message_id for m in checker.asked] == [txn.message_id] * 3

    asyncio.run(scenario())


def test_a_later_producer_settles_the_orphans_of_its_transaction_topics(checking_broker, unique):
    topic, group = unique("ctx-later"), unique("ctx-later-g")
    checker = Checker(TransactionResolution.COMMIT)

    async def scenario():
        async with AsyncProducer(checking_broker.endpoint) as crashed:  # no checker: nobody answers
            txn = await crashed.send_transactional(Message(topic, b"left behind"))
        async with AsyncProducer(checking_broker.endpoint, checker=checker, transaction_topics=[topic]):
            assert await _bodies(checking_broker.endpoint, topic, group, 1) == [b"left behind"]
        assert [m.message_id for m in checker.asked] == [txn.message_id]

    asyncio.run(scenario())


def test_sync_producer_transactions_and_a_plain_function_checker(checking_broker, unique):
    topic, group = unique("ctx-sync"), unique("ctx-sync-g")
    asked: list[str] = []

    def checker(message: ReceivedMessage) -> TransactionResolution:  # runs in a worker thread
        asked.append(message.message_id)
        return TransactionResolution.ROLLBACK if message.body == b"undecided" else TransactionResolution.COMMIT

    with Producer(checking_broker.endpoint, checker=checker) as p:
        p.send_transactional(Message(topic, b"committed")).commit()
        undecided = p.send_transactional(Message(topic, b"undecided"))
        wait_for(lambda: asked, 10, what="the broker's transaction check")
        assert asked == [undecided.message_id]
    assert asyncio.run(_bodies(checking_broker.endpoint, topic, group, 2, within=1)) == [b"committed"]
