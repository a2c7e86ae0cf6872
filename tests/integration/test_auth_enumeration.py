"""Issue 32 §9: a stranger cannot tell which user names exist. An unknown user, a wrong secret and a
disabled user get the very same answer — byte for byte, in MessagingService's typed status (what
the official clients raise) and in the gRPC status of rockmq's own services — while the audit log
still says which of the three it was."""

from __future__ import annotations

import grpc
import pytest
from broker_process import BrokerProcess
from mqwire import META, RPC_TIMEOUT
from waiting import wait_for

from rockmq.auth.users import Users
from rockmq.plumbing.channels import open_channel
from rockmq.plumbing.credentials import Credentials
from rockmq.protocol import admin, admin_grpc, pb, rpc, svc

# who signs -> what only the audit log may say of it
ATTEMPTS = {("ghost", "ghost-secret"): "unknown user",
            ("alice", "not-alice-secret"): "does not match",
            ("carol", "carol-secret"): "disabled"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):
    """A broker with --auth whose users are alice (enabled) and carol (disabled)."""
    data = tmp_path_factory.mktemp("enumeration")
    users = Users(data)
    users.create("alice", "alice-secret", super_user=True)
    users.create("carol", "carol-secret")
    users.update("carol", enabled=False)
    b = BrokerProcess(data, "--auth").start()
    yield b
    b.stop()


def _typed_status(channel: grpc.Channel, creds: Credentials) -> bytes:
    reply = svc.MessagingServiceStub(channel).QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name="enum")),
                                                         metadata=(*META, *creds.headers()), timeout=RPC_TIMEOUT)
    assert reply.status.code == pb.UNAUTHORIZED, reply.status
    return reply.status.SerializeToString()


def _grpc_status(channel: grpc.Channel, creds: Credentials) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as refused:
        admin_grpc.AdminStub(channel).ListTopics(admin.ListTopicsRequest(), metadata=(*META, *creds.headers()),
                                                 timeout=RPC_TIMEOUT)
    return refused.value.code(), refused.value.details()


def test_unknown_wrong_and_disabled_answer_alike(broker):
    with open_channel(broker.endpoint) as ch:
        typed = {_typed_status(ch, Credentials(*who)) for who in ATTEMPTS}
        own = {_grpc_status(ch, Credentials(*who)) for who in ATTEMPTS}
    assert len(typed) == 1 and len(own) == 1, (typed, own)
    assert own == {(grpc.StatusCode.UNAUTHENTICATED, "authentication failed")}
    # The operator still learns which it was: one authentication-failed line per attempt says so.
    for (user, _), reason in ATTEMPTS.items():
        wait_for(lambda u=user, r=reason: any("authentication-failed" in line and u in line and r in line
                                              for line in list(broker.log)), what=f"{user}: {reason} in the audit log")
