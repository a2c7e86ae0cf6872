"""Auto-renew (what PushConsumers ask for): the broker keeps a delivery invisible while the
client is alive, the client's receipt handle stays valid, and renewal stops when it goes
silent or nacks. Timings are shortened through settings so this runs in seconds."""

from __future__ import annotations

import time

import pytest
from broker_process import BrokerProcess
from mqwire import META, Conn, message

from rockmq.protocol import pb, rpc

INVISIBLE_MS = 1500
SILENCE_S = 2.0


@pytest.fixture
def renewing_broker(tmp_path):
    b = BrokerProcess(tmp_path / "data", env={"ROCKMQ_AUTO_RENEW_INVISIBLE_MS": str(INVISIBLE_MS),
                                              "ROCKMQ_CLIENT_SILENCE_S": str(SILENCE_S)}).start()
    conn = Conn(b.endpoint)
    yield conn
    conn.close()
    b.kill()


def heartbeat(conn: Conn, group: str) -> None:
    reply = conn.mq.Heartbeat(rpc.HeartbeatRequest(group=pb.Resource(name=group), client_type=pb.PUSH_CONSUMER),
                              metadata=META, timeout=5)
    assert reply.status.code == pb.OK


def test_live_client_keeps_its_delivery_and_its_handle(renewing_broker):
    conn, topic, group = renewing_broker, "renew-live", "renew-live-g"
    conn.send_ok(message(topic, b"slow work"))
    code, [m] = conn.receive(group, topic, invisible_ms=None, auto_renew=True, poll_s=2)
    assert code == pb.OK and m.system_properties.invisible_duration.ToMilliseconds() == INVISIBLE_MS

    until = time.monotonic() + 3 * INVISIBLE_MS / 1000  # three invisible times of "processing"
    while time.monotonic() < until:
        heartbeat(conn, group)
        code, again = conn.receive(group, topic, poll_s=0.3)
        assert again == [], "a renewed delivery came back while its consumer was alive"
    reply = conn.ack(group, topic, m)  # the handle from the first delivery still works
    assert reply.status.code == pb.OK, reply


def test_silent_client_gets_its_message_redelivered(renewing_broker):
    conn, topic, group = renewing_broker, "renew-silent", "renew-silent-g"
    conn.send_ok(message(topic, b"consumer dies"))
    heartbeat(conn, group)
    code, [m] = conn.receive(group, topic, invisible_ms=None, auto_renew=True, poll_s=2)
    # No more heartbeats: after the silence limit renewal stops and the message comes back.
    again = conn.receive_n(group, topic, 1, within=SILENCE_S + 4 * INVISIBLE_MS / 1000)
    assert [x.system_properties.message_id for x in again] == [m.system_properties.message_id]
    assert again[0].system_properties.delivery_attempt == 2


def test_nack_stops_renewal(renewing_broker):
    conn, topic, group = renewing_broker, "renew-nack", "renew-nack-g"
    conn.send_ok(message(topic, b"fails once"))
    code, [m] = conn.receive(group, topic, invisible_ms=None, auto_renew=True, poll_s=2)
    reply = conn.change_invisible(group, topic, m.system_properties.receipt_handle, ms=300)
    assert reply.status.code == pb.OK
    t0 = time.monotonic()
    again = []
    while not again and time.monotonic() - t0 < 5:
        heartbeat(conn, group)  # alive, yet the nack's short backoff must win over renewal
        again = conn.receive(group, topic, poll_s=0.5)[1]
    assert again and again[0].system_properties.delivery_attempt == 2
    assert time.monotonic() - t0 < INVISIBLE_MS / 1000 + 1.5


def test_deliveries_cut_off_mid_reply_come_back_at_once(renewing_broker):
    conn, topic, group = renewing_broker, "renew-cut", "renew-cut-g"
    bodies = [f"{i:04d}".encode() * 16_000 for i in range(200)]  # 64 KB each: the reply outruns flow control
    for i in range(0, 200, 20):
        conn.send_ok(*(message(topic, b) for b in bodies[i:i + 20]))
    heartbeat(conn, group)
    req = rpc.ReceiveMessageRequest(group=pb.Resource(name=group),
                                    message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
                                    filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
                                    batch_size=200, auto_renew=True)
    req.long_polling_timeout.FromMilliseconds(1000)
    call = conn.mq.ReceiveMessage(req, metadata=META, timeout=10)
    assert next(call).status.code == pb.OK
    next(call)  # one message, then the client goes away
    call.cancel()
    # Still alive (heartbeating), yet what it never got must not stay invisible and renewed.
    got = []
    until = time.monotonic() + 3 * INVISIBLE_MS / 1000
    while len(got) < 150 and time.monotonic() < until:
        heartbeat(conn, group)
        got += conn.receive(group, topic, batch=200, poll_s=0.5)[1]
    assert len(got) >= 150, f"only {len(got)} of the cut-off deliveries came back"
