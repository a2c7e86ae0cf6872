"""No input poisons a queue (issue 20 §1.1-1.3): fields too long for the stored record, oversized
keys and properties, out-of-range numbers and unparseable bytes are refused with a 4xxxx status
before anything is written; a request mixing good and bad messages leaves no offset gap."""

from __future__ import annotations

import grpc
import pytest
from mqwire import META, RPC_TIMEOUT, Conn, code_name, message

from rockmq.config import Settings
from rockmq.protocol import pb, rpc

LIMIT = 1024  # tags and message groups
HUGE = 70_000  # over what the record's 16-bit length fields hold


def codes(reply: rpc.SendMessageResponse) -> list[str]:
    return [code_name(e.status.code) for e in reply.entries]


@pytest.mark.parametrize("bad, code", [
    pytest.param(lambda t: message(t, "bad", tag="t" * HUGE), "ILLEGAL_MESSAGE_TAG", id="tag"),
    pytest.param(lambda t: message(t, "bad", group="g" * HUGE), "ILLEGAL_MESSAGE_GROUP", id="group"),
])
def test_a_field_too_long_for_the_record_leaves_no_gap(conn: Conn, unique, bad, code):
    topic = unique("poison")
    conn.create_topic(topic, 1, ("NORMAL", "FIFO"))
    assert codes(conn.send(message(topic, "first"), bad(topic), message(topic, "third"))) == ["OK", code, "OK"]
    assert [m.body for m in conn.pull_all(topic, 0)] == [b"first", b"third"]
    assert codes(conn.send(message(topic, "after"))) == ["OK"]
    assert [m.body for m in conn.pull_all(topic, 0)][-1] == b"after"


@pytest.mark.parametrize("size, code", [(LIMIT, "OK"), (LIMIT + 1, "ILLEGAL_MESSAGE_TAG")])
def test_tags_up_to_1024_bytes(conn: Conn, unique, size, code):
    assert codes(conn.send(message(unique("tag-len"), "x", tag="é" * (size // 2) + "t" * (size % 2)))) == [code]


@pytest.mark.parametrize("size, code", [(LIMIT, "OK"), (LIMIT + 1, "ILLEGAL_MESSAGE_GROUP")])
def test_message_groups_up_to_1024_bytes(conn: Conn, unique, size, code):
    assert codes(conn.send(message(unique("group-len"), "x", group="g" * size))) == [code]


def test_keys_and_properties_share_one_limit(conn: Conn, unique):
    limit = Settings().max_properties_size
    topic = unique("props")
    half = "k" * (limit // 2)
    assert codes(conn.send(message(topic, "x", keys=(half,), properties={"p": "v" * (limit // 2 - 2)}))) == ["OK"]
    assert codes(conn.send(message(topic, "x", keys=(half,), properties={"p": "v" * (limit // 2)}))) == \
        ["MESSAGE_PROPERTIES_TOO_LARGE"]
    assert codes(conn.send(message(topic, "x", keys=("k" * 1000,) * 41))) == ["MESSAGE_PROPERTIES_TOO_LARGE"]


def test_query_offset_at_a_time_datetime_cannot_hold(conn: Conn, unique):
    topic = unique("qo-far")
    conn.send(message(topic, "x"))
    req = rpc.QueryOffsetRequest(message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=0),
                                 query_offset_policy=pb.TIMESTAMP)
    for seconds in (10**15, -(10**15)):
        req.timestamp.seconds = seconds
        reply = conn.mq.QueryOffset(req, metadata=META, timeout=RPC_TIMEOUT)
        assert 40000 <= reply.status.code < 50000, (seconds, reply)


@pytest.mark.parametrize("method", ["SendMessage", "QueryRoute", "QueryOffset", "AckMessage", "Heartbeat",
                                    "ChangeInvisibleDuration", "EndTransaction", "UpdateOffset", "GetOffset"])
def test_bytes_that_do_not_parse_answer_invalid_argument(conn: Conn, method):
    call = conn.channel.unary_unary(f"/apache.rocketmq.v2.MessagingService/{method}")
    with pytest.raises(grpc.RpcError) as e:
        call(b"\x0a\xff\xff\xff\xff\x0f", metadata=META, timeout=RPC_TIMEOUT)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (e.value.code(), e.value.details())
    assert "Error" not in (e.value.details() or "") and "Decode" not in (e.value.details() or ""), e.value.details()


def test_a_transaction_asking_a_first_check_beyond_any_date_is_taken(conn: Conn, unique):
    """`orphaned_transaction_recovery_duration` of 10^17 s once overflowed the half message's
    stored check time (INTERNAL_ERROR for the whole request); it is held to max_delay_s."""
    topic = unique("txn-far")
    conn.create_topic(topic, 1, ("NORMAL", "TRANSACTION"))
    half = message(topic, "half")
    half.system_properties.message_type = pb.TRANSACTION
    half.system_properties.orphaned_transaction_recovery_duration.seconds = 10**17
    assert codes(conn.send(message(topic, "first"), half)) == ["OK", "OK"]
    assert [m.body for m in conn.pull_all(topic, 0)] == [b"first"]


@pytest.mark.parametrize("method, response", [("ReceiveMessage", rpc.ReceiveMessageResponse),
                                              ("PullMessage", rpc.PullMessageResponse)])
def test_a_stream_whose_request_does_not_parse_answers_bad_request(conn: Conn, method, response):
    """A server stream answers refusals in its status frame: there, bytes that do not parse are BAD_REQUEST."""
    call = conn.channel.unary_stream(f"/apache.rocketmq.v2.MessagingService/{method}",
                                     response_deserializer=response.FromString)
    frames = list(call(b"\x0a\xff\xff\xff\xff\x0f", metadata=META, timeout=RPC_TIMEOUT))
    assert code_name(frames[0].status.code) == "BAD_REQUEST", frames
    assert "do not parse" in frames[0].status.message


def test_a_telemetry_command_that_does_not_parse_is_refused_and_the_stream_goes_on(conn: Conn, unique):
    call = conn.channel.stream_stream("/apache.rocketmq.v2.MessagingService/Telemetry",
                                      response_deserializer=rpc.TelemetryCommand.FromString)
    settings = rpc.TelemetryCommand(settings=pb.Settings(client_type=pb.PRODUCER, publishing=pb.Publishing(
        topics=[pb.Resource(name=unique("tele"))]))).SerializeToString()
    replies = call(iter([b"\x12\xff", settings]), metadata=META, timeout=RPC_TIMEOUT)
    first, second = next(replies), next(replies)
    replies.cancel()
    assert code_name(first.status.code) == "BAD_REQUEST" and "do not parse" in first.status.message, first
    assert code_name(second.status.code) == "OK" and second.HasField("settings"), second
