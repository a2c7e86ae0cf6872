"""A consumer whose tag filter skips a long backlog finds the first match without waiting out
its long poll (a receive looks at a bounded slice of each queue at a time)."""

from __future__ import annotations

import time

from mqwire import message

from rockmq.protocol import pb


def test_match_behind_a_long_filtered_backlog_arrives_at_once(conn, unique):
    topic, group = unique("filter-backlog"), unique("filter-backlog-g")
    conn.create_topic(topic, queues=1)
    for _ in range(10):
        conn.send_ok(*(message(topic, b"skip me", tag="noise") for _ in range(500)))
    wanted = conn.send_ok(message(topic, b"the one", tag="signal"))[0]
    t0 = time.monotonic()
    code, got = conn.receive(group, topic, tag="signal", poll_s=5)
    assert code == pb.OK and [m.system_properties.message_id for m in got] == [wanted.message_id]
    assert time.monotonic() - t0 < 2.5, "the receive waited out its long poll before looking further"
