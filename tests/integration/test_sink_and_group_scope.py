"""Issue 32 §10 and §11, as an attacker runs them against a real broker.

§10 sink-id squatting: PublishStaged needed no grant and took an empty chunk list, so bob (no
grant to publish anywhere) claimed alice's sink id before her first batch, for ever; a batch id
far ahead of a sink's last (no auth needed) made every later batch a silent duplicate; and a
chunk staged while its user could publish stayed publishable once the grant was gone. Now a sink
id is its user's own, publishing needs Pub on the chunks' topics, a new batch names chunks, and
one more than MAX_BATCH_STEP past the sink's last is refused.

§11 group scope: Sub on a group read its dead-letter topic, which holds the dead letters of every
topic the group consumed, bodies of topics the reader has no grant on included. Now reading
`%DLQ%g` needs Sub on `Topic:%DLQ%g`, while the group's retry topic stays its consumers' (a
send-back needs Sub on the group, as in Apache).
"""

from __future__ import annotations

import pytest
from acl_setup import GROUP, TOPIC, grant, signed, start_acl_broker
from mqwire import RPC_TIMEOUT, Conn, message, staged_parts

from rockmq.broker.staging import MAX_BATCH_STEP
from rockmq.plumbing.channels import open_channel
from rockmq.protocol import acl, acl_grpc, batch, batch_grpc, pb, rpc, svc
from rockmq.protocol.conventions import dlq_topic, retry_topic

BOBS_TOPIC = "scope-bobs"  # bob may publish here (and only here)
OTHER = "scope-other"  # consumed through GROUP by admin only: bob has no grant on it


@pytest.fixture(scope="module")
def auth_broker(tmp_path_factory: pytest.TempPathFactory):
    b = start_acl_broker(tmp_path_factory.mktemp("scope"))
    with open_channel(b.endpoint) as ch:
        grant(ch, "bob", f"Topic:{BOBS_TOPIC}", "Pub,Create")
    yield b
    b.stop()


@pytest.fixture
def channel(auth_broker):
    with open_channel(auth_broker.endpoint) as ch:
        yield ch


def _stage(stub: batch_grpc.BatchMessagingStub, user: str | None, topic: str, body: str) -> batch.StagedChunk:
    sp, content = staged_parts(message(topic, body))
    reply = stub.Stage(batch.StageRequest(system_properties=[sp], contents=[content]),
                       metadata=signed(user) if user else (), timeout=RPC_TIMEOUT)
    assert reply.status.code == pb.OK, reply.status
    return batch.StagedChunk(handle=reply.handle, count=reply.count)


def _publish(stub: batch_grpc.BatchMessagingStub, user: str | None, sink: str, batch_id: int,
             chunks: list[batch.StagedChunk]) -> batch.PublishStagedResponse:
    request = batch.PublishStagedRequest(sink_id=sink, batch_id=batch_id, chunks=chunks)  # retain_ms 0: for ever
    reply: batch.PublishStagedResponse = stub.PublishStaged(request, metadata=signed(user) if user else (),
                                                            timeout=RPC_TIMEOUT)
    return reply


def test_another_user_cannot_squat_a_sink_id(channel):
    """bob, before alice's first batch: an empty claim, then a real batch of his own under her
    sink id with a batch id far above hers. Neither touches her sink."""
    stub = batch_grpc.BatchMessagingStub(channel)
    claim = _publish(stub, "bob", "alices-query", 0, [])
    assert claim.status.code == pb.BAD_REQUEST and "names no staged chunk" in claim.status.message, claim.status
    bobs = _publish(stub, "bob", "alices-query", 500, [_stage(stub, "bob", BOBS_TOPIC, "bob's")])
    assert bobs.status.code == pb.OK and bobs.published == 1, bobs.status  # his own sink of that name
    hers = _publish(stub, "alice", "alices-query", 0, [_stage(stub, "alice", TOPIC, "alice's batch 0")])
    assert hers.status.code == pb.OK and not hers.duplicate and hers.published == 1, hers.status
    again = _publish(stub, "alice", "alices-query", 0, [_stage(stub, "alice", TOPIC, "alice's batch 0")])
    assert again.status.code == pb.OK and again.duplicate  # her sink still de-duplicates her replays


def test_publishing_needs_pub_on_the_chunks_topics_then(channel):
    """A chunk staged while alice could publish is not published once the grant is gone."""
    stub = batch_grpc.BatchMessagingStub(channel)
    chunk = _stage(stub, "alice", TOPIC, "staged, then the grant went")
    acls = acl_grpc.AclsStub(channel)
    acls.RevokeAcl(acl.RevokeAclRequest(user="alice", resource=f"Topic:{TOPIC}"), metadata=signed("admin"),
                   timeout=RPC_TIMEOUT)
    try:
        refused = _publish(stub, "alice", "alices-revoked", 0, [chunk])
        assert refused.status.code == pb.FORBIDDEN, refused.status
        assert f"user 'alice' may not Pub on Topic:{TOPIC} (PublishStaged)" in refused.status.message
    finally:
        grant(channel, "alice", f"Topic:{TOPIC}", "Pub")
    assert _publish(stub, "alice", "alices-revoked", 0, [chunk]).published == 1  # granted again: it goes


