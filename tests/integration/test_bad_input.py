"""Raw gRPC abuse: every bad request gets the documented RocketMQ status, and the broker survives.

The last test checks the shared broker still serves a normal send + receive after all of it.
"""

from __future__ import annotations

import base64
import socket
import threading
import time

import grpc
import pytest
from broker_process import BrokerProcess  # tests/ is on sys.path (tests/conftest.py)
from mqwire import META, RPC_TIMEOUT, Conn, code_name, message
from waiting import wait_for

from rockmq.protocol import batch, batch_grpc, pb, rpc

MiB = 1024 * 1024


def entry_code(reply: rpc.SendMessageResponse) -> int:
    assert len(reply.entries) == 1, reply
    assert reply.status.code == reply.entries[0].status.code, reply
    return reply.entries[0].status.code


def assert_code(actual: int, expected: int) -> None:
    assert actual == expected, f"got {code_name(actual)}, want {code_name(expected)}"


# --- SendMessage validation --------------------------------------------------------------------


def test_body_too_large(conn, unique):
    topic = unique("bad-big")
    reply = conn.send(message(topic, b"x" * (4 * MiB + 1)))
    assert_code(entry_code(reply), pb.MESSAGE_BODY_TOO_LARGE)
    assert reply.entries[0].message_id  # the id comes back even on refusal


def test_body_of_exactly_4_mib_is_accepted(conn, unique):
    topic = unique("bad-4mib")
    assert_code(entry_code(conn.send(message(topic, b"y" * (4 * MiB)))), pb.OK)


def test_empty_body(conn, unique):
    assert_code(entry_code(conn.send(message(unique("bad-empty"), b""))), pb.MESSAGE_BODY_EMPTY)


@pytest.mark.parametrize("name", ["", "has space", "slash/topic", "x" * 128, "emoji-\u2603"])
def test_illegal_topic_name_on_send(conn, name):
    assert_code(entry_code(conn.send(message(name, "body"))), pb.ILLEGAL_TOPIC)


def test_illegal_topic_name_on_route(conn):
    assert_code(conn.query_route("bad topic!").status.code, pb.ILLEGAL_TOPIC)


def test_empty_message_id(conn, unique):
    assert_code(entry_code(conn.send(message(unique("bad-id"), "body", message_id=""))), pb.ILLEGAL_MESSAGE_ID)


def test_illegal_tag(conn, unique):
    topic = unique("bad-tag")
    assert_code(entry_code(conn.send(message(topic, "b", tag="a|b"))), pb.ILLEGAL_MESSAGE_TAG)
    assert_code(entry_code(conn.send(message(topic, "b", tag="  "))), pb.ILLEGAL_MESSAGE_TAG)


def test_send_without_messages(conn):
    assert_code(conn.send().status.code, pb.BAD_REQUEST)


def test_mixed_batch_reports_each_entry(conn, unique):
    topic = unique("bad-mixed")
    good, bad = message(topic, "fine"), message(topic, b"")
    reply = conn.send(good, bad)
    assert_code(reply.status.code, pb.MULTIPLE_RESULTS)
    assert [e.message_id for e in reply.entries] == [good.system_properties.message_id, bad.system_properties.message_id]
    assert [e.status.code for e in reply.entries] == [pb.OK, pb.MESSAGE_BODY_EMPTY]
    assert sum(q.max_offset for q in conn.describe_topic(topic).queues) == 1  # only the good one stored


def test_unknown_topic_when_auto_create_is_off(tmp_path):
    b = BrokerProcess(tmp_path / "d", "--no-auto-create-topics").start()
    c = Conn(b.endpoint)
    try:
        assert_code(entry_code(c.send(message("no-such-topic", "body"))), pb.TOPIC_NOT_FOUND)
        assert_code(c.query_route("no-such-topic").status.code, pb.TOPIC_NOT_FOUND)
        code, msgs = c.receive("some-group", "no-such-topic")
        assert_code(code, pb.TOPIC_NOT_FOUND)
        assert not msgs
        assert "no-such-topic" not in c.topic_names()
        # A created topic works as usual.
        c.create_topic("made-by-admin", queues=1)
        assert_code(entry_code(c.send(message("made-by-admin", "body"))), pb.OK)
        assert_code(c.query_route("made-by-admin").status.code, pb.OK)
    finally:
        c.close()
        b.stop()


