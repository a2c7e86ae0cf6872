"""Every writer stops at a coordinated primary's lease (issue 30 §3), not only sends: the gate is the
store's one write seam (`Store.refuse_writes_after`, which the Committer installs on a coordinated
primary; set here by hand on the real broker). Past it, sends, receives (their in-flight state), acks,
invisibility changes and offset commits answer HA_NOT_AVAILABLE, which clients retry; a background
writer (the reviver, here) skips its steps without a log line and does them once writes are taken
again."""

from __future__ import annotations

import logging
import math
import time

from mqwire import message

from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError

TOPIC, GROUP, PULLERS = "leased", "leased-readers", "leased-pullers"


def test_every_writer_is_refused_past_the_lease_and_background_writers_wait_quietly(harness, caplog):
    conn = harness.conn
    conn.create_topic(TOPIC)
    conn.send_ok(*(message(TOPIC, f"m{i}") for i in range(3)))
    code, held = conn.receive(GROUP, TOPIC, batch=1, invisible_ms=30_000)
    assert code == pb.OK and len(held) == 1
    code, reviving = conn.receive(GROUP, TOPIC, batch=1, invisible_ms=300)  # due back while writes are refused
    assert code == pb.OK and len(reviving) == 1
    assert conn.update_offset(PULLERS, TOPIC, 0, 0).status.code == pb.OK
    until = [0.0]  # the lease's end: passed
    harness.call(lambda: harness.services.ctx.store.refuse_writes_after(
        lambda: until[0], lambda: BrokerError(pb.HA_NOT_AVAILABLE, "not the primary now")))
    with caplog.at_level(logging.WARNING):
        assert conn.send(message(TOPIC, "refused")).status.code == pb.HA_NOT_AVAILABLE
        assert conn.receive(GROUP, TOPIC, batch=1)[0] == pb.HA_NOT_AVAILABLE
        assert conn.ack(GROUP, TOPIC, held[0]).status.code == pb.HA_NOT_AVAILABLE
        handle = held[0].system_properties.receipt_handle
        assert conn.change_invisible(GROUP, TOPIC, handle, ms=60_000).status.code == pb.HA_NOT_AVAILABLE
        assert conn.update_offset(PULLERS, TOPIC, 0, 1).status.code == pb.HA_NOT_AVAILABLE
        time.sleep(1.0)  # the reviver's turns come and go, refused
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]
    until[0] = math.inf  # renewed: writes taken again
    again = conn.receive_n(GROUP, TOPIC, 2, within=10, invisible_ms=30_000)
    bodies = sorted(m.body for m in again)
    assert bodies == sorted([reviving[0].body, b"m2"]), bodies  # revived once writes were taken, and the rest
    assert conn.ack(GROUP, TOPIC, held[0]).status.code == pb.OK
