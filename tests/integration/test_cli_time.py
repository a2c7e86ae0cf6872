"""The CLI's time commands: `message send --delay/--deliver-at`, `message recall`, `timer stats`."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

from test_cli import assert_one_line_error, ok, table

from rockmq.protocol import pb


def _handle(stdout: str) -> str:
    m = re.search(r"recall handle (\S+)", stdout)
    assert m, stdout
    return m.group(1)


def test_send_with_delay_arrives_when_due_and_counts_in_timer_stats(broker, conn, unique):
    topic, group = unique("cli-delay"), unique("cli-delay-g")
    conn.create_topic(topic, queues=1)
    before = time.time()
    out = ok(broker.cli("message", "send", topic, "soon", "--delay", "4000ms"))  # still pending after 3 more CLI calls
    assert "due at" in out and _handle(out)
    in_a_month = (datetime.now(UTC) + timedelta(days=30)).isoformat()
    far = ok(broker.cli("message", "send", topic, "far", "--deliver-at", in_a_month))

    stats = ok(broker.cli("timer", "stats"))
    pending = int(re.search(r"pending delayed messages:\s+(\d+)", stats).group(1))
    assert pending >= 2, stats
    assert re.search(r"next due:\s+\d{4}-", stats), stats
    assert table(stats, "LATENESS"), stats

    code, early = conn.receive(group, topic, poll_s=0)
    assert code == pb.MESSAGE_NOT_FOUND and not early, "a delayed message was visible before it was due"
    [m] = conn.receive_n(group, topic, 1, within=15)
    arrived = time.time()
    assert m.body == b"soon" and m.system_properties.message_type == pb.DELAY
    due_ms = m.system_properties.delivery_timestamp.ToMilliseconds()
    assert abs(due_ms - (before * 1000 + 4000)) < 1500, "the delay was not 4000 ms from the send"
    assert arrived * 1000 >= due_ms - 5
    conn.ack(group, topic, m)

    ok(broker.cli("message", "recall", topic, _handle(far)))
    after = ok(broker.cli("timer", "stats"))
    moved = int(re.search(r"moved since start:\s+(\d+)", after).group(1))
    assert moved >= 1, after


def test_deliver_at_in_the_past_is_delivered_at_once(broker, conn, unique):
    topic, group = unique("cli-past"), unique("cli-past-g")
    conn.create_topic(topic, queues=1)
    out = ok(broker.cli("message", "send", topic, "late already", "--deliver-at",
                        datetime(2020, 1, 1, tzinfo=UTC).isoformat()))
    assert "at offset 0" in out, out
    [m] = conn.receive_n(group, topic, 1, within=5)
    assert m.body == b"late already"


def test_recall_twice_and_bad_time_flags_fail_with_one_line(broker, conn, unique):
    topic = unique("cli-recall")
    conn.create_topic(topic, queues=1)
    handle = _handle(ok(broker.cli("message", "send", topic, "x", "--delay", "1h")))
    assert "recalled" in ok(broker.cli("message", "recall", topic, handle))
    assert_one_line_error(broker.cli("message", "recall", topic, handle), 1, "NOT_FOUND")
    assert_one_line_error(broker.cli("message", "recall", topic, "garbage"), 1, "recall handle")
    assert_one_line_error(broker.cli("message", "send", topic, "x", "--delay", "10parsecs"), 2, "invalid delay")
    assert_one_line_error(broker.cli("message", "send", topic, "x", "--deliver-at", "tomorrow"), 2, "ISO 8601")
    naive = broker.cli("message", "send", topic, "x", "--deliver-at", "2030-11-23T12:00")  # local time? UTC? neither
    assert_one_line_error(naive, 2, "no zone", "Z for UTC", "+01:00")
    assert_one_line_error(broker.cli("message", "send", topic, "x", "--delay", "1s", "--message-group", "g"), 2,
                          "--message-group")
    assert_one_line_error(broker.cli("message", "send", topic, "x", "--delay", "400d"), 1, "ILLEGAL_DELIVERY_TIME")
