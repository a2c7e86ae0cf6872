"""Environment lanes decided on the broker (docs/client.md "Environment lanes"), against a real
broker in this process: every consumer kind takes the same `lane=`, a message goes to one
consumer of the group (lane or base, whichever took it), and a lane with no live member falls
back to the base consumers. `client_silence_s` is the broker's liveness timeout."""

from __future__ import annotations

import asyncio
import time

import pytest
from waiting import async_wait_for

from rockmq.client import AsyncProducer, Message
from rockmq.client.consumer import AsyncSimpleConsumer, Filter
from rockmq.client.message import ReceivedMessage
from rockmq.client.pull import AsyncPullConsumer
from rockmq.client.push import AsyncPushConsumer
from rockmq.client.queues import Queue

UNTIL_S = 15.0
ALIVE_S = 3.0  # the broker's client_silence_s in these tests
PUSH = dict(heartbeat_s=0.3, rebalance_s=1.0, commit_interval_s=0.3, poll_s=0.5, shutdown_timeout_s=2.0)


async def _send(endpoint: str, topic: str, n: int, lane: str | None = None) -> None:
    async with AsyncProducer(endpoint, lane=lane) as p:
        await p.send_batch([Message(topic, f"{lane or 'base'}-{i}".encode()) for i in range(n)])


async def _drain(consumer: AsyncSimpleConsumer, quiet_s: float = 1.0) -> list[str]:
    """Receive and ack until a receive of `quiet_s` brings nothing; -> the bodies."""
    consumer.await_s = quiet_s
    got: list[ReceivedMessage] = []
    while batch := await consumer.receive(32, invisible_s=10):
        got += batch
        await consumer.ack_many(batch)
    return sorted(m.body.decode() for m in got)


def _topic(harness, unique, name: str) -> tuple[str, str]:
    """A new 2-queue topic and a group name for it."""
    topic = unique(name)
    harness.conn.create_topic(topic, queues=2)
    return topic, unique(f"{name}-g")


def _lane(n: int, lane: str) -> list[str]:
    return sorted(f"{lane}-{i}" for i in range(n))


@pytest.mark.broker_settings(client_silence_s=ALIVE_S)
def test_a_base_simple_consumer_gets_no_message_of_a_live_lane(harness, unique):
    topic, group = _topic(harness, unique, "lane-simple")

    async def scenario() -> None:
        async with AsyncSimpleConsumer(harness.endpoint, group, {topic: "*"}) as base, \
                AsyncSimpleConsumer(harness.endpoint, group, {topic: "*"}, lane="dev1") as dev1:
            assert await _drain(dev1, 0.1) == []  # dev1 is now a live member of the group
            await _send(harness.endpoint, topic, 5, "dev1")
            await _send(harness.endpoint, topic, 5)
            assert await _drain(base) == _lane(5, "base")
            assert await _drain(dev1) == _lane(5, "dev1")  # left by the base consumer, not lost
            assert await _drain(base, 0.2) == []

    asyncio.run(scenario())


@pytest.mark.broker_settings(client_silence_s=ALIVE_S)
def test_a_late_lane_member_gets_no_message_the_base_took(harness, unique):
    topic, group = _topic(harness, unique, "lane-late")

    async def scenario() -> None:
        async with AsyncSimpleConsumer(harness.endpoint, group, {topic: "*"}) as base:
            await _send(harness.endpoint, topic, 5, "dev1")
            assert await _drain(base) == _lane(5, "dev1")  # nobody in dev1: they fall back to the base
            async with AsyncSimpleConsumer(harness.endpoint, group, {topic: "*"}, lane="dev1") as dev1:
                assert await _drain(dev1) == []
                await _send(harness.endpoint, topic, 3, "dev1")
                assert await _drain(base, 0.3) == []
                assert await _drain(dev1) == _lane(3, "dev1")

    asyncio.run(scenario())


