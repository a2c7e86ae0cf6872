"""protocol/send_request.py: the scan of a SendMessageRequest's bytes agrees with protobuf's parse,
and the record built from its slices is the one the protobuf path wrote, for random valid and
malformed requests; bytes it does not read fall back to protobuf, which refuses malformed ones."""

from __future__ import annotations

import hashlib

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from rockmq.protocol import pb, records, rpc
from rockmq.protocol.send_request import SentMessage, parsed, read, scan

HOST = "127.0.0.1:8081"
texts = st.text(max_size=12)
maybe = st.one_of(st.none(), texts)


@st.composite
def messages(draw: st.DrawFn) -> pb.Message:
    """A v2 Message with any of the fields a producer (or a confused one) sets."""
    sp = pb.SystemProperties(message_id=draw(texts), keys=draw(st.lists(texts, max_size=3)),
                             message_type=draw(st.sampled_from([0, pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION, 99])),
                             queue_id=draw(st.sampled_from([0, 3, 2**31 - 1, -1])), born_host=draw(texts),
                             body_encoding=draw(st.sampled_from([0, pb.IDENTITY, pb.GZIP])))
    for field, value in (("tag", draw(maybe)), ("message_group", draw(maybe)), ("trace_context", draw(maybe)),
                         ("store_host", draw(st.one_of(st.none(), st.just("h:1")))),
                         ("queue_offset", draw(st.one_of(st.none(), st.integers(0, 2**40)))),
                         ("delivery_attempt", draw(st.one_of(st.none(), st.just(2)))),
                         ("lite_topic", draw(maybe)), ("priority", draw(st.sampled_from([None, 0, 7, -1])))):
        if value is not None:
            setattr(sp, field, value)
    for stamp in ("delivery_timestamp", "born_timestamp", "store_timestamp"):
        if draw(st.booleans()):
            getattr(sp, stamp).seconds = draw(st.sampled_from([0, 1, 1_764_000_000, 1_764_000_000_123, -5]))
            getattr(sp, stamp).nanos = draw(st.sampled_from([0, 7, 999_999_999]))
    if draw(st.booleans()):
        sp.body_digest.type = draw(st.sampled_from([0, pb.SHA1, pb.MD5]))
        sp.body_digest.checksum = draw(texts)
    msg = pb.Message(body=draw(st.binary(max_size=300)),
                     user_properties=draw(st.dictionaries(texts, texts, max_size=draw(st.sampled_from([1, 4])))))
    if draw(st.booleans()):
        msg.topic.name = draw(texts)
        msg.topic.resource_namespace = draw(st.sampled_from(["", "ns"]))
    if draw(st.booleans()):
        msg.system_properties.CopyFrom(sp)
    return msg


requests = st.lists(messages(), max_size=4).map(lambda ms: rpc.SendMessageRequest(messages=ms).SerializeToString())


def _old_parts(msg: pb.Message) -> records.Parts:
    """The record parts as the protobuf path cut them before the scan (records.message_parts then)."""
    sp = msg.system_properties
    for placed in ("queue_id", "queue_offset", "store_timestamp"):
        sp.ClearField(placed)
    tag = sp.tag.encode() if sp.HasField("tag") else b""
    group = sp.message_group.encode() if sp.HasField("message_group") else b""
    encoding = b"" if sp.body_encoding else records.IDENTITY_ENCODING
    sp_bytes = b"".join((sp.SerializeToString(), records._store_host(HOST), encoding, records._SHA1_DIGEST,
                         hashlib.sha1(msg.body).hexdigest().upper().encode()))
    msg.ClearField("system_properties")
    return records.Parts(tag, group, msg.SerializeToString(), sp_bytes)


def _agrees(sent: SentMessage, msg: pb.Message) -> None:
    """What the scan read of a message is what protobuf parsed, and its record is the old path's
    (user properties in the order they came: protobuf's own order is a per-process hash order)."""
    sp = msg.system_properties
    assert sent.topic == msg.topic.name
    assert sent.user_properties == dict(msg.user_properties)
    assert sent.tag == (sp.tag if sp.HasField("tag") else None)
    assert sent.message_group == (sp.message_group if sp.HasField("message_group") else None)
    assert sent.keys == list(sp.keys) and sent.message_id == sp.message_id and sent.queue_id == sp.queue_id
    assert sent.lite_topic == (sp.lite_topic if sp.HasField("lite_topic") else None)
    assert sent.priority == (sp.priority if sp.HasField("priority") else None)
    assert (sent.body_encoding, sent.message_type) == (sp.body_encoding, sp.message_type)
    ts = sp.delivery_timestamp
    assert sent.delivery == ((ts.seconds, ts.nanos) if sp.HasField("delivery_timestamp") else None)
    assert bytes(sent.body) == msg.body
    new = records.received_parts(sent.tag, sent.message_group, sent.rest, sent.system_properties, sent.body_encoding,
                                 sent.body, HOST)
    old = _old_parts(msg)
    assert (new.tag, new.message_group, new.system_properties) == (old.tag, old.message_group, old.system_properties)
    if len(msg.user_properties) <= 1:
        assert new.rest == old.rest
        stored = records.placed(sent.tag, sent.message_group, sent.rest, sent.system_properties, sent.body_encoding,
                                sent.body, HOST, 3, 17, 1_764_000_000_123)
        sealed = b"".join((records._head(old.tag, old.message_group, len(old.rest)), old.rest, old.system_properties))
        assert stored == records.place(sealed, 3, 17, 1_764_000_000_123)
    else:
        assert pb.Message.FromString(new.rest) == pb.Message.FromString(old.rest) and len(new.rest) == len(old.rest)


