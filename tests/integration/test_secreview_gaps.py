"""Issue 19's review: requests that reached past what authorization checked, on real brokers.

- RecallMessage is authorized on its `topic` field: the recall handle must name a message of
  that topic, else a user with Pub on one topic cancels another topic's delayed messages.
- A Stage request is authorized on the topics staging will read, parsed the same way: bytes
  that make no message are a BAD_REQUEST, not an INTERNAL crash of the seam.
- With auth off the Acls service refuses, as Users does: an anonymous caller must not plant the
  entries the broker decides by once it runs with --auth.
- `rockmq user create NAME --secret -` reads the secret from stdin (argv shows in `ps`).
- An open Telemetry stream ends, UNAUTHORIZED, at its next command once its user is disabled.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import time

import grpc
import pytest
from acl_setup import ADMIN, SECRETS, TOPIC, signed, start_acl_broker
from broker_process import BrokerProcess
from mqwire import META, RPC_TIMEOUT, message
from waiting import wait_for

from rockmq.plumbing.channels import CLIENT_ID_HEADER, open_channel
from rockmq.plumbing.signature import date_now
from rockmq.protocol import acl, acl_grpc, batch, batch_grpc, pb, rpc, svc, users, users_grpc


@pytest.fixture(scope="module")
def auth_broker(tmp_path_factory: pytest.TempPathFactory):
    b = start_acl_broker(tmp_path_factory.mktemp("review"))
    yield b
    b.stop()


def test_recall_handle_must_name_a_message_of_the_request_topic(auth_broker):
    """alice may publish to TOPIC only: admin's delayed message on another topic stays hers to leave alone."""
    with open_channel(auth_broker.endpoint) as ch:
        stub = svc.MessagingServiceStub(ch)
        delayed = message("review-private", b"due later")
        delayed.system_properties.message_type = pb.DELAY
        delayed.system_properties.delivery_timestamp.FromMilliseconds(int(time.time() * 1000) + 600_000)
        sent = stub.SendMessage(rpc.SendMessageRequest(messages=[delayed]), metadata=signed(ADMIN), timeout=RPC_TIMEOUT)
        assert sent.status.code == pb.OK, sent.status
        handle = sent.entries[0].recall_handle

        def recall(topic: str, user: str) -> pb.Status:
            return stub.RecallMessage(rpc.RecallMessageRequest(topic=pb.Resource(name=topic), recall_handle=handle),
                                      metadata=signed(user), timeout=RPC_TIMEOUT).status

        refused = recall(TOPIC, "alice")
        assert refused.code == pb.NOT_FOUND and "review-private" not in refused.message, refused
        assert recall("review-private", ADMIN).code == pb.OK  # the handle still works on its own topic


def test_malformed_stage_is_a_bad_request(auth_broker):
    with open_channel(auth_broker.endpoint) as ch:
        reply = batch_grpc.BatchMessagingStub(ch).Stage(
            batch.StageRequest(system_properties=[b""], contents=[b"\xff\xff\xff"]), metadata=signed("alice"),
            timeout=RPC_TIMEOUT)
    assert reply.status.code == pb.BAD_REQUEST and "not a serialized message" in reply.status.message, reply.status
    assert "Traceback" not in "\n".join(auth_broker.log)


def test_acls_refused_without_auth(tmp_path):
    b = BrokerProcess(tmp_path).start()
    try:
        with open_channel(b.endpoint) as ch:
            stub = acl_grpc.AclsStub(ch)
            with pytest.raises(grpc.RpcError) as refused:
                stub.GrantAcl(acl.AclEntry(user="mallory", resource="*", actions=["All"]), metadata=META,
                              timeout=RPC_TIMEOUT)
            assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # as Users answers it
            assert "authentication is off" in refused.value.details()
            with pytest.raises(grpc.RpcError) as listing:
                stub.ListAcls(acl.ListAclsRequest(), metadata=META, timeout=RPC_TIMEOUT)
            assert listing.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        b.stop()
    assert not (tmp_path / "acl.json").exists() or "mallory" not in (tmp_path / "acl.json").read_text()


def test_user_secret_from_stdin(auth_broker):
    env = {k: v for k, v in os.environ.items() if k not in ("ROCKMQ_ACCESS_KEY", "ROCKMQ_SECRET_KEY")}

    def rockmq(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rockmq", *args, "--endpoint", auth_broker.endpoint],
                              input=stdin, capture_output=True, text=True, timeout=60, env=env)

    as_admin = ("--access-key", ADMIN, "--secret-key", SECRETS[ADMIN])
    made = rockmq("user", "create", "carol", "--secret", "-", *as_admin, stdin="carol-from-stdin\n")
    assert (made.returncode, made.stdout) == (0, "created user carol\n"), made
    listed = rockmq("topic", "list", "--access-key", "carol", "--secret-key", "carol-from-stdin")
    assert "FORBIDDEN" in listed.stderr or "may not List" in listed.stderr, listed  # signed in; no grant to list
    empty = rockmq("user", "update", "carol", "--secret", "-", *as_admin)
    assert (empty.returncode, empty.stderr.count("\n")) == (2, 1) and "stdin gave no secret" in empty.stderr, empty


def test_disabled_users_open_telemetry_stream_is_refused(auth_broker):
    commands: queue.Queue[rpc.TelemetryCommand | None] = queue.Queue()

    def requests():
        while (command := commands.get()) is not None:
            yield command

    publishing = rpc.TelemetryCommand(settings=pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(
        topics=[pb.Resource(name=TOPIC)])))
    with open_channel(auth_broker.endpoint) as ch:
        users_stub = users_grpc.UsersStub(ch)
        stream = svc.MessagingServiceStub(ch).Telemetry(requests(), metadata=(*signed("alice"), (CLIENT_ID_HEADER, "review-1")),
                                                        timeout=RPC_TIMEOUT)
        try:
            commands.put(publishing)
            assert next(stream).status.code == pb.OK
            users_stub.UpdateUser(users.UpdateUserRequest(name="alice", enabled=False), metadata=signed(ADMIN),
                                  timeout=RPC_TIMEOUT)
            commands.put(publishing)
            assert next(stream).status.code == pb.UNAUTHORIZED
        finally:
            commands.put(None)
            users_stub.UpdateUser(users.UpdateUserRequest(name="alice", enabled=True), metadata=signed(ADMIN),
                                  timeout=RPC_TIMEOUT)


def test_a_credential_cannot_forge_audit_fields(auth_broker):
    """The claimed user of a failed authentication goes into the audit line's `who`: a Credential
    that is no user name (spaces, '=') is not written there."""
    forged = "admin from 10.9.9.9 what=rockmq.admin.v1.Users/CreateUser result=ok"
    header = f"MQv2-HMAC-SHA1 Credential={forged}, SignedHeaders=x-mq-date-time, Signature=00"
    with open_channel(auth_broker.endpoint) as ch:
        reply = svc.MessagingServiceStub(ch).QueryRoute(
            rpc.QueryRouteRequest(topic=pb.Resource(name=TOPIC)),
            metadata=(*META, ("x-mq-date-time", date_now()), ("authorization", header)), timeout=RPC_TIMEOUT)
    assert (reply.status.code, reply.status.message) == (pb.UNAUTHORIZED, "authentication failed")
    # The broker's log reaches us through a reader thread: wait for the line rather than race it.
    lines = wait_for(lambda: [line for line in list(auth_broker.log)
                              if "authentication-failed" in line and "10.9.9.9" in line], timeout=5)
    assert lines and all('who="anonymous" from="127.0.0.1" what=' in line for line in lines), lines
