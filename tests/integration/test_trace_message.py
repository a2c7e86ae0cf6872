"""Tracing messages on a real broker (issue 28 §5): `rockmq message trace` shows what happened to a
message: stored, delivered, acknowledged; its invisible time changed, redelivered and moved to the
dead-letter queue; a delayed message's timer fired, then recalled ones; transactions committed,
rolled back and checked. With trace_enabled off, only the store is shown."""

from __future__ import annotations

import asyncio
import json

import pytest
from broker_process import BrokerProcess
from mqwire import CLIENT_ID, Conn, message
from waiting import wait_for

from rockmq.client import AsyncProducer, Message
from rockmq.protocol import pb

FAST_CHECKS = {"ROCKMQ_TXN_CHECK_FIRST_S": "1", "ROCKMQ_TXN_CHECK_INTERVAL_S": "1", "ROCKMQ_TXN_CHECK_MAX": "1"}


def events(broker, topic: str, message_id: str) -> list[dict]:
    result = broker.cli("message", "trace", topic, message_id, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["events"]


def kinds(broker, topic: str, message_id: str) -> list[str]:
    return [e["event"] for e in events(broker, topic, message_id)]


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory):
    """A private broker that checks transactions after 1 s and rolls back after one check."""
    b = BrokerProcess(tmp_path_factory.mktemp("traced"), env=FAST_CHECKS).start()
    yield b
    b.stop()


def test_stored_delivered_acked(broker, conn, unique):
    topic, group = unique("trace"), unique("trace-g")
    (sent,) = conn.send_ok(message(topic, "hello"))
    (got,) = conn.receive_n(group, topic, 1)
    conn.ack(group, topic, got)
    timeline = events(broker, topic, sent.message_id)
    assert [e["event"] for e in timeline] == ["stored", "delivered", "acked"]
    stored, delivered, acked = timeline
    assert delivered["group"] == acked["group"] == group and delivered["client_id"] == CLIENT_ID
    assert delivered["attempt"] == acked["attempt"] == 1
    assert stored["offset"] == delivered["offset"] == got.system_properties.queue_offset
    assert stored["at"] <= delivered["at"] <= acked["at"]
    table = broker.cli("message", "trace", topic, sent.message_id).stdout.splitlines()
    assert table[0].split() == ["TIME", "EVENT", "WHERE", "GROUP", "CLIENT", "ATTEMPT"]
    assert [line.split()[1] for line in table[1:]] == ["stored", "delivered", "acked"]


def test_one_event_covers_a_receive_and_an_ack_of_many(broker, conn, unique):
    """A receive and an ack of a run of messages each write one event for the run: every message
    of it shows both, a message past it neither."""
    topic, group = unique("trace-run"), unique("trace-run-g")
    conn.create_topic(topic, queues=1)
    sent = conn.send_ok(*(message(topic, f"m{i}") for i in range(5)))
    got = conn.receive_n(group, topic, 5)
    assert [m.system_properties.queue_offset for m in got] == list(range(5))
    conn.ack(group, topic, *got[1:4])
    (later,) = conn.send_ok(message(topic, "later"))
    acked, unacked = ["stored", "delivered", "acked"], ["stored", "delivered"]
    assert [kinds(broker, topic, s.message_id) for s in sent] == [unacked, acked, acked, acked, unacked]
    assert kinds(broker, topic, later.message_id) == ["stored"]


def test_invisible_time_redelivery_and_the_dead_letter_queue(broker, conn, unique):
    topic, group = unique("trace-dlq"), unique("trace-dlq-g")
    conn.create_group(group, max_attempts=2)
    (sent,) = conn.send_ok(message(topic, "poison"))
    (first,) = conn.receive_n(group, topic, 1, invisible_ms=60_000)
    assert conn.change_invisible(group, topic, first.system_properties.receipt_handle, ms=300).status.code == pb.OK
    (again,) = conn.receive_n(group, topic, 1, invisible_ms=300)
    assert again.system_properties.delivery_attempt == 2
    wait_for(lambda: "dead-lettered" in kinds(broker, topic, sent.message_id), 15, 0.2, what="moved to the DLQ")
    timeline = events(broker, topic, sent.message_id)
    assert [e["event"] for e in timeline] == ["stored", "delivered", "invisible-changed", "redelivered", "dead-lettered"]
    assert [e["attempt"] for e in timeline[1:4]] == [1, 1, 2] and timeline[-1]["group"] == group
    assert kinds(broker, f"%DLQ%{group}", sent.message_id) == ["stored"]  # the copy's own life starts there


def test_a_delayed_message_fires_and_a_recalled_one_never(broker, unique):
    topic = unique("trace-delay")
    fired = broker.cli("message", "send", topic, "later", "--delay", "500ms")
    assert fired.returncode == 0, fired.stderr
    message_id = fired.stdout.split()[1]
    wait_for(lambda: broker.cli("message", "get", topic, message_id).returncode == 0, 10, 0.2, what="the timer fired")
    assert kinds(broker, topic, message_id) == ["stored", "timer-fired"]
    recalled = broker.cli("message", "send", topic, "never", "--delay", "1h").stdout.split()
    assert broker.cli("message", "recall", topic, recalled[-1]).returncode == 0
    timeline = events(broker, topic, recalled[1])
    assert [e["event"] for e in timeline] == ["recalled"] and timeline[0]["offset"] == -1


def test_transactions_committed_rolled_back_and_checked(traced, unique):
    topic = unique("trace-txn")

    async def scenario() -> tuple[str, str, str]:
        async with AsyncProducer(traced.endpoint) as p:
            kept = await p.send_transactional(Message(topic, b"kept"))
            dropped = await p.send_transactional(Message(topic, b"dropped"))
            orphan = await p.send_transactional(Message(topic, b"orphan"))  # nobody ends it: checked, then given up
            await kept.commit()
            await dropped.rollback()
        return kept.message_id, dropped.message_id, orphan.message_id

    kept, dropped, orphan = asyncio.run(scenario())
    assert kinds(traced, topic, kept) == ["stored", "committed"]
    assert kinds(traced, topic, dropped) == ["rolled-back"]
    wait_for(lambda: broker_says(traced, topic, orphan) == ["checked", "rolled-back"], 15, 0.2,
             what="checked once, then rolled back")


def broker_says(broker, topic: str, message_id: str) -> list[str]:
    result = broker.cli("message", "trace", topic, message_id, "--json")
    return [e["event"] for e in json.loads(result.stdout)["events"]] if result.returncode == 0 else []


def test_off_records_nothing_but_the_store(tmp_path, unique):
    b = BrokerProcess(tmp_path / "data", "--no-trace").start()
    try:
        conn = Conn(b.endpoint)
        (sent,) = conn.send_ok(message("quiet", "x"))
        conn.ack("g", "quiet", *conn.receive_n("g", "quiet", 1))
        assert kinds(b, "quiet", sent.message_id) == ["stored"]
        conn.close()
    finally:
        b.stop()
