"""The plaintext listener beside TLS serves the client data plane only (issue 32 §8): with --auth,
TLS and --plaintext-port, a super user's ListUsers, CreateUser and GrantAcl over plaintext are
refused with one status naming the TLS port (a captured header or a new user's secret never
crosses in clear), while a send over plaintext and the same calls over TLS still work."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from broker_process import AUTH_ADMIN as ADMIN
from broker_process import AUTH_ARGS, BrokerProcess
from broker_process import AUTH_SECRET as SECRET
from grpc_health.v1 import health_pb2, health_pb2_grpc
from mqwire import META, RPC_TIMEOUT, message
from tls_certs import free_port, make_certs

from rockmq.plumbing.channels import Tls, open_channel
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import acl, acl_grpc, admin, admin_grpc, pb, rpc, svc, users, users_grpc

TOPIC = "plain-orders"


def _signed() -> tuple[tuple[str, str], ...]:
    return (*META, *Credentials(ADMIN, SECRET).headers())


def _control_calls(channel: grpc.Channel) -> dict[str, object]:
    """What an attacker with the admin's header would do on the listener: list, create a super user, grant all."""
    u, a = users_grpc.UsersStub(channel), acl_grpc.AclsStub(channel)
    return {
        "ListUsers": lambda: u.ListUsers(users.ListUsersRequest(), metadata=_signed(), timeout=RPC_TIMEOUT),
        "CreateUser": lambda: u.CreateUser(users.CreateUserRequest(name="mallory", secret="mallory-secret-1",
                                                                   super_user=True), metadata=_signed(), timeout=RPC_TIMEOUT),
        "GrantAcl": lambda: a.GrantAcl(acl.AclEntry(user="mallory", resource="*", actions=["All"], decision="Allow"),
                                       metadata=_signed(), timeout=RPC_TIMEOUT),
    }


@pytest.fixture
def broker(tmp_path: Path):
    certs = make_certs(tmp_path / "certs")
    plaintext = free_port()
    b = BrokerProcess(tmp_path / "b", *AUTH_ARGS, *certs.serve_args(), "--plaintext-port", str(plaintext)).start()
    b.plaintext_endpoint = f"127.0.0.1:{plaintext}"
    b.tls = Tls(str(certs.ca))
    try:
        with open_channel(b.endpoint, b.tls) as ch:
            admin_grpc.AdminStub(ch).CreateTopic(admin.CreateTopicRequest(name=TOPIC), metadata=_signed(), timeout=RPC_TIMEOUT)
        yield b
    finally:
        b.kill()


def test_control_plane_is_refused_on_the_plaintext_listener_and_sends_still_work(broker):
    with open_channel(broker.plaintext_endpoint) as ch:
        for name, call in _control_calls(ch).items():
            with pytest.raises(grpc.RpcError) as refused:
                call()
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED, (name, refused.value)
            assert f"TLS port only ({broker.endpoint})" in refused.value.details(), (name, refused.value.details())
        sent = svc.MessagingServiceStub(ch).SendMessage(rpc.SendMessageRequest(messages=[message(TOPIC, "over plaintext")]),
                                                        metadata=_signed(), timeout=RPC_TIMEOUT)
        assert sent.status.code == pb.OK, sent
    with open_channel(broker.endpoint, broker.tls) as ch:  # over TLS the same calls are served; mallory was never made
        listed = users_grpc.UsersStub(ch).ListUsers(users.ListUsersRequest(), metadata=_signed(), timeout=RPC_TIMEOUT)
        assert "mallory" not in {u.name for u in listed.users}


def test_health_checks_are_answered_on_both_listeners_without_credentials(broker):
    """A probe reaches either listener, and carries no credentials (auth/permissions.py: Who.ANYONE)."""
    for endpoint, tls in ((broker.endpoint, broker.tls), (broker.plaintext_endpoint, None)):
        with open_channel(endpoint, tls) as ch:
            reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=""), timeout=RPC_TIMEOUT)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING, endpoint
