"""The stored record format and the zero-parse delivery overlay."""

import hashlib

import pytest

from rockmq.protocol import pb, records, rpc, send_request
from rockmq.protocol.field_keys import ReceivedMessageFields
from rockmq.protocol.wire import delimited, read_varint


def _message(**sp) -> pb.Message:
    m = pb.Message(topic=pb.Resource(name="t"), body=b"payload", user_properties={"k": "v"})
    m.system_properties.message_id = "ID1"
    for k, v in sp.items():
        setattr(m.system_properties, k, v)
    return m


def test_seal_completes_system_properties_and_header():
    rec = records.place(records.seal(_message(tag="a", message_group="g"), "h:1"), queue_id=3, offset=42, store_ms=1700000000123)
    view = records.view(rec)
    assert (view.tag, view.message_group, view.store_ms) == ("a", "g", 1700000000123)
    m = records.decode(rec)
    sp = m.system_properties
    assert (sp.queue_id, sp.queue_offset, sp.store_host) == (3, 42, "h:1")
    assert sp.store_timestamp.ToMilliseconds() == 1700000000123
    assert sp.body_encoding == pb.IDENTITY
    assert sp.body_digest.type == pb.SHA1 and sp.body_digest.checksum == hashlib.sha1(b"payload").hexdigest().upper()
    assert m.user_properties["k"] == "v" and m.body == b"payload"


def test_untagged_record_has_no_tag():
    view = records.view(records.place(records.seal(_message(), "h"), 0, 0, 1))
    assert view.tag is None and view.message_group is None


def test_delivery_fields_are_spliced_into_the_one_system_properties_field():
    rec = records.place(records.seal(_message(tag="a"), "h"), 0, 5, 1)
    frame = delimited(ReceivedMessageFields.MESSAGE, records.view(rec).message(records.delivery_fields("RH", 3, 1500)))
    resp = rpc.ReceiveMessageResponse.FromString(frame)
    sp = resp.message.system_properties
    assert resp.WhichOneof("content") == "message"
    assert (sp.receipt_handle, sp.delivery_attempt, sp.invisible_duration.ToMilliseconds()) == ("RH", 3, 1500)
    assert (sp.tag, sp.queue_offset, resp.message.body) == ("a", 5, b"payload")
    # Exactly one system_properties field on the wire (Node's decoder keeps only the last copy).
    assert _count_field(records.view(rec).message(records.delivery_fields("RH", 3, 1500)), 3) == 1


def test_framed_message_is_the_delimited_field():
    rec = records.place(records.seal(_message(tag="a"), "h"), 0, 5, 1)
    delivery = records.delivery_fields("RH", 3, 1500)
    for body in (b"", b"x" * 200, b"y" * 70_000):  # lengths of one, two and three varint bytes
        m = _message()
        m.body = body
        view = records.view(records.place(records.seal(m, "h"), 0, 5, 1))
        framed = ReceivedMessageFields.MESSAGE
        assert view.message(delivery, framed) == delimited(framed, view.message(delivery))
    assert records.view(rec).message(delivery, b"") == records.view(rec).message(delivery)


def _count_field(buf: bytes, number: int) -> int:
    """Count occurrences of a length-delimited top-level field in a serialized message."""
    i, n = 0, 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        assert key & 7 == 2
        length, i = read_varint(buf, i)
        n += key >> 3 == number
        i += length
    return n


def test_message_frame_handles_long_payloads():
    payload = pb.Message(body=b"x" * 300_000).SerializeToString()
    assert rpc.PullMessageResponse.FromString(delimited(ReceivedMessageFields.MESSAGE, payload)).message.body == b"x" * 300_000


def test_placing_overrides_placement_fields_a_client_sent_and_reads_group_from_header():
    m = _message(message_group="g")
    m.system_properties.queue_id = 7
    m.system_properties.store_timestamp.FromNanoseconds(123)
    sealed = records.seal(m, "h")
    assert records.message_group(sealed) == "g"
    sp = records.decode(records.place(sealed, 2, 9, 5000)).system_properties
    assert (sp.queue_id, sp.queue_offset, sp.store_timestamp.ToNanoseconds()) == (2, 9, 5_000_000_000)
    assert records.view(records.place(sealed, 2, 9, 5000)).store_ms == 5000


def test_a_record_of_another_version_is_refused_not_misread():
    rec = bytearray(records.place(records.seal(_message(tag="a", message_group="g"), "h"), 0, 5, 1))
    rec[0] = 7
    for read in (records.view, records.message_group, records.store_ms, records.decode):
        with pytest.raises(records.RecordVersionError, match="record version 7 is not one this rockmq reads"):
            read(bytes(rec))


def test_header_layout_matches_the_header():
    assert records.HEADER.format == ">BQHHI" and records.HEADER.size == 17
    assert records.HEADER_LAYOUT == {"version": (0, 1), "store_ms": (1, 8), "tag_len": (9, 2), "group_len": (11, 2),
                                     "rest_len": (13, 4)}


