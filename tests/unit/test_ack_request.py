"""AckMessageRequest read from its bytes (protocol/ack_request.py): the canonical encoding is
scanned, anything else parsed by protobuf, with the same result; malformed bytes are refused."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rockmq.protocol import pb, rpc
from rockmq.protocol.ack_request import AckRequest, read, scan
from rockmq.protocol.field_keys import key
from rockmq.protocol.wire import delimited

texts = st.text(max_size=40)


def _request(group: str, topic: str, entries: list[tuple[str, str]], namespace: str = "") -> bytes:
    return rpc.AckMessageRequest(group=pb.Resource(name=group, resource_namespace=namespace), topic=pb.Resource(name=topic),
                                 entries=[rpc.AckMessageEntry(message_id=m, receipt_handle=h) for m, h in entries]
                                 ).SerializeToString()


def _by_protobuf(data: bytes) -> AckRequest:
    request = rpc.AckMessageRequest.FromString(data)
    return AckRequest(request.group.name, request.topic.name, [e.receipt_handle for e in request.entries],
                      [rpc.AckMessageEntry(message_id=e.message_id, receipt_handle=e.receipt_handle).SerializeToString()
                       for e in request.entries])


@given(texts, texts, st.lists(st.tuples(texts, texts), max_size=40), texts)
def test_canonical_requests_are_scanned(group, topic, entries, namespace):
    data = _request(group, topic, entries, namespace)
    assert scan(data) == read(data) == _by_protobuf(data)


def test_unusual_requests_are_parsed_by_protobuf():
    """An entry's lite_topic, an unknown field, fields out of order: not scanned, read all the same."""
    plain = _request("g", "t", [("id-1", "handle-1"), ("id-2", "handle-2")])
    with_lite = rpc.AckMessageRequest(group=pb.Resource(name="g"), topic=pb.Resource(name="t"), entries=[
        rpc.AckMessageEntry(message_id="id-1", receipt_handle="handle-1", lite_topic="lite")]).SerializeToString()
    unknown = plain + b"\x22\x01x"  # field 4, length-delimited
    reordered = delimited(key(rpc.AckMessageRequest.DESCRIPTOR, "topic"), pb.Resource(name="t").SerializeToString()) \
        + delimited(key(rpc.AckMessageRequest.DESCRIPTOR, "group"), pb.Resource(name="g").SerializeToString())
    for data in (with_lite, unknown, reordered):
        assert scan(data) is None
        assert read(data) == _by_protobuf(data)
    assert read(with_lite).entries == [rpc.AckMessageEntry(message_id="id-1", receipt_handle="handle-1").SerializeToString()]


@pytest.mark.parametrize("data", [b"\x1a\x05ab", b"\xff", b"\x1a\x02\xc3\x28"])
def test_malformed_bytes_are_refused(data):
    with pytest.raises(ValueError, match="malformed AckMessageRequest"):
        read(data)
