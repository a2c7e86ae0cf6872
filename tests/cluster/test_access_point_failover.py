"""The death of the broker a client was pointed at (its access point) in a three-broker cluster:
sends go on through the other brokers with no failure and nothing spooled, the first send after
the kill costs at most one attempt's timeout, and consumers keep reading through the others."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from waiting import async_wait_for

from rockmq.client import AsyncProducer, AsyncPullConsumer, AsyncPushConsumer, AsyncSimpleConsumer, Message

TIMEOUT_S = 2.0  # the producer's request timeout: the bound on what a dead access point may cost


async def _sends_through_the_kill(cluster, topic: str, **options) -> tuple[list, list[float]]:
    """Warm a producer pointed at b3, kill -9 b3, then 200 sends; -> (receipts, each send's seconds)."""
    async with AsyncProducer(cluster.brokers["b3"].endpoint, request_timeout=TIMEOUT_S, **options) as p:
        for i in range(12):
            await p.send(Message(topic, f"before-{i}".encode()))
        cluster.brokers["b3"].kill()
        receipts, took = [], []
        for i in range(200):
            started = time.monotonic()
            receipts.append(await p.send(Message(topic, f"after-{i}".encode())))
            took.append(time.monotonic() - started)
    return receipts, took


def _check(cluster, topic: str, receipts: list, took: list[float]) -> None:
    assert not [r for r in receipts if r.spooled], "a send was spooled while two brokers were up"
    assert {r.broker for r in receipts} <= {"b1", "b2"}, "a send was acknowledged by the dead broker"
    assert {r.broker for r in receipts} == {"b1", "b2"}
    assert took[0] < TIMEOUT_S + 1.0, f"the first send after the kill took {took[0]:.1f} s"
    assert max(took) < TIMEOUT_S + 1.0, f"a send after the kill took {max(took):.1f} s"
    assert {r.message_id for r in receipts} <= cluster.stored_ids(topic)


def test_a_producer_pointed_at_a_killed_broker_sends_through_the_others(cluster):
    cluster.brokers["b1"].cli("topic", "create", "ap", "--queues", "6", check=True)
    receipts, took = asyncio.run(_sends_through_the_kill(cluster, "ap"))
    _check(cluster, "ap", receipts, took)

    async def fresh_producer() -> list:
        """One that never reached b3: given a list, it starts through the next broker."""
        ends = f"{cluster.brokers['b3'].endpoint},{cluster.brokers['b1'].endpoint}"
        async with AsyncProducer(ends, request_timeout=TIMEOUT_S) as p:
            return [await p.send(Message("ap", f"fresh-{i}".encode())) for i in range(10)]

    fresh = asyncio.run(fresh_producer())
    assert {r.broker for r in fresh} <= {"b1", "b2"}
    assert {r.message_id for r in fresh} <= cluster.stored_ids("ap")


def test_with_a_spool_nothing_is_spooled_that_could_be_sent(cluster, tmp_path: Path):
    cluster.brokers["b1"].cli("topic", "create", "aps", "--queues", "6", check=True)
    receipts, took = asyncio.run(_sends_through_the_kill(cluster, "aps", spool_dir=tmp_path / "spool"))
    _check(cluster, "aps", receipts, took)


def test_consumers_pointed_at_a_killed_broker_read_through_the_others(cluster):
    cluster.brokers["b1"].cli("topic", "create", "apc", "--queues", "6", check=True)
    b3 = cluster.brokers["b3"].endpoint
    seen: set[str] = set()

    async def scenario() -> tuple[set[str], set[str], set[str]]:
        async with AsyncPushConsumer(b3, "apc-push", {"apc": "*"}, lambda m: seen.add(m.body.decode()), heartbeat_s=0.3,
                                     rebalance_s=1.0, poll_s=1.0, request_timeout=TIMEOUT_S, shutdown_timeout_s=2.0) as push, \
                AsyncSimpleConsumer(b3, "apc-simple", {"apc": "*"}, await_s=1.0, request_timeout=TIMEOUT_S) as simple, \
                AsyncPullConsumer(b3, "apc-pull", request_timeout=TIMEOUT_S) as pull:
            await simple.receive()  # each has reached b3 before the kill
            await pull.queues("apc")
            cluster.brokers["b3"].kill()
            async with AsyncProducer(cluster.brokers["b1"].endpoint) as p:
                sent = {(await p.send(Message("apc", f"m{i}".encode()))) and f"m{i}" for i in range(30)}
            await async_wait_for(lambda: seen == sent, 20, 0.1, what="the push consumer got every message")
            received: set[str] = set()
            deadline = time.monotonic() + 20
            while received != sent and time.monotonic() < deadline:
                batch = await simple.receive()
                await simple.ack_many(batch)
                received |= {m.body.decode() for m in batch}
            assert push.assignment
            pulled: set[str] = set()
            for q in await pull.queues("apc"):
                if q.broker != "b3":
                    pulled |= {m.body.decode() for m in (await pull.pull(q, await pull.offset_at(q, "earliest"))).messages}
        return sent, received, pulled

    sent, received, pulled = asyncio.run(scenario())
    assert seen == sent
    assert received == sent
    assert pulled == sent