# --- ReceiveMessage validation -----------------------------------------------------------------


@pytest.mark.parametrize("group", ["", "bad group", "g" * 128])
def test_illegal_group_on_receive(conn, unique, group):
    topic = unique("bad-grp")
    conn.send_ok(message(topic, "body"))
    code, msgs = conn.receive(group, topic)
    assert_code(code, pb.ILLEGAL_CONSUMER_GROUP)
    assert not msgs


def test_receive_unknown_topic(conn, unique):
    code, _ = conn.receive(unique("g"), unique("never-created"))
    assert_code(code, pb.TOPIC_NOT_FOUND)


@pytest.mark.parametrize("invisible_ms", [-5_000, 12 * 3600 * 1000 + 1000, None])
def test_receive_illegal_invisible_time(conn, unique, invisible_ms):
    topic, group = unique("bad-inv"), unique("bad-inv-g")
    conn.send_ok(message(topic, "body"))
    code, msgs = conn.receive(group, topic, invisible_ms=invisible_ms)  # None: no duration and no auto_renew
    assert_code(code, pb.ILLEGAL_INVISIBLE_TIME)
    assert not msgs
    # Nothing was handed out: a valid receive gets the message, first attempt.
    got = conn.receive_n(group, topic, 1, within=5)
    assert len(got) == 1 and got[0].system_properties.delivery_attempt == 1


def test_receive_refuses_a_negative_batch_size(conn, unique):
    """ReceiveMessage and BatchMessaging.Receive refuse a negative batch size (as pull does) and hand
    nothing out; 0 means the default."""
    topic, group = unique("bad-batch"), unique("bad-batch-g")
    conn.send_ok(message(topic, "a"), message(topic, "b"))
    code, msgs = conn.receive(group, topic, batch=-1)
    assert_code(code, pb.BAD_REQUEST)
    assert not msgs
    reply = batch_grpc.BatchMessagingStub(conn.channel).Receive(
        batch.ReceiveRequest(group=group, topic=topic, batch_size=-5, invisible_duration_ms=30_000), timeout=RPC_TIMEOUT)
    assert_code(reply.status.code, pb.BAD_REQUEST)
    assert "batch_size" in reply.status.message and not reply.messages
    code, msgs = conn.receive(group, topic, batch=0)
    assert_code(code, pb.OK)
    assert sorted(m.body for m in msgs) == [b"a", b"b"]
    assert all(m.system_properties.delivery_attempt == 1 for m in msgs)


def test_receive_bad_sql_filter_is_refused_with_its_position(conn, unique):
    topic = unique("bad-sql")
    conn.send_ok(message(topic, "body"))
    req = rpc.ReceiveMessageRequest(group=pb.Resource(name=unique("g")),
                                    message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
                                    filter_expression=pb.FilterExpression(type=pb.SQL, expression="a > > 1"),
                                    batch_size=1)
    req.invisible_duration.FromSeconds(10)
    frames = list(conn.mq.ReceiveMessage(req, metadata=META, timeout=10))
    assert_code(frames[0].status.code, pb.ILLEGAL_FILTER_EXPRESSION)
    assert "column" in frames[0].status.message and "a > > 1" in frames[0].status.message, frames[0].status.message


# --- receipt handles: AckMessage and ChangeInvisibleDuration -----------------------------------


def _raw(handle: str) -> bytearray:
    """The signed token a handle starts with (its receive's), decoded; the handle ends in .<entry>."""
    token = handle.partition(".")[0]
    return bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))


def _entry(handle: str) -> str:
    return "." + handle.partition(".")[2]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


def forged_like(handle: str) -> str:
    """The same body with a different MAC: valid base64, right length, not issued by the broker."""
    raw = _raw(handle)
    raw[-1] ^= 0xFF
    return _b64(raw) + _entry(handle)


def tampered_body(handle: str) -> str:
    """Change the signed body (the group id's high byte), keep the old MAC: must not verify."""
    raw = _raw(handle)
    raw[1] ^= 0x01
    return _b64(raw) + _entry(handle)


