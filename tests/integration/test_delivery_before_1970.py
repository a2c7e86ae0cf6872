"""A delivery timestamp before 1970 is refused with ILLEGAL_DELIVERY_TIME (issue 20 §1.4, found by the
fuzzer): a transactional message with one (`nanos: -1` is enough) failed its whole SendMessage with
INTERNAL_ERROR, its half message's due time being stored unsigned; the request's other messages are
stored as before."""

from __future__ import annotations

import pytest
from mqwire import Conn, code_name, message

from rockmq.protocol import pb


@pytest.mark.parametrize(("kind", "seconds", "nanos"), [("TRANSACTION", 0, -1), ("TRANSACTION", -5, 0), ("DELAY", -5, 0)])
def test_a_delivery_time_before_1970_is_illegal(conn: Conn, unique, kind: str, seconds: int, nanos: int):
    topic = unique("before-1970")
    conn.create_topic(topic, types=(kind,))
    good, bad = message(topic, "good"), message(topic, "bad")
    for m in (good, bad):
        m.system_properties.message_type = pb.MessageType.Value(kind)
    if kind == "DELAY":
        good.system_properties.delivery_timestamp.GetCurrentTime()
    bad.system_properties.delivery_timestamp.seconds = seconds
    bad.system_properties.delivery_timestamp.nanos = nanos
    reply = conn.send(good, bad)
    assert [code_name(e.status.code) for e in reply.entries] == ["OK", "ILLEGAL_DELIVERY_TIME"], reply
    assert reply.entries[1].status.message == "delivery time is before 1970"
    assert code_name(reply.status.code) == "MULTIPLE_RESULTS"