@pytest.mark.broker_settings(client_silence_s=ALIVE_S)
def test_lane_messages_fall_back_when_the_lane_member_dies(harness, unique):
    topic, group = _topic(harness, unique, "lane-dies")

    async def scenario() -> None:
        async with AsyncSimpleConsumer(harness.endpoint, group, {topic: "*"}) as base:
            dev1 = AsyncSimpleConsumer(harness.endpoint, group, {topic: "*"}, lane="dev1")
            assert await _drain(dev1, 0.1) == []
            await _send(harness.endpoint, topic, 5, "dev1")
            held = await dev1.receive(2, invisible_s=1)  # taken, never acked: back to the group after 1 s
            assert await _drain(base, 0.3) == []  # dev1 is alive: its messages wait for it
            await dev1.session.close()  # dies without a word: silent for client_silence_s
            died = time.monotonic()
            bodies = sorted(m.body.decode() for m in held)
            took: list[str] = []
            while sorted(took) != _lane(5, "dev1"):
                assert time.monotonic() - died < UNTIL_S, f"dev1's messages at the base consumer: {took}"
                took += await _drain(base, 0.2)
            assert time.monotonic() - died >= ALIVE_S - 0.5, "fell back before dev1 was silent for client_silence_s"
            assert set(bodies) <= set(took)
            await _send(harness.endpoint, topic, 2, "dev1")  # still nobody in dev1
            assert await _drain(base) == _lane(2, "dev1")

    asyncio.run(scenario())


@pytest.mark.broker_settings(client_silence_s=ALIVE_S)
@pytest.mark.parametrize("mode", ["pop", "clustering"])
def test_push_consumers_deliver_a_lane_message_once(harness, unique, mode):
    topic, group = _topic(harness, unique, f"lane-push-{mode}")
    got: dict[str, list[str]] = {"base": [], "dev1": []}

    def consumer(lane: str | None) -> AsyncPushConsumer:
        return AsyncPushConsumer(harness.endpoint, group, {topic: "*"}, lambda m: got[lane or "base"].append(m.body.decode()),
                                 lane=lane, mode=mode, **PUSH)

    async def scenario() -> None:
        async with consumer(None):
            await _send(harness.endpoint, topic, 5, "dev1")  # nobody in dev1: the base takes them
            await async_wait_for(lambda: len(got["base"]) == 5, UNTIL_S, what="dev1's messages at the base")
            async with consumer("dev1"):
                await asyncio.sleep(1.5)  # joined: none of the 5 again
                await _send(harness.endpoint, topic, 5, "dev1")
                await _send(harness.endpoint, topic, 5)
                await async_wait_for(lambda: len(got["dev1"]) == 5 and len(got["base"]) == 10, UNTIL_S, what="5 each")
                await asyncio.sleep(0.5)
        assert sorted(got["dev1"]) == _lane(5, "dev1")
        assert sorted(got["base"]) == sorted(_lane(5, "dev1") + _lane(5, "base"))

    asyncio.run(scenario())


async def _pull_all(consumer: AsyncPullConsumer, topic: str, positions: dict[Queue, int],
                    filter: str | Filter = "*") -> list[str]:
    """Pull every queue of the topic from `positions` (updated) to its end; -> the bodies."""
    got: list[str] = []
    for queue in await consumer.queues(topic):
        if queue not in positions:
            positions[queue] = await consumer.committed(queue) or 0
        while True:
            result = await consumer.pull(queue, positions[queue], max_messages=32, filter=filter)
            got += [m.body.decode() for m in result.messages]
            if result.next_offset == positions[queue]:
                break
            positions[queue] = result.next_offset
        await consumer.commit(queue, positions[queue])
    return sorted(got)