@pytest.fixture
def delivered(conn, unique):
    """A topic, a group, and one message received (not acked) with a 60 s invisible time."""
    topic, group = unique("rh"), unique("rh-g")
    conn.send_ok(message(topic, "payload"))
    got = conn.receive_n(group, topic, 1, within=5, invisible_ms=60_000)
    assert len(got) == 1
    return topic, group, got[0]


def bad_handles(valid: str) -> dict[str, str]:
    return {
        "empty": "",
        "garbage": "not a receipt handle!!",
        "short-base64": base64.urlsafe_b64encode(b"short").decode(),
        "forged-mac": forged_like(valid),
        "tampered-body": tampered_body(valid),
        "zeros-right-length": _b64(bytes(len(_raw(valid)))) + _entry(valid),
        "no-such-entry": valid.partition(".")[0] + ".ff",
        "no-entry": valid.partition(".")[0],
    }


def test_ack_bad_handles(conn, delivered):
    topic, group, msg = delivered
    valid = msg.system_properties.receipt_handle
    for name, handle in bad_handles(valid).items():
        reply = conn.ack(group, topic, handle)
        assert reply.status.code == pb.INVALID_RECEIPT_HANDLE, (name, reply)
        assert len(reply.entries) == 1 and reply.entries[0].status.code == pb.INVALID_RECEIPT_HANDLE, (name, reply)
        assert reply.entries[0].receipt_handle == handle, name
    # None of it touched the real delivery.
    assert conn.ack(group, topic, msg).status.code == pb.OK


def test_ack_of_malformed_bytes(conn, delivered):
    """AckMessage is read from its bytes (protocol/ack_request.py): bytes that are no
    AckMessageRequest get INVALID_ARGUMENT (as every request that does not parse: rockmq/plumbing/unparsed.py),
    and the delivery stays unsettled."""
    topic, group, msg = delivered
    ack = conn.channel.unary_unary("/apache.rocketmq.v2.MessagingService/AckMessage")
    for garbage in (b"\x1a\x05ab", b"\xff", b"\x1a\x02\xc3\x28"):
        assert_unparsed(ack, garbage)
    assert conn.ack(group, topic, msg).status.code == pb.OK


def test_change_invisible_bad_handles_return_the_old_handle(conn, delivered):
    topic, group, msg = delivered
    valid = msg.system_properties.receipt_handle
    for name, handle in bad_handles(valid).items():
        reply = conn.change_invisible(group, topic, handle, ms=30_000)
        assert reply.status.code == pb.INVALID_RECEIPT_HANDLE, (name, reply)
        assert reply.receipt_handle == handle, name
    assert conn.ack(group, topic, msg).status.code == pb.OK


def test_handle_of_another_group_or_topic(conn, delivered, unique):
    topic, group, msg = delivered
    handle = msg.system_properties.receipt_handle
    other_group, other_topic = unique("rh-other-g"), unique("rh-other")
    conn.create_group(other_group)
    conn.send_ok(message(other_topic, "x"))
    assert_code(conn.ack(other_group, topic, handle).status.code, pb.INVALID_RECEIPT_HANDLE)
    assert_code(conn.ack(group, other_topic, handle).status.code, pb.INVALID_RECEIPT_HANDLE)
    reply = conn.change_invisible(other_group, topic, handle, ms=30_000)
    assert_code(reply.status.code, pb.INVALID_RECEIPT_HANDLE)
    assert reply.receipt_handle == handle
    assert_code(conn.ack(group, topic, handle).status.code, pb.OK)


def test_stale_handles(conn, delivered):
    topic, group, msg = delivered
    first = msg.system_properties.receipt_handle
    # ChangeInvisibleDuration supersedes the handle it was given.
    reply = conn.change_invisible(group, topic, first, ms=60_000)
    assert_code(reply.status.code, pb.OK)
    second = reply.receipt_handle
    assert second and second != first
    assert_code(conn.ack(group, topic, first).status.code, pb.INVALID_RECEIPT_HANDLE)
    reply = conn.change_invisible(group, topic, first, ms=60_000)
    assert_code(reply.status.code, pb.INVALID_RECEIPT_HANDLE)
    assert reply.receipt_handle == first
    # Ack, then the same handle again: stale.
    assert_code(conn.ack(group, topic, second).status.code, pb.OK)
    assert_code(conn.ack(group, topic, second).status.code, pb.INVALID_RECEIPT_HANDLE)
    reply = conn.change_invisible(group, topic, second, ms=10_000)
    assert_code(reply.status.code, pb.INVALID_RECEIPT_HANDLE)
    assert reply.receipt_handle == second


