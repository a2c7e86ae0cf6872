"""Authorization (ACL 2.0) on a broker started with `--auth`: grants made through the Acls service
decide what each user may do; refusals name the user, the resource and the action.

alice may publish to the topic only; bob may consume it through the group. rockmq's own client
(BatchMessaging: gRPC PERMISSION_DENIED, turned into a one-line FORBIDDEN error) and the wire
(MessagingService: FORBIDDEN inside the typed reply) both see it.
"""

from __future__ import annotations

import os
import stat

import grpc
import pytest
from acl_setup import ADMIN, GROUP, SECRETS, TOPIC, grant, signed, start_acl_broker
from mqwire import RPC_TIMEOUT

from rockmq.client import Credentials, Message, Producer, SimpleConsumer
from rockmq.client.errors import BrokerRefused
from rockmq.plumbing.channels import open_channel
from rockmq.protocol import acl, acl_grpc, pb, rpc, svc


def creds(user: str) -> Credentials:
    return Credentials(user, SECRETS[user])


@pytest.fixture(scope="module")
def auth_broker(tmp_path_factory: pytest.TempPathFactory):
    b = start_acl_broker(tmp_path_factory.mktemp("acl"))
    yield b
    b.stop()


@pytest.fixture
def acls(auth_broker):
    with open_channel(auth_broker.endpoint) as ch:
        yield ch


def revoke(channel: grpc.Channel, user: str, resource: str) -> acl.AclEntry:
    return acl_grpc.AclsStub(channel).RevokeAcl(acl.RevokeAclRequest(user=user, resource=resource), metadata=signed(ADMIN),
                                                timeout=RPC_TIMEOUT).revoked


def test_publisher_cannot_consume_and_consumer_can(auth_broker):
    with Producer(auth_broker.endpoint, credentials=creds("alice")) as p:
        sent = p.send(Message(TOPIC, b"for bob"))
    with SimpleConsumer(auth_broker.endpoint, GROUP, {TOPIC: "*"}, await_s=1, credentials=creds("alice")) as c, \
            pytest.raises(BrokerRefused) as refused:
        c.receive()
    assert refused.value.status_name == "FORBIDDEN"
    assert f"user 'alice' may not Sub on Group:{GROUP}" in str(refused.value) and "\n" not in str(refused.value)
    with SimpleConsumer(auth_broker.endpoint, GROUP, {TOPIC: "*"}, await_s=1, credentials=creds("bob")) as c:
        got = []
        for _ in range(10):
            got += c.receive()
            if got:
                break
        for m in got:
            c.ack(m)
    assert [m.message_id for m in got] == [sent.message_id]
    log = "\n".join(auth_broker.log)
    assert "authorization-refused" in log and "acl-grant" in log and SECRETS["alice"] not in log


def test_v2_refusals_are_typed_and_name_user_resource_action(auth_broker):
    with open_channel(auth_broker.endpoint) as ch:
        stub = svc.MessagingServiceStub(ch)
        send = rpc.SendMessageRequest(messages=[pb.Message(topic=pb.Resource(name=TOPIC), body=b"x")])
        reply = stub.SendMessage(send, metadata=signed("bob"), timeout=RPC_TIMEOUT)
        assert reply.status.code == pb.FORBIDDEN
        assert reply.status.message == f"user 'bob' may not Pub on Topic:{TOPIC} (SendMessage)"
        frames = list(stub.ReceiveMessage(rpc.ReceiveMessageRequest(
            group=pb.Resource(name=GROUP), message_queue=pb.MessageQueue(topic=pb.Resource(name=TOPIC))),
            metadata=signed("alice"), timeout=RPC_TIMEOUT))
        assert frames[0].status.code == pb.FORBIDDEN and "alice" in frames[0].status.message


def test_auto_creating_a_topic_needs_create(auth_broker, acls):
    new = "acl-new-topic"
    grant(acls, "alice", f"Topic:{new}", "Pub")
    with Producer(auth_broker.endpoint, credentials=creds("alice"), retries=0) as p, pytest.raises(BrokerRefused) as e:
        p.send(Message(new, b"x"))
    assert f"may not Create on Topic:{new}" in str(e.value)
    grant(acls, "alice", "Topic:acl-new-*", "Create")  # a prefix: the literal Pub entry still decides Pub
    with Producer(auth_broker.endpoint, credentials=creds("alice")) as p:
        assert p.send(Message(new, b"x")).message_id


