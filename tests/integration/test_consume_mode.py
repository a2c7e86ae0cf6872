"""One group, one way of consuming: the first way a group is used (POP or offsets), or the one
`rockmq group create --consume-mode` gives, sticks across restarts; the other is refused with
FORBIDDEN naming the group's mode, on MessagingService and on BatchMessaging alike."""

from __future__ import annotations

import pytest
from mqwire import META, RPC_TIMEOUT, Conn, message

from rockmq.protocol import batch, batch_grpc, pb, rpc


@pytest.fixture
def conn(fresh_broker):
    c = Conn(fresh_broker.endpoint)
    yield c
    c.close()


def batch_stub(conn: Conn) -> batch_grpc.BatchMessagingStub:
    return batch_grpc.BatchMessagingStub(conn.channel)


def assert_forbidden(status: pb.Status, group: str, mode: str) -> None:
    assert status.code == pb.FORBIDDEN, (pb.Code.Name(status.code), status.message)
    assert repr(group) in status.message and f"consume mode {mode!r}" in status.message, status.message


def offset_calls_refused(conn: Conn, group: str, topic: str) -> None:
    request = rpc.PullMessageRequest(group=pb.Resource(name=group), offset=0, batch_size=8,
                                     message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=0))
    frames = list(conn.mq.PullMessage(request, metadata=META, timeout=RPC_TIMEOUT))
    assert len(frames) == 1
    assert_forbidden(frames[0].status, group, "pop")
    assert_forbidden(conn.update_offset(group, topic, 0, 1).status, group, "pop")
    reply = batch_stub(conn).Pull(batch.PullRequest(group=group, topic=topic, queue_id=0, offset=0, batch_size=8),
                                  timeout=RPC_TIMEOUT)
    assert_forbidden(reply.status, group, "pop")


def pop_calls_refused(conn: Conn, group: str, topic: str) -> None:
    frames = conn.receive_frames(group, topic)
    assert [f.WhichOneof("content") for f in frames] == ["status", "delivery_timestamp"]
    assert_forbidden(frames[0].status, group, "offset")
    reply = batch_stub(conn).Receive(batch.ReceiveRequest(group=group, topic=topic, batch_size=8,
                                                          invisible_duration_ms=30_000), timeout=RPC_TIMEOUT)
    assert_forbidden(reply.status, group, "offset")


def test_first_use_sticks_both_ways_and_survives_a_restart(fresh_broker, conn, unique):
    topic, popper, puller = unique("cm"), unique("cm-pop"), unique("cm-offsets")
    conn.create_topic(topic, queues=1)
    conn.send_ok(*[message(topic, f"m{i}") for i in range(3)])

    # POP first: the group is a POP group, offsets are refused, POP goes on.
    got = conn.receive_n(popper, topic, 3, within=5)
    assert len(got) == 3
    assert conn.describe_group(popper).consume_mode == "pop"
    offset_calls_refused(conn, popper, topic)
    assert conn.ack(popper, topic, *got).status.code == pb.OK

    # Offsets first (a pull): the group is an offset group, POP is refused, pulls go on.
    code, msgs, nxt = conn.pull(puller, topic, 0, 0)
    assert code == pb.OK and len(msgs) == 3 and nxt == 3
    assert conn.describe_group(puller).consume_mode == "offset"
    pop_calls_refused(conn, puller, topic)
    assert conn.update_offset(puller, topic, 0, nxt).status.code == pb.OK

    # The modes are stored with the groups.
    fresh_broker.restart()
    again = Conn(fresh_broker.endpoint)
    try:
        assert again.describe_group(popper).consume_mode == "pop"
        assert again.describe_group(puller).consume_mode == "offset"
        offset_calls_refused(again, popper, topic)
        pop_calls_refused(again, puller, topic)
        assert again.get_offset(puller, topic, 0).offset == 3
    finally:
        again.close()


def test_update_offset_alone_makes_an_offset_group(conn, unique):
    topic, group = unique("cm-commit"), unique("cm-commit-g")
    conn.create_topic(topic, queues=1)
    conn.send_ok(message(topic, "m"))
    assert conn.update_offset(group, topic, 0, 1).status.code == pb.OK
    pop_calls_refused(conn, group, topic)


def test_cli_consume_mode_flag(fresh_broker, conn, unique):
    topic, popper, puller = unique("cm-cli"), unique("cm-cli-pop"), unique("cm-cli-offsets")
    conn.create_topic(topic, queues=1)
    conn.send_ok(message(topic, "m"))
    result = fresh_broker.cli("group", "create", popper, "--consume-mode", "pop")
    assert result.returncode == 0 and "consume mode pop" in result.stdout, result
    result = fresh_broker.cli("group", "create", puller, "--consume-mode", "offset")
    assert result.returncode == 0 and "consume mode offset" in result.stdout, result

    # Given at creation, before any use: the other way is refused from the start.
    offset_calls_refused(conn, popper, topic)
    pop_calls_refused(conn, puller, topic)
    result = fresh_broker.cli("group", "describe", puller)
    assert result.returncode == 0 and ", consume mode offset, " in result.stdout.splitlines()[0], result

    result = fresh_broker.cli("group", "create", unique("cm-cli-bad"), "--consume-mode", "both")
    assert result.returncode != 0 and "consume-mode" in result.stderr and "Traceback" not in result.stderr, result