def test_same_handle_twice_in_one_ack(conn, delivered):
    topic, group, msg = delivered
    h = msg.system_properties.receipt_handle
    reply = conn.ack(group, topic, h, h)
    assert [e.status.code for e in reply.entries] == [pb.OK, pb.INVALID_RECEIPT_HANDLE], reply
    assert_code(reply.status.code, pb.MULTIPLE_RESULTS)


def test_expired_handles(conn, unique):
    topic, group = unique("rh-exp"), unique("rh-exp-g")
    conn.send_ok(message(topic, "a"), message(topic, "b"))
    got = conn.receive_n(group, topic, 2, within=5, invisible_ms=300)
    assert len(got) == 2
    time.sleep(0.4)  # the behaviour under test: the invisible time runs out
    h1, h2 = (m.system_properties.receipt_handle for m in got)
    assert_code(conn.ack(group, topic, h1).status.code, pb.INVALID_RECEIPT_HANDLE)
    reply = conn.change_invisible(group, topic, h2, ms=30_000)
    assert_code(reply.status.code, pb.INVALID_RECEIPT_HANDLE)
    assert reply.receipt_handle == h2
    # Both come back, second attempt.
    again = conn.receive_n(group, topic, 2, within=5)
    assert sorted(m.body for m in again) == [b"a", b"b"]
    assert all(m.system_properties.delivery_attempt == 2 for m in again)
    assert_code(conn.ack(group, topic, *again).status.code, pb.OK)


@pytest.mark.parametrize("seconds", [-1, -3600, 12 * 3600 + 1, 10**9])
def test_change_invisible_illegal_duration(conn, delivered, seconds):
    topic, group, msg = delivered
    handle = msg.system_properties.receipt_handle
    reply = conn.change_invisible(group, topic, handle, seconds=seconds)
    assert_code(reply.status.code, pb.ILLEGAL_INVISIBLE_TIME)
    assert reply.receipt_handle == handle
    assert_code(conn.ack(group, topic, msg).status.code, pb.OK)  # the delivery is untouched


# --- misbehaving clients -----------------------------------------------------------------------


def test_cancelled_long_poll_does_not_swallow_messages(harness, unique):
    conn = harness.conn
    topic, group = unique("cancel"), unique("cancel-g")
    conn.create_topic(topic, queues=1)
    req = rpc.ReceiveMessageRequest(group=pb.Resource(name=group),
                                    message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
                                    filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"), batch_size=1)
    req.invisible_duration.FromSeconds(60)
    req.long_polling_timeout.FromSeconds(10)
    call = conn.mq.ReceiveMessage(req, metadata=META, timeout=15)
    wait_for(lambda: harness.waiting_receives() == 1, what="the broker holding the poll")
    call.cancel()
    with pytest.raises(grpc.RpcError) as e:
        list(call)
    assert e.value.code() == grpc.StatusCode.CANCELLED
    wait_for(lambda: harness.waiting_receives() == 0, what="the broker dropping the cancelled poll")

    # The message that arrives now goes to the next live receive, not the dead one.
    conn.send_ok(message(topic, "after-cancel"))
    got = conn.receive_n(group, topic, 1, within=3)
    assert [m.body for m in got] == [b"after-cancel"], "the cancelled long poll took the message"
    assert got[0].system_properties.delivery_attempt == 1


def test_many_cancelled_long_polls(harness, unique):
    conn = harness.conn
    topic, group = unique("cancel-many"), unique("cancel-many-g")
    conn.create_topic(topic, queues=1)
    calls = []
    for _ in range(20):
        req = rpc.ReceiveMessageRequest(group=pb.Resource(name=group),
                                        message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=-1),
                                        batch_size=1)
        req.invisible_duration.FromSeconds(60)
        req.long_polling_timeout.FromSeconds(10)
        calls.append(conn.mq.ReceiveMessage(req, metadata=META, timeout=15))
    wait_for(lambda: harness.waiting_receives() == 20, what="the broker holding 20 polls")
    for c in calls:
        c.cancel()
    wait_for(lambda: harness.waiting_receives() == 0, what="the broker dropping the cancelled polls")
    conn.send_ok(*[message(topic, f"m{i}") for i in range(3)])
    got = conn.receive_n(group, topic, 3, within=3)
    assert sorted(m.body for m in got) == [b"m0", b"m1", b"m2"]


