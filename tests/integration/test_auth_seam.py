"""`rockmq serve --auth`: every service's requests are authenticated at the seam (auth/seam.py).

MessagingService answers UNAUTHORIZED inside its typed replies (a stream: in its status frame;
Telemetry: a TelemetryCommand); rockmq's own services answer gRPC UNAUTHENTICATED. Signatures are
read as every official client writes them (lowercase or uppercase hex, Go's `ak//Rocketmq`).
"""

from __future__ import annotations

import os
import subprocess
import sys

import grpc
import pytest
from broker_process import AUTH_ADMIN as ADMIN
from broker_process import AUTH_SECRET as SECRET
from mqwire import META, RPC_TIMEOUT, message

from rockmq.plumbing import signature
from rockmq.plumbing.channels import open_channel
from rockmq.plumbing.signature import AUTHORIZATION_HEADER, DATE_HEADER
from rockmq.protocol import admin, admin_grpc, batch, batch_grpc, pb, rpc, svc


def signed(user: str = ADMIN, secret: str = SECRET, *, upper: bool = False, credential: str | None = None):
    """Headers signed now (the broker refuses a date far from its clock): made when the test runs."""
    date = signature.date_now()
    digest = signature.signature(secret, date)
    value = (f"{signature.ALGORITHM} Credential={user if credential is None else credential}, "
             f"SignedHeaders={DATE_HEADER}, Signature={digest.upper() if upper else digest}")
    return (*META, (DATE_HEADER, date), (AUTHORIZATION_HEADER, value))



@pytest.fixture
def channel(auth_broker):
    with open_channel(auth_broker.endpoint) as ch:
        yield ch


def _route(channel: grpc.Channel, metadata) -> rpc.QueryRouteResponse:
    return svc.MessagingServiceStub(channel).QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name="auth-seam")),
                                                        metadata=metadata, timeout=RPC_TIMEOUT)


@pytest.mark.parametrize("how", [{}, {"upper": True}, {"credential": f"{ADMIN}//Rocketmq"}],
                         ids=["python-lowercase", "node-uppercase", "go-credential"])
def test_signed_requests_pass(channel, how):
    assert _route(channel, signed(**how)).status.code == pb.OK


@pytest.mark.parametrize("metadata, says", [
    (lambda: META, "no credentials"),
    (lambda: signed(credential=""), "no credentials"),  # the Python client's Credentials(): an empty key
    (lambda: signed(secret="wrong"), "authentication failed"),  # the same answer (which one: the audit log only)
    (lambda: signed(user="nobody"), "authentication failed"),
    (lambda: (*META, (AUTHORIZATION_HEADER, "MQv2-HMAC-SHA1 Credential")), "has no '='"),
    (lambda: (*META, (AUTHORIZATION_HEADER, signed()[-1][1])), "x-mq-date-time header is missing"),
], ids=["none", "empty-credential", "wrong-secret", "unknown-user", "malformed", "no-date"])
def test_typed_refusal(channel, auth_broker, metadata, says):
    st = _route(channel, metadata()).status
    assert (st.code, says in st.message) == (pb.UNAUTHORIZED, True), st
    assert SECRET not in "\n".join(auth_broker.log)


def test_streams_refused_in_their_status(channel):
    stub = svc.MessagingServiceStub(channel)
    request = rpc.ReceiveMessageRequest(group=pb.Resource(name="g"), message_queue=pb.MessageQueue(
        topic=pb.Resource(name="auth-seam"), id=-1), batch_size=1)
    frames = list(stub.ReceiveMessage(request, metadata=META, timeout=RPC_TIMEOUT))
    assert [f.status.code for f in frames] == [pb.UNAUTHORIZED]
    commands = list(stub.Telemetry(iter([rpc.TelemetryCommand()]), metadata=META, timeout=RPC_TIMEOUT))
    assert [c.status.code for c in commands] == [pb.UNAUTHORIZED]
    reply = stub.SendMessage(rpc.SendMessageRequest(messages=[message("auth-seam", b"x")]), metadata=META,
                             timeout=RPC_TIMEOUT)
    assert (reply.status.code, list(reply.entries)) == (pb.UNAUTHORIZED, [])


def test_own_services_answer_unauthenticated(channel):
    calls = [lambda md: admin_grpc.AdminStub(channel).ListTopics(admin.ListTopicsRequest(), metadata=md, timeout=RPC_TIMEOUT),
             lambda md: batch_grpc.BatchMessagingStub(channel).Receive(
                 batch.ReceiveRequest(group="g", topic="auth-seam", batch_size=1), metadata=md, timeout=RPC_TIMEOUT)]
    for call in calls:
        with pytest.raises(grpc.RpcError) as refused:
            call(signed(secret="wrong"))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert refused.value.details() == "authentication failed"
    assert admin_grpc.AdminStub(channel).ListTopics(admin.ListTopicsRequest(), metadata=signed(), timeout=RPC_TIMEOUT)


def test_users_file_is_private(auth_broker):
    users = auth_broker.data_dir / "users.json"
    assert users.stat().st_mode & 0o777 == 0o600


def test_auth_without_users_or_admin_does_not_start(tmp_path):
    r = subprocess.run([sys.executable, "-m", "rockmq", "serve", "--port", "0", "--data-dir", str(tmp_path / "d"), "--auth"],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "ROCKMQ_ADMIN_USER": ""})
    assert r.returncode != 0
    assert "--admin-user NAME --admin-secret S" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_handlers_read_the_identity_the_seam_established(tmp_path):
    """A handler of any service (here a test service, in this process) reads who called through
    `identity(context)`; super_only methods refuse normal users with PERMISSION_DENIED."""
    import asyncio

    from rockmq.auth.authenticate import Authenticator
    from rockmq.auth.seam import AuthSeam, identity
    from rockmq.auth.users import Users

    users = Users(tmp_path)
    users.create("alice", "alice-secret")
    users.create(ADMIN, SECRET, super_user=True)

    async def whoami(request: bytes, context) -> bytes:
        await asyncio.sleep(0)  # the identity survives awaits
        who = identity(context)
        return f"{who.user} {who.super_user} {who.source_ip} {who.tls} {who.client_id}".encode()

    async def run() -> list[str]:
        seam = AuthSeam(Authenticator(users, 300), super_only=frozenset({"test.Who/Root"}))
        server = grpc.aio.server(interceptors=[seam])
        handler = grpc.unary_unary_rpc_method_handler(whoami)
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Who", {"Me": handler, "Root": handler}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        answers = []
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
                for method, md in (("Me", signed()), ("Me", signed("alice", "alice-secret")), ("Root", signed()),
                                   ("Root", signed("alice", "alice-secret")), ("Me", META)):
                    try:
                        answers.append((await ch.unary_unary(f"/test.Who/{method}")(b"", metadata=md, timeout=5)).decode())
                    except grpc.aio.AioRpcError as e:
                        answers.append(e.code().name)
        finally:
            await server.stop(None)
        return answers

    client = dict(META)["x-mq-client-id"]
    assert asyncio.run(run()) == [f"{ADMIN} True 127.0.0.1 False {client}", f"alice False 127.0.0.1 False {client}",
                                  f"{ADMIN} True 127.0.0.1 False {client}", "PERMISSION_DENIED", "UNAUTHENTICATED"]