@pytest.mark.broker_settings(client_silence_s=ALIVE_S)
def test_pull_consumers_keep_lanes_apart_and_fall_back_when_the_lane_dies(harness, unique):
    topic, group = _topic(harness, unique, "lane-pull")

    async def scenario() -> None:
        async with AsyncPullConsumer(harness.endpoint, group) as base, \
                AsyncPullConsumer(harness.endpoint, group, lane="dev1") as dev1:
            at_base: dict[Queue, int] = {}
            at_dev1: dict[Queue, int] = {}
            assert await _pull_all(dev1, topic, at_dev1) == []  # dev1 is a live member now
            await _send(harness.endpoint, topic, 5, "dev1")
            await _send(harness.endpoint, topic, 5)
            assert await _pull_all(base, topic, at_base) == _lane(5, "base")
            assert await _pull_all(dev1, topic, at_dev1) == _lane(5, "dev1")
            await asyncio.sleep(ALIVE_S + 0.5)  # dev1 silent: dead
            await _send(harness.endpoint, topic, 3, "dev1")
            assert await _pull_all(base, topic, at_base) == _lane(3, "dev1")

    asyncio.run(scenario())


@pytest.mark.broker_settings(client_silence_s=ALIVE_S)
def test_a_late_lane_pull_consumer_gets_no_message_the_base_took(harness, unique):
    topic, group = _topic(harness, unique, "lane-pull-late")

    async def scenario() -> None:
        async with AsyncPullConsumer(harness.endpoint, group) as base:
            at_base: dict[Queue, int] = {}
            await _send(harness.endpoint, topic, 5, "dev1")
            assert await _pull_all(base, topic, at_base) == _lane(5, "dev1")  # nobody in dev1: the base's
            async with AsyncPullConsumer(harness.endpoint, group, lane="dev1") as dev1:
                at_dev1: dict[Queue, int] = {}
                assert await _pull_all(dev1, topic, at_dev1) == []
                await _send(harness.endpoint, topic, 3, "dev1")
                assert await _pull_all(base, topic, at_base) == []
                assert await _pull_all(dev1, topic, at_dev1) == _lane(3, "dev1")

    asyncio.run(scenario())


@pytest.mark.broker_settings(client_silence_s=ALIVE_S)
def test_an_official_client_joins_a_lane_with_its_sql_filter(harness, unique):
    """Official clients cannot add the lane header: their SQL92 filter `lane = 'dev1'` makes them
    members of lane dev1 (raw wire, as they send it: no rockmq header)."""
    topic, group = _topic(harness, unique, "lane-official")
    conn = harness.conn
    dev1 = "lane = 'dev1'"

    async def scenario() -> None:
        async with AsyncSimpleConsumer(harness.endpoint, group, {topic: "*"}) as base:
            assert conn.receive(group, topic, sql=dev1)[1] == []  # a live dev1 member now
            await _send(harness.endpoint, topic, 5, "dev1")
            await _send(harness.endpoint, topic, 5)
            assert await _drain(base) == _lane(5, "base")
            got = conn.receive_n(group, topic, 5, sql=dev1, within=5.0)
            conn.ack(group, topic, *got)
            assert sorted(m.body.decode() for m in got) == _lane(5, "dev1")
            assert conn.receive(group, topic, sql=dev1, poll_s=0.3)[1] == []  # nothing else: base messages are the base's

    asyncio.run(scenario())