def test_long_poll_ends_before_the_client_deadline(conn, unique):
    topic, group = unique("deadline"), unique("deadline-g")
    conn.create_topic(topic, queues=1)
    t0 = time.monotonic()
    # The client asks for a 10 s poll but gives the call only 2 s: the broker must answer in time.
    code, msgs = conn.receive(group, topic, poll_s=10, timeout=2.0)
    elapsed = time.monotonic() - t0
    assert_code(code, pb.MESSAGE_NOT_FOUND)
    assert not msgs and 0.8 < elapsed < 2.0, elapsed


def _garbage_connection(port: int, payload: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        try:
            s.sendall(payload)
            s.settimeout(1)
            s.recv(4096)
        except OSError:
            pass


@pytest.mark.parametrize("payload", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    bytes(range(256)) * 64,
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\xff" * 4096,  # a valid preface, then junk frames
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 512,  # a TLS ClientHello start
    b"",
])
def test_garbage_bytes_on_the_port(broker, conn, unique, payload):
    _garbage_connection(broker.port, payload)
    assert broker.proc.poll() is None
    topic = unique("after-garbage")
    conn.send_ok(message(topic, "still alive"))


def test_half_open_connections(broker, conn, unique):
    socks = [socket.create_connection(("127.0.0.1", broker.port), timeout=3) for _ in range(20)]
    try:
        for s in socks[:10]:
            s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")  # then silence
        conn.send_ok(message(unique("half-open"), "fine"))
    finally:
        for s in socks:
            s.close()


def test_concurrent_garbage_and_traffic(broker, conn, unique):
    topic, group = unique("mixed-load"), unique("mixed-load-g")
    threads = [threading.Thread(target=_garbage_connection, args=(broker.port, bytes([i]) * 10_000)) for i in range(10)]
    for t in threads:
        t.start()
    conn.send_ok(*[message(topic, f"m{i}") for i in range(10)])
    for t in threads:
        t.join(5)
    got = conn.receive_n(group, topic, 10, within=5)
    assert len(got) == 10


# --- dedup -------------------------------------------------------------------------------------


def test_duplicate_message_id_is_stored_once(conn, unique):
    topic, group = unique("dedup"), unique("dedup-g")
    conn.create_topic(topic, queues=4)
    msg = message(topic, "once")
    first = conn.send_ok(msg)[0]
    second = conn.send_ok(msg)[0]
    assert first.message_id == second.message_id == msg.system_properties.message_id
    assert first.offset == second.offset
    # A retry in one request with other messages: still the original offset, still one copy.
    other = message(topic, "other")
    third = conn.send_ok(msg, other, msg)
    assert third[0].offset == third[2].offset == first.offset
    info = conn.describe_topic(topic)
    assert sum(q.max_offset - q.min_offset for q in info.queues) == 2
    stored = [m for q in range(4) for m in conn.pull_all(topic, q)]
    assert sorted(m.body for m in stored) == [b"once", b"other"]
    got = conn.receive_n(group, topic, 3, within=0.5)
    assert sorted(m.body for m in got) == [b"once", b"other"]


def test_same_message_id_on_two_topics_is_two_messages(conn, unique):
    t1, t2 = unique("dedup-a"), unique("dedup-b")
    mid = message(t1, "x").system_properties.message_id
    conn.send_ok(message(t1, "x", message_id=mid))
    conn.send_ok(message(t2, "x", message_id=mid))
    assert sum(q.max_offset for q in conn.describe_topic(t1).queues) == 1
    assert sum(q.max_offset for q in conn.describe_topic(t2).queues) == 1


# --- and after all that ------------------------------------------------------------------------


