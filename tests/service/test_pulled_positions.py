"""Pulls naming groups that do not exist keep no state (issue 20 §2.4): with auto-creation off a
client may name a new group in every pull, and the broker's table of how far each group's pulls got
grew by one entry per name, without end."""

from __future__ import annotations

import pytest
from mqwire import message

from rockmq.protocol import pb


@pytest.mark.broker_settings(auto_create_groups=False)
def test_pulls_of_made_up_groups_leave_no_entry(harness, unique):
    topic = unique("t")
    harness.conn.create_topic(topic, queues=1)
    harness.conn.send_ok(message(topic, "m"))
    for i in range(200):
        code, got, _ = harness.conn.pull(f"made-up-{i}", topic, 0, 0)
        assert code == pb.OK and len(got) == 1
    assert harness.call(lambda: len(harness.services.puller._pulled)) == 0
