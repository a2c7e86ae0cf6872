"""A group's consume mode at the service level: a refused receive writes nothing (no mode, no
filter registration), and a replica checks the mode without storing one."""

from __future__ import annotations

from mqwire import message

from rockmq.protocol import pb


def test_a_refused_receive_writes_nothing(harness, unique):
    topic, offsets, fresh = unique("t"), unique("offsets"), unique("fresh")
    harness.conn.create_topic(topic, queues=1)
    harness.conn.send_ok(message(topic, "m", tag="a"))
    assert harness.conn.update_offset(offsets, topic, 0, 1).status.code == pb.OK

    # An offset group: a filtered POP receive is refused before its filter is registered.
    code, got = harness.conn.receive(offsets, topic, tag="a")
    assert code == pb.FORBIDDEN and not got
    assert harness.call(lambda: len(harness.services.subscriptions)) == 0
    assert harness.group(offsets).consume_mode == "offset"

    # A new group: a receive refused for its filter or its invisible time does not fix its mode.
    code, _ = harness.conn.receive(fresh, topic, sql="a >")
    assert code == pb.ILLEGAL_FILTER_EXPRESSION
    code, _ = harness.conn.receive(fresh, topic, invisible_ms=0)
    assert code == pb.ILLEGAL_INVISIBLE_TIME
    assert harness.group(fresh).consume_mode == ""
    assert harness.conn.pull(fresh, topic, 0, 0)[0] == pb.OK  # so offsets are still open to it
    assert harness.group(fresh).consume_mode == "offset"