def _check(raw: bytes) -> None:
    scanned = scan(raw)
    try:
        request = rpc.SendMessageRequest.FromString(raw)
    except DecodeError:
        assert scanned is None  # malformed: the caller parses, and protobuf refuses it as before
        with pytest.raises(DecodeError):
            read(raw)
        return
    if scanned is None:  # valid but not what the scan reads: read() parses it
        scanned = read(raw)
    assert len(scanned) == len(request.messages)
    for sent, msg in zip(scanned, request.messages, strict=True):
        _agrees(sent, msg)


@settings(max_examples=400, deadline=None)
@given(requests)
def test_scan_agrees_with_protobuf(raw: bytes) -> None:
    _check(raw)


@settings(max_examples=400, deadline=None)
@given(requests, st.data())
def test_malformed_bytes_read_as_protobuf_reads_them(raw: bytes, data: st.DataObject) -> None:
    """A byte changed, cut off or inserted: the scan reads it as protobuf does, or not at all."""
    if not raw:
        raw = b"\x0a\x00"
    at = data.draw(st.integers(0, len(raw) - 1))
    how = data.draw(st.sampled_from(["flip", "cut", "insert"]))
    byte = data.draw(st.integers(0, 255))
    raw = (raw[:at] + bytes([byte]) + raw[at + 1:] if how == "flip" else raw[:at] if how == "cut"
           else raw[:at] + bytes([byte]) + raw[at:])
    _check(raw)


def test_the_common_message_is_scanned() -> None:
    """What the clients send (rockmq's, the official ones) takes the scan, not the fallback."""
    msg = pb.Message(topic=pb.Resource(name="orders"), body=b"x" * 1024, user_properties={"trace": "abc"})
    sp = msg.system_properties
    sp.message_id, sp.tag, sp.message_type, sp.born_host, sp.queue_id = "01ABC", "created", pb.NORMAL, "127.0.0.1", 2
    sp.body_encoding = pb.IDENTITY
    sp.keys.append("order-1")
    sp.born_timestamp.GetCurrentTime()
    sp.delivery_timestamp.seconds = 1_764_000_000
    sp.body_digest.type, sp.body_digest.checksum = pb.SHA1, "AB"
    raw = rpc.SendMessageRequest(messages=[msg, msg]).SerializeToString()
    scanned = scan(raw)
    assert scanned is not None and len(scanned) == 2
    assert scanned[0].queue_id == 2 and scanned[0].delivery == (1_764_000_000, 0)
    _agrees(scanned[0], pb.Message.FromString(msg.SerializeToString()))
    assert scan(b"") == []


@pytest.mark.parametrize("raw", [
    b"\x0a\x05\x22\x03abc" + b"\x0a\x02\x22\x00",  # an empty body written (protobuf would leave it out)
    b"\x0a\x04\x1a\x02\x18\x00",  # message_id written empty
    b"\x0a\x06\x1a\x04\xb8\x01\x01\x00",  # an unknown system property (23) and a stray byte
    b"\x0a\x03\x22\x01a\x12\x00",  # an unknown request field
    b"\x0a\x04\x1a\x02\x1a\x00" b"\x0a\x04\x1a\x02\x1a\x00",  # fine, twice (message_id empty: written empty)
    b"\x0a\x07\x12\x05\x0a\x01\xff\x12\x00",  # a user property key that is not UTF-8
    b"\x0a\x04\x1a\x02\x30\x80",  # a varint cut off
])
def test_unusual_bytes_fall_back(raw: bytes) -> None:
    assert scan(raw) is None
    _check(raw)


def test_parsed_is_what_the_scan_reads() -> None:
    msg = pb.Message(topic=pb.Resource(name="t"), body=b"b", user_properties={"a": "1"})
    msg.system_properties.message_id = "m"
    msg.system_properties.queue_id = 5
    scanned = scan(rpc.SendMessageRequest(messages=[msg]).SerializeToString())
    assert scanned is not None
    assert parsed(pb.Message.FromString(msg.SerializeToString())) == scanned[0]


def test_lite_topic_and_priority_are_scanned() -> None:
    """A lite message's lite topic and a priority (0 included: the field is optional) are read by the scan."""
    for field, value in (("lite_topic", "session-1"), ("priority", 0), ("priority", 9)):
        msg = pb.Message(topic=pb.Resource(name="t"), body=b"b")
        msg.system_properties.message_id = "m"
        setattr(msg.system_properties, field, value)
        scanned = scan(rpc.SendMessageRequest(messages=[msg]).SerializeToString())
        assert scanned is not None and getattr(scanned[0], field) == value
        assert parsed(pb.Message.FromString(msg.SerializeToString())) == scanned[0]
