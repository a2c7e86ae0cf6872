"""The tag sets POP receives wait for are bounded (issue 20 §2.4): each receive under a tag filter
not seen before left an event for its tags until a message carrying one arrived — a client naming
new tags in every receive (one that answers MESSAGE_NOT_FOUND at once will do) grew the table
without end. A receive still waiting keeps its event and is woken by its tags."""

from __future__ import annotations

import threading

from mqwire import message
from waiting import wait_for

from rockmq.broker.arrivals import MAX_IDLE_TAG_SETS
from rockmq.protocol import pb


def test_tag_sets_nobody_waits_for_are_dropped(harness, unique):
    conn = harness.conn
    topic, group = unique("t"), unique("g")
    conn.create_topic(topic, queues=1)
    conn.create_group(group)
    got: list[tuple[int, list[pb.Message]]] = []
    waiting = threading.Thread(target=lambda: got.append(conn.receive(group, topic, tag="awaited", poll_s=20)))
    waiting.start()
    arrivals = harness.services.ctx.logs.arrivals
    tid = harness.topic(topic).id
    wait_for(lambda: harness.call(lambda: frozenset({"awaited"}) in arrivals._receives.get(tid, {})), 10,
             what="the receive waiting for its tag")
    for i in range(3 * MAX_IDLE_TAG_SETS):
        code, _ = conn.receive(group, topic, tag=f"tag-{i}||other-{i}", poll_s=0)
        assert code == pb.MESSAGE_NOT_FOUND
    assert harness.call(lambda: len(arrivals._receives.get(tid, {}))) <= MAX_IDLE_TAG_SETS + 1
    conn.send_ok(message(topic, "for the waiting receive", tag="awaited"))
    waiting.join(20)
    assert got and got[0][0] == pb.OK and [m.body for m in got[0][1]] == [b"for the waiting receive"]