async def _back_with_offsets(harness, unique, name: str, restart: bool) -> None:
    """A dev1 pull consumer that stored offsets goes away; the base takes dev1's messages by
    fallback, partly (3 of 5) before dev1 is back; dev1 comes back (after a broker restart, if
    asked) with its stored offsets: it gets what the base did not take, once, and nothing is lost."""
    topic, group = unique(name), unique(f"{name}-g")
    harness.conn.create_topic(topic, queues=1)
    async with AsyncPullConsumer(harness.endpoint, group, lane="dev1") as dev1, \
            AsyncPullConsumer(harness.endpoint, group) as base:
        assert await _pull_all(dev1, topic, {}) == []  # dev1 is a live member
        await _send(harness.endpoint, topic, 2, "dev1")
        assert await _pull_all(dev1, topic, {}) == ["dev1-0", "dev1-1"]  # committed: dev1 has stored offsets
        assert await _pull_all(base, topic, {}) == []  # the base passed them (committed 2)
    await asyncio.sleep(ALIVE_S + 0.5)  # dev1 silent: dead, its lane falls back to the base
    async with AsyncProducer(harness.endpoint, lane="dev1") as p:
        await p.send_batch([Message(topic, f"late-{i}".encode()) for i in range(5)])
    await _send(harness.endpoint, topic, 2)
    async with AsyncPullConsumer(harness.endpoint, group) as base:
        [queue] = await base.queues(topic)
        position, base_took = await base.committed(queue) or 0, []
        while len(base_took) < 4:  # the base stops after 4 of the 5 (the 2 base messages come after them)
            result = await base.pull(queue, position, max_messages=4 - len(base_took))
            assert result.next_offset > position, f"the base got only {base_took}"
            base_took += [m.body.decode() for m in result.messages]
            position = result.next_offset
        await base.commit(queue, position)
    assert base_took == ["late-0", "late-1", "late-2", "late-3"]  # nobody in dev1: the base's
    if restart:
        harness.restart()
    async with AsyncPullConsumer(harness.endpoint, group, lane="dev1") as dev1, \
            AsyncPullConsumer(harness.endpoint, group) as base:
        dev1_took = await _pull_all(dev1, topic, {})  # from its stored offsets
        assert dev1_took == ["late-4"], f"dev1 re-read what the base took: {dev1_took}"
        assert await _pull_all(base, topic, {}) == _lane(2, "base")  # dev1 is live again: late-4 stays dev1's
        await _send(harness.endpoint, topic, 3, "dev1")
        assert await _pull_all(dev1, topic, {}) == _lane(3, "dev1")
        assert await _pull_all(base, topic, {}) == []


@pytest.mark.broker_settings(client_silence_s=ALIVE_S)
def test_a_lane_member_back_with_stored_offsets_gets_only_what_the_base_did_not_take(harness, unique):
    asyncio.run(_back_with_offsets(harness, unique, "lane-back", restart=False))


@pytest.mark.broker_settings(client_silence_s=ALIVE_S)
def test_what_the_base_took_by_fallback_stays_the_bases_across_a_broker_restart(harness, unique):
    asyncio.run(_back_with_offsets(harness, unique, "lane-back-restart", restart=True))


@pytest.mark.broker_settings(client_silence_s=ALIVE_S)
def test_a_base_behind_its_lane_takes_none_of_what_the_lane_took_when_the_lane_dies(harness, unique):
    """The base reads late: dev1 took its messages and went away; the base, reading from its
    committed offset, gets the base messages and only the dev1 messages sent after dev1 left."""
    topic, group = unique("lane-behind"), unique("lane-behind-g")
    harness.conn.create_topic(topic, queues=1)

    async def scenario() -> None:
        async with AsyncPullConsumer(harness.endpoint, group, lane="dev1") as dev1:
            await _send(harness.endpoint, topic, 3, "dev1")
            await _send(harness.endpoint, topic, 2)
            assert await _pull_all(dev1, topic, {}) == _lane(3, "dev1")
        await asyncio.sleep(ALIVE_S + 0.5)  # dev1 silent: dead
        async with AsyncProducer(harness.endpoint, lane="dev1") as p:
            await p.send(Message(topic, b"late"))
        async with AsyncPullConsumer(harness.endpoint, group) as base:
            assert await _pull_all(base, topic, {}) == sorted(_lane(2, "base") + ["late"])

    asyncio.run(scenario())