def test_only_super_users_manage_acls_and_changes_apply_at_once(auth_broker, acls):
    with pytest.raises(grpc.RpcError) as e:
        grant(acls, "alice", "*", "All", by="alice")
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED and "super user" in (e.value.details() or "")
    grant(acls, "bob", f"Topic:{TOPIC}", "Pub")
    with Producer(auth_broker.endpoint, credentials=creds("bob")) as p:
        p.send(Message(TOPIC, b"bob may now"))
    assert revoke(acls, "bob", f"Topic:{TOPIC}").actions == ["Pub"]  # Sub went with it: one entry per resource
    with Producer(auth_broker.endpoint, credentials=creds("bob"), retries=0) as p, pytest.raises(BrokerRefused):
        p.send(Message(TOPIC, b"no longer"))
    grant(acls, "bob", f"Topic:{TOPIC}", "Sub")
    with pytest.raises(grpc.RpcError) as e:
        revoke(acls, "bob", "Topic:nothing-there")
    assert e.value.code() == grpc.StatusCode.NOT_FOUND and "no entry on Topic:nothing-there" in (e.value.details() or "")
    with pytest.raises(grpc.RpcError) as e:
        grant(acls, "bob", "Queue:x", "Pub")
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "Queue:x" in (e.value.details() or "")
    listed = acl_grpc.AclsStub(acls).ListAcls(acl.ListAclsRequest(user="bob"), metadata=signed(ADMIN), timeout=RPC_TIMEOUT)
    assert {(e.resource, tuple(e.actions), e.decision) for e in listed.entries} == {
        (f"Topic:{TOPIC}", ("Sub",), "Allow"), (f"Group:{GROUP}", ("Sub",), "Allow")}
    mode = os.stat(auth_broker.data_dir / "acl.json").st_mode
    assert stat.S_IMODE(mode) == 0o600


def test_cli_grant_list_revoke_and_refusals(auth_broker):
    """`rockmq acl ...` as the super user; a refused command is one line and exit 1."""
    def cli(*args: str, user: str = ADMIN):
        return auth_broker.cli(*args, "--access-key", user, "--secret-key", SECRETS[user], timeout=30)

    done = cli("acl", "grant", "carol", "--resource", "Topic:cli-*", "--actions", "Pub,Sub", "--source-ip", "10.0.0.0/8",
               "--deny")
    assert done.returncode == 0 and done.stdout.strip() == "denied carol Pub,Sub on Topic:cli-* from 10.0.0.0/8"
    assert cli("acl", "grant", "carol", "--resource", "Group:cli", "--actions", "Sub").returncode == 0
    listed = cli("acl", "list", "carol").stdout.splitlines()
    assert listed[0].split() == ["USER", "RESOURCE", "ACTIONS", "SOURCE_IPS", "DECISION"]
    assert [line.split() for line in listed[1:]] == [["carol", "Topic:cli-*", "Pub,Sub", "10.0.0.0/8", "Deny"],
                                                     ["carol", "Group:cli", "Sub", "*", "Allow"]]
    gone = cli("acl", "revoke", "carol", "--resource", "Topic:cli-*")
    assert gone.returncode == 0 and gone.stdout.strip() == "revoked carol's entry on Topic:cli-* (Deny Pub,Sub)"
    for args, user, says in (
            (("acl", "revoke", "carol", "--resource", "Topic:cli-*"), ADMIN, "has no entry on Topic:cli-*"),
            (("acl", "grant", "carol", "--resource", "Topic:x", "--actions", "Publish"), ADMIN, "unknown action 'Publish'"),
            (("acl", "grant", "carol", "--resource", "Topic:x", "--actions", "Pub", "--source-ip", "10.1"), ADMIN, "10.1"),
            (("acl", "grant", "no/slash", "--resource", "Topic:x", "--actions", "Pub"), ADMIN, "bad user name"),
            (("acl", "list"), "alice", "needs a super user"),
            (("topic", "describe", TOPIC), "alice", f"user 'alice' may not Get|Sub on Topic:{TOPIC} (DescribeTopic)"),
            (("message", "send", TOPIC, "x"), "bob", f"user 'bob' may not Pub on Topic:{TOPIC}")):
        refused = cli(*args, user=user)
        assert refused.returncode == 1, refused
        assert refused.stderr.count("\n") == 1 and says in refused.stderr and "Traceback" not in refused.stderr, refused


def test_a_deleted_users_grants_go_with_it(auth_broker):
    def cli(*args: str):
        return auth_broker.cli(*args, "--access-key", ADMIN, "--secret-key", SECRETS[ADMIN], timeout=30)

    assert cli("user", "create", "dave", "--secret", "dave-secret").returncode == 0
    assert cli("acl", "grant", "dave", "--resource", "*", "--actions", "All").returncode == 0
    assert cli("user", "delete", "dave").returncode == 0
    assert "dave" not in cli("acl", "list").stdout
    revoked = 'acl-revoke who="admin" from="127.0.0.1" what="dave every entry (user deleted)" result="ok"'
    assert revoked in "\n".join(auth_broker.log)


