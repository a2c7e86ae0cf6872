"""Retention frees the retry entries of messages that are gone (an idle group's, which its next
receive would skip) a bounded scan at a time, resuming where the last sweep stopped; the entries
of stored messages stay."""

from __future__ import annotations

import time

import pytest
from mqwire import message

from rockmq.broker import retention

GONE_TOPIC = 999_999  # a topic deleted since its messages were delivered


@pytest.mark.broker_settings(retention_s=1, retention_check_s=3600)  # only the sweeps the test runs
def test_retries_of_removed_messages_go_a_bounded_scan_at_a_time(harness, monkeypatch):
    conn = harness.conn
    conn.create_topic("kept", queues=1)
    conn.create_group("idle")
    conn.send_ok(*(message("kept", f"old {i}") for i in range(3)))  # removed by the first sweep
    time.sleep(1.1)
    conn.send_ok(message("kept", "still stored"))  # offset 3
    broker = harness.services
    topic, group = harness.topic("kept"), harness.group("idle")
    assert topic is not None and group is not None

    def requeue() -> None:
        batch = broker.ctx.store.batch()
        broker.reviver.requeue(batch, group.id, topic.id, 0, 3, 1)  # a stored message: it stays
        for offset in range(3):
            broker.reviver.requeue(batch, group.id, topic.id, 0, offset, 1)
        for offset in range(22):
            broker.reviver.requeue(batch, group.id, GONE_TOPIC, 0, offset, 1)
        broker.ctx.store.write(batch)

    def retries() -> int:
        return sum(1 for _ in broker.ctx.store.scan_prefix("retry", b""))

    harness.call(requeue)
    monkeypatch.setattr(retention, "RETRY_SCAN", 10)
    left = []
    for _ in range(4):
        harness.run(broker.retention.sweep())
        left.append(harness.call(retries))
    assert left == [17, 7, 1, 1]  # 10 looked at per sweep; the third reaches the end, the fourth starts over
    assert broker.retention.freed_retries == 25 and broker.retention.removed == 3