def test_zz_broker_still_serves(broker, conn, unique):
    assert broker.proc.poll() is None, "the broker process died"
    topic, group = unique("still"), unique("still-g")
    entries = conn.send_ok(message(topic, "ok-1", tag="t"), message(topic, "ok-2", tag="t"))
    assert all(e.status.code == pb.OK for e in entries)
    got = conn.receive_n(group, topic, 2, within=5)
    assert sorted(m.body for m in got) == [b"ok-1", b"ok-2"]
    assert_code(conn.ack(group, topic, *got).status.code, pb.OK)


def test_pull_message_batch_size(harness, unique):
    """PullMessage refuses a negative batch size, like the batch Pull; 0 means the default."""
    conn = harness.conn
    topic = unique("pull-batch")
    conn.create_topic(topic, queues=1)
    conn.send_ok(message(topic, "a"), message(topic, "b"))
    code, got, _ = conn.pull(unique("pull-batch-g"), topic, 0, 0, batch=-1)
    assert_code(code, pb.BAD_REQUEST)
    code, got, next_offset = conn.pull(unique("pull-batch-g"), topic, 0, 0, batch=0)
    assert_code(code, pb.OK)
    assert [m.body for m in got] == [b"a", b"b"] and next_offset == 2


def test_query_assignment_bad_topic_creates_no_group(harness, unique):
    conn, group = harness.conn, unique("assign-g")
    request = rpc.QueryAssignmentRequest(topic=pb.Resource(name="bad topic!"), group=pb.Resource(name=group))
    reply = conn.mq.QueryAssignment(request, metadata=META, timeout=5)
    assert_code(reply.status.code, pb.ILLEGAL_TOPIC)
    with pytest.raises(grpc.RpcError) as e:
        conn.describe_group(group)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND


def test_end_transaction_needs_a_resolution(harness, unique):
    reply = harness.conn.mq.EndTransaction(rpc.EndTransactionRequest(topic=pb.Resource(name=unique("txn")), message_id="m",
                                                                     transaction_id="t"), metadata=META, timeout=5)
    assert_code(reply.status.code, pb.BAD_REQUEST)
    assert "COMMIT or ROLLBACK" in reply.status.message


@pytest.mark.parametrize("raw", [b"\x0a\x05\x22\x09abc", b"\x0a\x07\x12\x05\x0a\x01\xff\x12\x00", b"\xff"])
def test_send_of_bytes_protobuf_cannot_parse(conn, raw):
    """Malformed bytes (a length past the end, a key that is not UTF-8, no field) fail the call with
    INVALID_ARGUMENT and a readable line, not gRPC's UNKNOWN naming the parser's exception."""
    call = conn.channel.unary_unary("/apache.rocketmq.v2.MessagingService/SendMessage")
    assert_unparsed(call, raw)


def assert_unparsed(call, raw: bytes) -> None:
    with pytest.raises(grpc.RpcError) as failed:
        call(raw, metadata=META, timeout=RPC_TIMEOUT)
    assert failed.value.code() == grpc.StatusCode.INVALID_ARGUMENT, failed.value
    assert "do not parse" in failed.value.details() and "Error" not in failed.value.details(), failed.value.details()


def test_send_of_bytes_the_scan_leaves_to_protobuf(conn, unique):
    """Valid bytes that are not protobuf's canonical form (fields out of order, a user property
    twice) are stored as protobuf parses them."""
    topic = unique("bad-order")
    msg = message(topic, "body", tag="t")
    sp = msg.system_properties.SerializeToString()
    raw = b"".join((b"\x22\x04body", b"\x1a", bytes([len(sp)]), sp, b"\x0a", bytes([len(msg.topic.SerializeToString())]),
                    msg.topic.SerializeToString(), b"\x12\x08\x0a\x01k\x12\x03one", b"\x12\x08\x0a\x01k\x12\x03two"))
    request = b"\x0a" + bytes([len(raw)]) + raw
    reply = rpc.SendMessageResponse.FromString(conn.channel.unary_unary(
        "/apache.rocketmq.v2.MessagingService/SendMessage")(request, metadata=META, timeout=RPC_TIMEOUT))
    assert_code(entry_code(reply), pb.OK)
    [got] = conn.receive_n(unique("bad-order-g"), topic, 1)
    assert (got.body, got.system_properties.tag, dict(got.user_properties)) == (b"body", "t", {"k": "two"})
