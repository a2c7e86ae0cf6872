"""The in-process broker harness itself: real gRPC, short timings, state visible, restartable."""

import pytest
from mqwire import message


def test_a_send_is_visible_in_the_store(harness, unique):
    topic = unique("t")
    harness.conn.send_ok(message(topic, "hello"))
    assert harness.topic(topic).queues == 8
    assert [m.body for m in harness.stored(topic)] == [b"hello"]


@pytest.mark.broker_settings(default_queues=2, max_attempts=5)
def test_settings_overrides_come_from_the_marker(harness):
    assert (harness.settings.default_queues, harness.settings.max_attempts) == (2, 5)
    assert harness.settings.txn_check_first_s < 1  # the short timings stay


def test_restart_keeps_the_data(harness, unique):
    topic = unique("t")
    harness.conn.send_ok(message(topic, "before"))
    harness.restart()
    harness.conn.send_ok(message(topic, "after"))
    assert sorted(m.body for m in harness.stored(topic)) == [b"after", b"before"]  # two queues maybe: no order
