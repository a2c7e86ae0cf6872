"""The protobuf field keys rockmq encodes by hand, pinned: derived from the descriptors, they must
be the bytes the wire format says (a renumbered field in a .proto shows up here first)."""

from __future__ import annotations

from google.protobuf import duration_pb2, timestamp_pb2

from rockmq.protocol import field_keys as fk
from rockmq.protocol import rpc


def test_keys_are_pinned():
    m = fk.MessageFields
    assert (m.TOPIC, m.USER_PROPERTIES, m.SYSTEM_PROPERTIES, m.BODY) == (b"\x0a", b"\x12", b"\x1a", b"\x22")
    assert (fk.ResourceFields.NAME, fk.MapEntryFields.KEY, fk.MapEntryFields.VALUE) == (b"\x12", b"\x0a", b"\x12")
    sp = fk.SystemPropertiesFields
    assert [sp.TAG, sp.KEYS, sp.MESSAGE_ID, sp.BODY_DIGEST, sp.BODY_ENCODING, sp.MESSAGE_TYPE, sp.BORN_TIMESTAMP,
            sp.BORN_HOST, sp.STORE_TIMESTAMP, sp.STORE_HOST, sp.DELIVERY_TIMESTAMP, sp.RECEIPT_HANDLE, sp.QUEUE_ID,
            sp.QUEUE_OFFSET, sp.INVISIBLE_DURATION, sp.DELIVERY_ATTEMPT, sp.MESSAGE_GROUP] == [
        b"\x0a", b"\x12", b"\x1a", b"\x22", b"\x28", b"\x30", b"\x3a", b"\x42", b"\x4a", b"\x52", b"\x5a", b"\x62",
        b"\x68", b"\x70", b"\x7a", b"\x80\x01", b"\x8a\x01"]
    digest, ts = fk.DigestFields, fk.TimestampFields
    assert (digest.TYPE, digest.CHECKSUM, ts.SECONDS, ts.NANOS) == (b"\x08", b"\x12", b"\x08", b"\x10")
    assert fk.ReceivedMessageFields.MESSAGE == b"\x12"
    stage = fk.StageRequestFields
    assert (stage.SYSTEM_PROPERTIES, stage.TTL_MS, stage.DEDUPLICATE, stage.CONTENTS) == (b"\x0a", b"\x10", b"\x18", b"\x22")
    fetch = fk.FetchResponseFields
    assert [fetch.STATUS, fetch.FIRST_OFFSET, fetch.COUNT, fetch.RECORDS, fetch.OFFSETS, fetch.MIN_OFFSET,
            fetch.MAX_OFFSET] == [b"\x0a", b"\x10", b"\x18", b"\x22", b"\x2a", b"\x30", b"\x38"]


def test_shared_keys_are_shared():
    """One key stands for fields that have the same number and type in two messages."""
    assert fk.key(rpc.PullMessageResponse.DESCRIPTOR, "message") == fk.ReceivedMessageFields.MESSAGE
    for name in ("seconds", "nanos"):  # records.timestamp encodes Durations with the Timestamp keys
        assert fk.key(duration_pb2.Duration.DESCRIPTOR, name) == fk.key(timestamp_pb2.Timestamp.DESCRIPTOR, name)
