"""Priority messages (docs/priority.md) on a real broker, through rockmq's client and CLI: a
PRIORITY topic's queues are whole lanes of its levels, a backlog is consumed highest priority
first by POP receives, and sends are refused with the range, or the type, that was wrong."""

from __future__ import annotations

import asyncio
import time

import pytest

from rockmq.client import AsyncProducer, AsyncSimpleConsumer, Message
from rockmq.client.errors import IllegalArgument


def ok(result) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result.stdout


def one_line_error(result) -> str:
    assert result.returncode != 0 and result.stdout == "", (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_topic_create_rounds_queues_to_whole_levels(broker, unique):
    topic, small = unique("prio-create"), unique("prio-small")
    out = ok(broker.cli("topic", "create", topic, "--types", "PRIORITY", "--queues", "12"))
    assert "20 queues" in out and "(PRIORITY)" in out and "priorities 0..9" in out  # 2 lanes of the default 10 levels
    described = ok(broker.cli("topic", "describe", topic))
    assert "priorities 0..9" in described.splitlines()[0]
    out = ok(broker.cli("topic", "create", small, "--types", "PRIORITY", "--max-priority", "2"))
    assert "9 queues" in out and "priorities 0..2" in out  # the default 8 queues, rounded up to 3 lanes of 3 levels
    assert "max_priority must be 1..99" in one_line_error(
        broker.cli("topic", "create", unique("prio-big"), "--types", "PRIORITY", "--max-priority", "100"))
    assert "9 queues" in ok(broker.cli("topic", "update", small, "--queues", "7"))  # grows by whole lanes only


def test_backlog_goes_out_highest_priority_first(broker, unique):
    topic, group = unique("prio-order"), unique("prio-order-g")
    ok(broker.cli("topic", "create", topic, "--types", "PRIORITY", "--max-priority", "4", "--queues", "10"))

    async def scenario():
        async with AsyncProducer(broker.endpoint) as p:
            sent = [Message(topic, f"{i}".encode(), priority=i % 5) for i in range(100)]
            sent.append(Message(topic, b"none"))  # no priority on a PRIORITY topic: refused as NORMAL
            with pytest.raises(IllegalArgument) as refused:
                await p.send(sent.pop())
            assert refused.value.status_name == "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE"
            assert "accepts PRIORITY" in str(refused.value)
            receipts = await p.send_batch(sent)
        assert {r.queue_id for r in receipts} == {-1}  # the broker picks a PRIORITY message's queue
        got: list = []
        async with AsyncSimpleConsumer(broker.endpoint, group, {topic: "*"}, await_s=1) as c:
            deadline = time.monotonic() + 20
            while len(got) < 100 and time.monotonic() < deadline:
                batch = await c.receive(7, invisible_s=30)
                for m in batch:
                    await c.ack(m)
                got += batch
        levels = [m.priority for m in got]
        assert len(got) == 100 and levels == sorted(levels, reverse=True), levels
        assert {m.queue_id % 5 for m in got if m.priority == 4} == {4}

    asyncio.run(scenario())


def test_out_of_range_and_misplaced_priorities_are_refused(broker, unique):
    topic, plain = unique("prio-range"), unique("prio-plain")
    ok(broker.cli("topic", "create", topic, "--types", "PRIORITY"))
    ok(broker.cli("topic", "create", plain))

    async def scenario():
        async with AsyncProducer(broker.endpoint) as p:
            with pytest.raises(IllegalArgument) as high:
                await p.send(Message(topic, b"x", priority=12))
            assert high.value.status_name == "BAD_REQUEST" and "priority must be 0..9, not 12" in str(high.value)
            with pytest.raises(IllegalArgument) as elsewhere:
                await p.send(Message(plain, b"x", priority=1))
            assert elsewhere.value.status_name == "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE"
            assert "does not accept PRIORITY" in str(elsewhere.value)
            assert (await p.send(Message(topic, b"x", priority=9))).offset == 0

    asyncio.run(scenario())


def test_cli_send_with_priority(broker, unique):
    topic = unique("prio-cli")
    ok(broker.cli("topic", "create", topic, "--types", "PRIORITY", "--max-priority", "3"))
    ok(broker.cli("message", "send", topic, "urgent", "--priority", "3"))
    assert "priority must be 0..3, not 7" in one_line_error(broker.cli("message", "send", topic, "x", "--priority", "7"))
    assert "--priority cannot be combined" in one_line_error(
        broker.cli("message", "send", topic, "x", "--priority", "1", "--message-group", "g"))
    described = ok(broker.cli("topic", "describe", topic, "--json"))
    assert '"maxPriority": 3' in described or '"max_priority": 3' in described


def test_push_consumer_by_offsets_fetches_higher_levels_first(broker, unique):
    """rockmq's push consumer pulls by offsets: a queue of a lower level waits while one of a higher
    level has messages unfinished or waiting. Before a queue's first message it does not know its
    level: that first pull asks for one message, the one a lower level may hand out early."""
    from rockmq.client.push import AsyncPushConsumer

    topic, group = unique("prio-push"), unique("prio-push-g")
    ok(broker.cli("topic", "create", topic, "--types", "PRIORITY", "--max-priority", "2", "--queues", "3"))
    handled: list[int] = []

    async def handler(m):
        handled.append(m.priority)
        await asyncio.sleep(0.001)

    async def scenario():
        async with AsyncProducer(broker.endpoint) as p:
            await p.send_batch([Message(topic, f"{i}".encode(), priority=(2 if i % 10 == 0 else 1 if i % 10 == 1 else 0))
                                for i in range(300)])
        c = AsyncPushConsumer(broker.endpoint, group, {topic: "*"}, handler, concurrency=1, batch_size=8,
                              heartbeat_s=0.3, commit_interval_s=0.3, poll_s=1.0, shutdown_timeout_s=2.0)
        await c.start()
        try:
            deadline = time.monotonic() + 20
            while len(handled) < 300 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        finally:
            await c.close()

    asyncio.run(scenario())
    assert sorted(handled) == [0] * 240 + [1] * 30 + [2] * 30
    last_high = max(i for i, level in enumerate(handled) if level == 2)
    last_mid = max(i for i, level in enumerate(handled) if level == 1)
    assert handled[:last_high].count(0) <= 1 and handled[:last_high].count(1) <= 1, handled[:last_high + 1]
    assert handled[:last_mid].count(0) <= 1, handled[:last_mid + 1]


def test_wire_types_a_priority_topic_takes(broker, conn, unique):
    """On the wire: a PRIORITY message without a priority is of the lowest level; a message with a
    priority and no declared type is PRIORITY; a NORMAL one is refused."""
    from mqwire import message

    from rockmq.protocol import pb

    topic, group = unique("prio-wire"), unique("prio-wire-g")
    ok(broker.cli("topic", "create", topic, "--types", "PRIORITY", "--max-priority", "1"))
    unsaid = message(topic, "unsaid")
    unsaid.system_properties.message_type = pb.PRIORITY
    undeclared = message(topic, "undeclared")
    undeclared.system_properties.ClearField("message_type")
    undeclared.system_properties.priority = 1
    conn.send_ok(unsaid, undeclared)
    normal = conn.send(message(topic, "normal"))
    assert normal.entries[0].status.code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, normal
    got = conn.receive_n(group, topic, 2)
    assert [(m.body, m.system_properties.queue_id) for m in got] == [(b"undeclared", 1), (b"unsaid", 0)]


def test_max_priority_survives_a_restart(fresh_broker, unique):
    topic = unique("prio-restart")
    ok(fresh_broker.cli("topic", "create", topic, "--types", "PRIORITY", "--max-priority", "4"))
    fresh_broker.restart()
    assert "priorities 0..4" in ok(fresh_broker.cli("topic", "describe", topic))
    assert "priority must be 0..4, not 5" in one_line_error(
        fresh_broker.cli("message", "send", topic, "x", "--priority", "5"))
