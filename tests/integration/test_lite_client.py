"""rockmq's own client and tools with lite topics, against a real broker (issue 29 §4): lite
messages sent and received through subscribe_lite / unsubscribe_lite (simple consumer, push
consumer in pop mode, sync wrappers), acks and invisible-time changes of lite messages, and the
CLI: send --lite-topic, topic describe --lite (paged), message tail --lite-topic, topic create
--lite-topic-ttl, group create --lite-wildcard."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from broker_process import BrokerProcess
from mqwire import Conn
from test_cli import assert_one_line_error, ok, table

from rockmq.client import (
    AsyncProducer,
    AsyncPushConsumer,
    AsyncSimpleConsumer,
    Message,
    Producer,
    ReceivedMessage,
    SimpleConsumer,
)
from rockmq.client.errors import QuotaExceeded
from rockmq.protocol import pb


def lite_topic(conn, unique, prefix: str) -> str:
    topic = unique(prefix)
    conn.create_topic(topic, queues=1, types=("LITE",))
    return topic


async def _receive(consumer: AsyncSimpleConsumer, want: int, within: float = 10.0, ack: bool = True) -> list[ReceivedMessage]:
    got: list[ReceivedMessage] = []
    deadline = time.monotonic() + within
    while len(got) < want and time.monotonic() < deadline:
        batch = await consumer.receive(32, invisible_s=30)
        if ack and batch:
            assert await consumer.ack_many(batch) == []
        got += batch
    return got


def test_a_simple_consumer_receives_only_its_lite_topics_in_order_and_acks_them(broker, conn, unique):
    topic, group = lite_topic(conn, unique, "lc-simple"), unique("lc-simple-g")

    async def scenario() -> None:
        async with AsyncSimpleConsumer(broker.endpoint, group, {topic: "*"}, await_s=1) as consumer:
            await consumer.subscribe_lite("s1")
            await consumer.subscribe_lite("s2")
            started = time.monotonic()
            async with AsyncProducer(broker.endpoint) as producer:
                for i in range(3):
                    for name in ("s1", "s2", "other"):
                        receipt = await producer.send(Message(topic, f"{name}-{i}".encode(), lite_topic=name))
                        assert receipt.offset == i  # its offset in its lite topic
            got = await _receive(consumer, 6)
            assert time.monotonic() - started < 5 + 3  # promptly, not at the 30-s resync
            assert sorted(m.body for m in got) == sorted(f"{n}-{i}".encode() for n in ("s1", "s2") for i in range(3))
            for name in ("s1", "s2"):
                assert [m.body for m in got if m.lite_topic == name] == [f"{name}-{i}".encode() for i in range(3)]
            assert all(m.topic == topic for m in got)
            await consumer.unsubscribe_lite("s1")
            async with AsyncProducer(broker.endpoint) as producer:
                await producer.send(Message(topic, b"s1-late", lite_topic="s1"))
                await producer.send(Message(topic, b"s2-late", lite_topic="s2"))
            later = await _receive(consumer, 2, within=4)
            assert [m.body for m in later] == [b"s2-late"]

    asyncio.run(scenario())


def test_change_invisible_duration_redelivers_a_lite_message_with_its_lite_topic(broker, conn, unique):
    topic, group = lite_topic(conn, unique, "lc-cid"), unique("lc-cid-g")
    with SimpleConsumer(broker.endpoint, group, {topic: "*"}, await_s=1) as consumer:
        consumer.subscribe_lite("again")
        with Producer(broker.endpoint) as producer:
            producer.send(Message(topic, b"first", lite_topic="again"))
            producer.send(Message(topic, b"second", lite_topic="again"))

        def receive_some() -> list[ReceivedMessage]:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                got = consumer.receive(32, invisible_s=30)
                if got:
                    return got
            raise AssertionError("nothing received")

        first = receive_some()
        assert first[0].body == b"first" and first[0].lite_topic == "again"
        for m in first:  # all of it back at once
            assert consumer.change_invisible_duration(m, 0).lite_topic == "again"
        again = receive_some()
        assert again[0].body == b"first" and again[0].lite_topic == "again" and again[0].delivery_attempt == 2
        for m in again:
            consumer.ack(m)


def test_a_push_consumer_in_pop_mode_handles_its_lite_topic_in_order(broker, conn, unique):
    topic, group = lite_topic(conn, unique, "lc-push"), unique("lc-push-g")
    handled: list[tuple[str | None, bytes]] = []

    async def handler(m: ReceivedMessage) -> None:
        handled.append((m.lite_topic, m.body))

    async def scenario() -> None:
        async with AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, handler, mode="pop", poll_s=1) as consumer:
            await consumer.subscribe_lite("chat-1")
            async with AsyncProducer(broker.endpoint) as producer:
                for i in range(5):
                    await producer.send(Message(topic, f"{i}".encode(), lite_topic="chat-1"))
                await producer.send(Message(topic, b"not mine", lite_topic="chat-2"))
            deadline = time.monotonic() + 10
            while len(handled) < 5 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)
        assert handled == [("chat-1", f"{i}".encode()) for i in range(5)]

    asyncio.run(scenario())


def test_cli_sends_lists_and_tails_lite_topics(broker, conn, unique):
    topic, group = unique("lc-cli"), unique("lc-cli-g")
    out = ok(broker.cli("topic", "create", topic, "--types", "LITE", "--lite-topic-ttl", "3600"))
    assert f"created topic {topic}" in out and "3600 s" in out, out
    for i in range(3):
        out = ok(broker.cli("message", "send", topic, f"a-{i}", "--lite-topic", "alpha"))
        assert f"to lite topic alpha of {topic} at offset {i}" in out, out
    ok(broker.cli("message", "send", topic, "b-0", "--lite-topic", "beta"))

    rows = table(ok(broker.cli("topic", "describe", topic, "--lite")), "NAME")
    assert [(r[0], r[3], r[4]) for r in rows] == [("alpha", "0", "3"), ("beta", "0", "1")]
    assert all(int(r[2]) >= 65_536 for r in rows)
    first = ok(broker.cli("topic", "describe", topic, "--lite", "--limit", "1"))
    assert "--after alpha" in first and "beta" not in first, first
    rest = ok(broker.cli("topic", "describe", topic, "--lite", "--after", "alpha"))
    assert [r[0] for r in table(rest, "NAME")] == ["beta"] and "--after" not in rest
    listed = json.loads(ok(broker.cli("topic", "describe", topic, "--lite", "--json")))
    assert [t["name"] for t in listed["lite_topics"]] == ["alpha", "beta"] and listed["more"] is False
    assert "lite topics: 2" in ok(broker.cli("topic", "describe", topic))

    out = ok(broker.cli("message", "tail", topic, "--lite-topic", "alpha", "--group", group, "--count", "3", "--timeout", "5"))
    assert [ln.split()[-1] for ln in out.splitlines() if ln.strip()] == ["a-0", "a-1", "a-2"]
    assert all(" lite=alpha " in ln for ln in out.splitlines() if ln.strip())
    again = ok(broker.cli("message", "tail", topic, "--lite-topic", "alpha", "--group", group, "--timeout", "1"))
    assert again.strip() == "", "the group's position was committed: nothing again"
    assert_one_line_error(broker.cli("message", "tail", topic, "--lite-topic", "gamma", "--group", group), 1,
                          "no lite topic gamma")


def test_cli_refuses_what_a_lite_message_cannot_carry_and_a_ttl_without_lite(broker, conn, unique):
    topic = lite_topic(conn, unique, "lc-refuse")
    assert_one_line_error(broker.cli("message", "send", topic, "x", "--lite-topic", "s", "--message-group", "g"), 1,
                          "cannot have a message group")
    assert_one_line_error(broker.cli("message", "send", topic, "x", "--lite-topic", "s", "--delay", "5s"), 1,
                          "cannot have a delivery time")
    assert_one_line_error(broker.cli("topic", "create", unique("lc-ttl"), "--lite-topic-ttl", "60"), 2, "--types LITE")
    assert_one_line_error(broker.cli("topic", "describe", topic, "--after", "x"), 2, "add --lite")


def test_cli_creates_a_lite_wildcard_group(broker, unique):
    group = unique("lc-wild")
    assert "lite wildcard" in ok(broker.cli("group", "create", group, "--lite-wildcard"))
    assert "lite wildcard" in ok(broker.cli("group", "describe", group))


@pytest.fixture(scope="module")
def small_quotas(tmp_path_factory):
    """A broker whose lite quotas are small: 3 lite subscriptions per client, 2 lite topics per LITE topic."""
    b = BrokerProcess(tmp_path_factory.mktemp("lite-quota"), "--lite-subscription-quota", "3",
                      "--max-lite-topics-per-topic", "2").start()
    yield b
    b.stop()


def test_quota_refusals_are_the_clients_quota_error(small_quotas, unique):
    conn = Conn(small_quotas.endpoint)
    topic, group = lite_topic(conn, unique, "lc-quota"), unique("lc-quota-g")
    conn.close()

    async def scenario() -> None:
        async with AsyncSimpleConsumer(small_quotas.endpoint, group, {topic: "*"}) as consumer:
            for name in ("q1", "q2", "q3"):
                await consumer.subscribe_lite(name)
            with pytest.raises(QuotaExceeded) as refused:
                await consumer.subscribe_lite("q4")
            assert refused.value.code == pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED and not refused.value.retriable
            assert consumer.lite.names(topic) == {"q1", "q2", "q3"}
        async with AsyncProducer(small_quotas.endpoint) as producer:
            await producer.send(Message(topic, b"1", lite_topic="t1"))
            await producer.send(Message(topic, b"2", lite_topic="t2"))
            with pytest.raises(QuotaExceeded) as refused:
                await producer.send(Message(topic, b"3", lite_topic="t3"))
            assert refused.value.code == pb.LITE_TOPIC_QUOTA_EXCEEDED

    asyncio.run(scenario())
