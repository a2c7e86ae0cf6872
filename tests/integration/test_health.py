"""The standard grpc.health.v1 service on the broker's gRPC port (broker/api/health.py), asked as a
load balancer or Kubernetes' gRPC probe asks it: with grpc_health's own stubs, without credentials
(also on a broker run with --auth), on a replica, and while the broker drains."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import grpc
import pytest
from broker_process import BrokerProcess
from grpc_health.v1 import health_pb2, health_pb2_grpc
from harness import BrokerHarness
from mqwire import Conn, message
from waiting import wait_for

from rockmq.protocol import pb
from rockmq.protocol.conventions import BATCH_SERVICE, MESSAGING_SERVICE

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def check(endpoint: str, service: str = "") -> int:
    with grpc.insecure_channel(endpoint) as ch:
        return health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


@pytest.mark.parametrize("service", ["", MESSAGING_SERVICE, BATCH_SERVICE])
def test_a_ready_broker_is_serving(broker, service):
    assert check(broker.endpoint, service) == SERVING


def test_an_unknown_service_is_not_found(broker):
    with pytest.raises(grpc.RpcError) as e:
        check(broker.endpoint, "no.such.Service")
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


def test_health_checks_are_open_with_auth_on(auth_broker):
    """A probe carries no credentials: it is answered, while a data-plane call without them is not."""
    assert check(auth_broker.endpoint) == SERVING
    assert check(auth_broker.endpoint, MESSAGING_SERVICE) == SERVING
    conn = Conn(auth_broker.endpoint)
    try:
        assert conn.query_route("t").status.code == pb.UNAUTHORIZED  # no credentials
    finally:
        conn.close()


def test_watch_says_serving_at_once(broker):
    with grpc.insecure_channel(broker.endpoint) as ch:
        replies = health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert next(replies).status == SERVING
        replies.cancel()


def test_readiness_of_a_replica_follows_its_primary(tmp_path: Path):
    """A replica is ready while it follows its primary; cut off from it, it says why."""
    primary = BrokerHarness(tmp_path / "primary", replication="async").start()
    replica = BrokerHarness(tmp_path / "replica", replica_of=primary.endpoint).start()
    try:
        wait_for(lambda: replica.call(lambda: replica.services.health.reasons()) == [], 15, 0.1,
                 what="the replica ready")
        assert check(replica.endpoint) == SERVING
        primary.stop()
        wait_for(lambda: replica.call(lambda: replica.services.health.reasons())
                 == ["replica not connected to its primary"], 15, 0.1, what="the replica not ready")
        assert check(replica.endpoint) == NOT_SERVING
    finally:
        replica.stop()
        primary.stop()


def test_draining_is_not_serving_and_the_broker_exits_0(tmp_path: Path):
    """SIGTERM: a Watch hears NOT_SERVING, then the broker exits 0 well within the drain timeout."""
    b = BrokerProcess(tmp_path / "data", "--drain-timeout", "10").start()
    try:
        conn = Conn(b.endpoint)
        conn.send_ok(message("drained", "m"))
        conn.close()
        with grpc.insecure_channel(b.endpoint) as ch:
            replies = health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest(service=""), timeout=10)
            assert next(replies).status == SERVING
            assert b.proc is not None
            started = time.monotonic()
            b.proc.send_signal(signal.SIGTERM)
            assert next(replies).status == NOT_SERVING
            assert b.proc.wait(10) == 0
        assert time.monotonic() - started < 5
    finally:
        b.kill()
