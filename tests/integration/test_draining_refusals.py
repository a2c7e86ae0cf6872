"""What a draining broker answers (Broker.begin_drain, the first step of SIGTERM's drain), on the
real broker in this process: long polls end at once with nothing, new sends, receives, pulls and
stages are refused with the retriable PROXY_TIMEOUT, acks of what was received are still taken,
and health checks say NOT_SERVING."""

from __future__ import annotations

import threading
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from mqwire import message

from rockmq.protocol import pb

POLL_S = 10.0


def test_a_draining_broker_ends_long_polls_and_refuses_new_work(harness, unique):
    topic, empty, group = unique("drain"), unique("drain-empty"), unique("drain-g")
    conn = harness.conn
    conn.create_topic(empty, queues=1)
    conn.send_ok(message(topic, "before"))
    received = conn.receive_n(group, topic, 1)
    polls: dict[str, tuple[int, int, float]] = {}

    def long_receive() -> None:
        started = time.monotonic()
        code, got = conn.receive(unique("poll-g"), empty, poll_s=POLL_S)
        polls["receive"] = (code, len(got), time.monotonic() - started)

    def long_pull() -> None:
        started = time.monotonic()
        code, got, _ = conn.pull(unique("pull-g"), empty, 0, 0, poll_s=POLL_S)
        polls["pull"] = (code, len(got), time.monotonic() - started)

    waiting = [threading.Thread(target=long_receive), threading.Thread(target=long_pull)]
    for t in waiting:
        t.start()
    time.sleep(0.5)  # both are waiting now
    harness.call(harness.services.begin_drain)
    for t in waiting:
        t.join(POLL_S)
    for kind in ("receive", "pull"):
        code, count, took = polls[kind]
        assert count == 0 and took < POLL_S / 2, (kind, pb.Code.Name(code), took)

    assert conn.send(message(topic, "after")).status.code == pb.PROXY_TIMEOUT
    assert conn.receive(group, topic)[0] == pb.PROXY_TIMEOUT
    assert conn.pull(group, topic, 0, 0)[0] == pb.PROXY_TIMEOUT
    assert conn.stage(message(topic, "staged")).status.code == pb.PROXY_TIMEOUT
    assert conn.ack(group, topic, *received).status.code == pb.OK  # work under way finishes
    assert harness.call(harness.services.health.reasons) == ["draining"]
    with grpc.insecure_channel(harness.endpoint) as ch:
        status = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5).status
    assert status == health_pb2.HealthCheckResponse.NOT_SERVING