def test_acls_are_managed_only_with_auth_on(broker):
    refused = broker.cli("acl", "list")
    assert refused.returncode == 1 and "authentication is off on this broker" in refused.stderr


def test_telemetry_settings_are_checked_as_they_come(auth_broker):
    """Telemetry streams its requests: each settings command is checked (publishing topics · Pub;
    the group and subscribed topics · Sub), refused in a TelemetryCommand with FORBIDDEN."""
    from telemetry_stream import TelemetryStream, producer_settings

    from rockmq.plumbing.channels import client_metadata
    from rockmq.plumbing.credentials import Credentials as Signer

    consumer = pb.Settings(client_type=pb.SIMPLE_CONSUMER, subscription=pb.Subscription(
        group=pb.Resource(name=GROUP), subscriptions=[pb.SubscriptionEntry(topic=pb.Resource(name=TOPIC))]))
    cases = (("alice", producer_settings(TOPIC), ""), ("bob", producer_settings(TOPIC), "Pub"),
             ("bob", consumer, ""), ("alice", consumer, f"Sub on Group:{GROUP}"))
    for n, (user, settings, refused) in enumerate(cases):
        with open_channel(auth_broker.endpoint) as ch:
            metadata = (*client_metadata(f"telemetry-{n}"), *Signer(user, SECRETS[user]).headers())
            stream = TelemetryStream(svc.MessagingServiceStub(ch), metadata, settings)
            try:
                reply = stream.next(10)
            finally:
                stream.close()
        assert reply is not None, (user, refused)
        if refused:
            assert reply.status.code == pb.FORBIDDEN and f"user '{user}' may not {refused}" in reply.status.message
        else:
            assert reply.status.code == pb.OK and reply.HasField("settings"), reply


def test_a_staged_chunk_is_its_stagers_to_publish_or_discard(auth_broker):
    """Stage handles are guessable (expiry bucket, sequence): only the user who staged a chunk may
    publish or discard it; a sink id is each user's own (tests/integration/test_sink_and_group_scope.py)."""
    import hashlib

    from rockmq.protocol import batch, batch_grpc

    msg = pb.Message(topic=pb.Resource(name=TOPIC), body=b"staged")
    sp = msg.system_properties
    sp.message_id, sp.body_digest.type = "01STAGEDBYALICE0000000001", pb.SHA1
    sp.body_digest.checksum = hashlib.sha1(msg.body).hexdigest().upper()
    sp_bytes = sp.SerializeToString()
    msg.ClearField("system_properties")
    with open_channel(auth_broker.endpoint) as ch:
        stub = batch_grpc.BatchMessagingStub(ch)
        staged = stub.Stage(batch.StageRequest(system_properties=[sp_bytes], contents=[msg.SerializeToString()]),
                            metadata=signed("alice"), timeout=RPC_TIMEOUT)
        assert staged.status.code == pb.OK, staged.status
        chunk = batch.StagedChunk(handle=staged.handle, count=1)
        discard = stub.DiscardStaged(batch.DiscardStagedRequest(handles=[staged.handle]), metadata=signed("bob"),
                                     timeout=RPC_TIMEOUT)
        assert discard.status.code == pb.FORBIDDEN and "user 'bob' may not use staged chunk 1" in discard.status.message
        stolen = stub.PublishStaged(batch.PublishStagedRequest(sink_id="bobs", batch_id=1, chunks=[chunk]),
                                    metadata=signed("bob"), timeout=RPC_TIMEOUT)
        assert stolen.status.code == pb.FORBIDDEN
        mine = stub.PublishStaged(batch.PublishStagedRequest(sink_id="alices", batch_id=1, chunks=[chunk]),
                                  metadata=signed("alice"), timeout=RPC_TIMEOUT)
        assert mine.status.code == pb.OK and mine.published == 1, mine
        poison = stub.PublishStaged(batch.PublishStagedRequest(sink_id="alices", batch_id=99), metadata=signed("bob"),
                                    timeout=RPC_TIMEOUT)  # no chunk, so no topic to need Pub on: refused
        assert poison.status.code == pb.BAD_REQUEST and "names no staged chunk" in poison.status.message, poison.status


@pytest.mark.parametrize("method", ["AckMessage", "QueryRoute", "SendMessage", "ChangeInvisibleDuration"])
def test_bytes_that_do_not_parse_are_refused_after_authentication(acls, method):
    """Authenticated, a request whose bytes do not parse meets no ACL rule (there is nothing to
    check) and is refused by its deserializer's answer: INVALID_ARGUMENT, not INTERNAL."""
    call = acls.unary_unary(f"/apache.rocketmq.v2.MessagingService/{method}")
    with pytest.raises(grpc.RpcError) as e:
        call(b"\xff", metadata=signed("alice"), timeout=RPC_TIMEOUT)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (e.value.code(), e.value.details())