@pytest.mark.broker_settings(client_silence_s=ALIVE_S)
@pytest.mark.parametrize("base_filter", ["lane IS NULL", "TAGS IS NULL OR TAGS <> 'skip'"])
def test_what_the_base_filter_passed_over_stays_the_lanes(harness, unique, base_filter):
    """A base consumer that takes no lane messages (lane_fallback=False sends `lane IS NULL`), or
    only some (a filter of its own), leaves the rest to dev1, which gets them when back with its
    stored offsets: nothing lost, nothing twice."""
    topic, group = unique("lane-filtered"), unique("lane-filtered-g")
    harness.conn.create_topic(topic, queues=1)
    sql = Filter.sql92(base_filter)

    async def scenario() -> None:
        async with AsyncPullConsumer(harness.endpoint, group, lane="dev1") as dev1:
            await _send(harness.endpoint, topic, 1, "dev1")
            assert await _pull_all(dev1, topic, {}) == ["dev1-0"]
        await asyncio.sleep(ALIVE_S + 0.5)  # dev1 silent: dead
        async with AsyncProducer(harness.endpoint, lane="dev1") as p, AsyncProducer(harness.endpoint, lane="dev2") as p2:
            for i in range(4):  # dev1's interleaved with dev2's (no member either), every other one tagged "skip"
                await p.send(Message(topic, f"late-{i}".encode(), tag="skip" if i % 2 else None))
                await p2.send(Message(topic, f"other-{i}".encode()))
        await _send(harness.endpoint, topic, 2)
        async with AsyncPullConsumer(harness.endpoint, group) as base:
            base_took = await _pull_all(base, topic, {}, filter=sql)
        async with AsyncPullConsumer(harness.endpoint, group, lane="dev1") as dev1:
            dev1_took = await _pull_all(dev1, topic, {})
        late = sorted(f"late-{i}" for i in range(4))
        assert not set(base_took) & set(dev1_took), (base_took, dev1_took)
        assert sorted(set(base_took + dev1_took) - {f"other-{i}" for i in range(4)} - set(_lane(2, "base"))) == late
        if base_filter == "lane IS NULL":
            assert dev1_took == late

    asyncio.run(scenario())


@pytest.mark.broker_settings(client_silence_s=ALIVE_S)
def test_a_push_consumer_back_in_its_lane_gets_none_of_what_the_base_took(harness, unique):
    """Push consumers (clustering: offsets): dev1 commits and leaves, the base takes dev1's next
    messages by fallback, dev1 comes back with its stored offsets: none of those again."""
    topic, group = _topic(harness, unique, "lane-push-back")
    got: dict[str, list[str]] = {"base": [], "dev1": []}

    def consumer(lane: str | None) -> AsyncPushConsumer:
        return AsyncPushConsumer(harness.endpoint, group, {topic: "*"}, lambda m: got[lane or "base"].append(m.body.decode()),
                                 lane=lane, mode="clustering", **PUSH)

    async def scenario() -> None:
        async with consumer(None):
            async with consumer("dev1"):
                await asyncio.sleep(1.0)
                await _send(harness.endpoint, topic, 3, "dev1")
                await async_wait_for(lambda: len(got["dev1"]) == 3, UNTIL_S, what="dev1's first 3")
                await asyncio.sleep(1.0)  # committed, and the base passed them
            await asyncio.sleep(ALIVE_S + 0.5)  # dev1 is gone: its lane falls back to the base
            async with AsyncProducer(harness.endpoint, lane="dev1") as p:
                await p.send_batch([Message(topic, f"late-{i}".encode()) for i in range(5)])
            await async_wait_for(lambda: len(got["base"]) >= 5, UNTIL_S, what="the late 5 at the base")
            await asyncio.sleep(1.0)  # committed
        async with consumer("dev1"):
            await asyncio.sleep(2.0)  # back, from its stored offsets: none of the late 5
            async with AsyncProducer(harness.endpoint, lane="dev1") as p:
                await p.send_batch([Message(topic, f"back-{i}".encode()) for i in range(2)])
            await async_wait_for(lambda: len(got["dev1"]) >= 5, UNTIL_S, what="the 2 sent after dev1 came back")
            await asyncio.sleep(0.5)
        assert sorted(got["base"]) == [f"late-{i}" for i in range(5)]
        assert sorted(got["dev1"]) == sorted(_lane(3, "dev1") + ["back-0", "back-1"])

    asyncio.run(scenario())