def test_a_batch_id_far_ahead_of_the_sinks_last_is_refused(broker):
    """Without auth anyone may publish as any sink: one publish of a huge batch id used to make
    every later batch of it a silent duplicate."""
    topic, sink = "scope-far-ahead", "scope-far-sink"
    conn = Conn(broker.endpoint)
    try:
        conn.create_topic(topic)
        stub = conn.batch
        assert _publish(stub, None, sink, 0, [_stage(stub, None, topic, "batch 0")]).published == 1
        for far in (2**62, MAX_BATCH_STEP + 1):
            poison = _publish(stub, None, sink, far, [_stage(stub, None, topic, "poison")])
            assert poison.status.code == pb.BAD_REQUEST, poison.status
            assert f"more than {MAX_BATCH_STEP:,} past its last batch, 0" in poison.status.message
        nxt = _publish(stub, None, sink, 1, [_stage(stub, None, topic, "batch 1")])
        assert nxt.status.code == pb.OK and not nxt.duplicate and nxt.published == 1, nxt
        assert _publish(stub, None, sink, 1 + MAX_BATCH_STEP, [_stage(stub, None, topic, "step")]).published == 1
    finally:
        conn.close()


def _receive(stub: svc.MessagingServiceStub, user: str, topic: str) -> list[rpc.ReceiveMessageResponse]:
    request = rpc.ReceiveMessageRequest(group=pb.Resource(name=GROUP), batch_size=16,
                                        message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1))
    request.invisible_duration.FromSeconds(30)
    request.long_polling_timeout.FromSeconds(2)
    return list(stub.ReceiveMessage(request, metadata=signed(user), timeout=RPC_TIMEOUT + 2))


def _dead_letter(stub: svc.MessagingServiceStub, body: bytes) -> None:
    """admin consumes OTHER through bob's group and gives up on a message: a dead letter of GROUP."""
    sent = stub.SendMessage(rpc.SendMessageRequest(messages=[message(OTHER, body)]), metadata=signed("admin"),
                            timeout=RPC_TIMEOUT)
    assert sent.status.code == pb.OK, sent.status
    got = [f.message for f in _receive(stub, "admin", OTHER) if f.HasField("message")]
    assert [m.body for m in got] == [body]
    forward = stub.ForwardMessageToDeadLetterQueue(rpc.ForwardMessageToDeadLetterQueueRequest(
        group=pb.Resource(name=GROUP), topic=pb.Resource(name=OTHER), receipt_handle=got[0].system_properties.receipt_handle,
        message_id=got[0].system_properties.message_id), metadata=signed("admin"), timeout=RPC_TIMEOUT)
    assert forward.status.code == pb.OK, forward.status


def test_sub_on_a_group_does_not_read_its_dead_letters_of_other_topics(channel):
    stub = svc.MessagingServiceStub(channel)
    _dead_letter(stub, b"a body of a topic bob may not read")
    dlq = dlq_topic(GROUP)
    frames = _receive(stub, "bob", dlq)
    assert frames[0].status.code == pb.FORBIDDEN, frames[0].status
    assert f"user 'bob' may not Sub on Topic:{dlq}" in frames[0].status.message
    assert not any(f.HasField("message") for f in frames)
    grant(channel, "bob", f"Topic:{dlq}", "Sub")  # grantable, as any topic
    got: list[bytes] = []
    for _ in range(5):
        got += [f.message.body for f in _receive(stub, "bob", dlq) if f.HasField("message")]
        if got:
            break
    assert got == [b"a body of a topic bob may not read"]


def test_the_groups_retry_topic_stays_its_consumers(channel):
    """bob consumes through GROUP: he may send a message back to its retry topic (as rockmq's push
    consumer does) with Sub on the group, and nobody needs Pub on the group for it."""
    stub = svc.MessagingServiceStub(channel)
    back = message(retry_topic(GROUP), b"sent back")
    reply = stub.SendMessage(rpc.SendMessageRequest(messages=[back]), metadata=signed("bob"), timeout=RPC_TIMEOUT)
    assert reply.status.code == pb.OK, reply.status
    stranger = stub.SendMessage(rpc.SendMessageRequest(messages=[message(retry_topic(GROUP), b"x")]),
                                metadata=signed("alice"), timeout=RPC_TIMEOUT)
    assert stranger.status.code == pb.FORBIDDEN and f"Sub on Group:{GROUP}" in stranger.status.message, stranger.status