def test_sealing_from_parts_reads_as_sealing_the_message():
    m = _message(tag="a", message_group="g")
    m.system_properties.body_digest.type = pb.SHA1
    m.system_properties.body_digest.checksum = hashlib.sha1(m.body).hexdigest().upper()
    sp_bytes = m.system_properties.SerializeToString()
    rest = pb.Message(topic=m.topic, user_properties=m.user_properties, body=m.body).SerializeToString()
    from_parts = b"".join(records.seal_parts(pb.SystemProperties.FromString(sp_bytes), rest, sp_bytes, "h:1"))
    from_message = records.seal(m, "h:1")
    assert records.decode(from_parts) == records.decode(from_message)
    assert records.view(from_parts)[:3] == records.view(from_message)[:3]


def test_a_sealed_record_keeps_the_chosen_queue_until_it_is_placed():
    assert records.chosen_queue(records.seal(_message(), "h")) == -1  # the broker chooses
    sealed = records.seal(_message(queue_id=9), "h", queue_id=5)
    assert records.chosen_queue(sealed) == 5
    placed = records.place(sealed, 5, 0, 1700000000123)
    assert records.view(placed).store_ms == 1700000000123 and records.decode(placed).system_properties.queue_id == 5


def test_the_broker_s_fields_win_over_what_a_client_sent_for_them():
    """A client's own digest, store host and placement fields are overridden (appended fields win)."""
    m = _message(store_host="client:1", queue_id=7, queue_offset=99, body_encoding=pb.GZIP)
    m.system_properties.body_digest.type = pb.MD5
    m.system_properties.body_digest.checksum = "not-the-sha1"
    m.system_properties.store_timestamp.seconds = 5
    m.system_properties.store_timestamp.nanos = 123
    rec = records.place(records.seal(m, "h:1"), queue_id=3, offset=42, store_ms=1700000000000)
    sp = records.decode(rec).system_properties
    assert (sp.store_host, sp.queue_id, sp.queue_offset, sp.body_encoding) == ("h:1", 3, 42, pb.GZIP)
    assert sp.body_digest.type == pb.SHA1 and sp.body_digest.checksum == hashlib.sha1(b"payload").hexdigest().upper()
    assert sp.store_timestamp.ToMilliseconds() == 1700000000000 and sp.store_timestamp.nanos == 0


def test_placed_is_place_of_seal():
    for sp in ({}, {"tag": "a", "message_group": "g"}):
        sealed = records.seal(_message(**sp), "h:1")
        sent = send_request.parsed(_message(**sp))
        assert records.placed(sent.tag, sent.message_group, sent.rest, sent.system_properties, sent.body_encoding, sent.body,
                              "h:1", 2, 300, 1700000000123) == records.place(sealed, 2, 300, 1700000000123)


def _run_of(n: int) -> list[tuple[bytes, bytes]]:
    """A log scan's (key, record) for offsets 10, 11, ...: the key is the offset, 8 bytes."""
    return [((10 + i).to_bytes(8, "big"), records.place(records.seal(_message(tag=f"t{i}"), "h"), 2, 10 + i, 1))
            for i in range(n)]


def test_frame_run_frames_each_record_as_view_message_does():
    run = _run_of(5)
    out: list[bytes] = []
    offsets: list[int] = []
    added, stopped = records.frame_run(iter(run), _offset, "TOKEN", 7, records.delivery_tail(1500, 1),
                                       ReceivedMessageFields.MESSAGE, 100, 1 << 20, 1 << 62, out, offsets)
    assert stopped is None and offsets == [10, 11, 12, 13, 14] and added == sum(map(len, out))
    assert out == [records.view(rec).message(records.delivery_fields(f"TOKEN.{7 + i:x}", 1, 1500), ReceivedMessageFields.MESSAGE)
                   for i, (_, rec) in enumerate(run)]


@pytest.mark.parametrize("room, limit, below, taken", [(2, 1 << 20, 1 << 62, 2), (100, 1, 1 << 62, 1), (100, 1 << 20, 13, 3)])
def test_frame_run_stops_before_the_record_it_leaves(room: int, limit: int, below: int, taken: int):
    """Out of room, past `limit` bytes (the record that crosses it is taken) or at `below`: the
    record it stopped at comes back untaken, the scan's rest unread."""
    run = _run_of(5)
    scan = iter(run)
    out: list[bytes] = []
    offsets: list[int] = []
    _, stopped = records.frame_run(scan, _offset, "T", 0, b"", b"", room, limit, below, out, offsets)
    assert offsets == list(range(10, 10 + taken)) and len(out) == taken
    assert stopped == run[taken] and list(scan) == run[taken + 1:]


def _offset(key: bytes) -> int:
    return int.from_bytes(key, "big")
