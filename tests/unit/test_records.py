"""The stored record format and the zero-parse delivery overlay."""

import hashlib

from rockmq.protocol import pb, records, rpc


def _message(**sp) -> pb.Message:
    m = pb.Message(topic=pb.Resource(name="t"), body=b"payload", user_properties={"k": "v"})
    m.system_properties.message_id = "ID1"
    for k, v in sp.items():
        setattr(m.system_properties, k, v)
    return m


def test_seal_completes_system_properties_and_header():
    rec = records.seal(_message(tag="a", message_group="g"), queue_id=3, offset=42, store_ms=1700000000123, store_host="h:1")
    view = records.view(rec)
    assert (view.tag, view.message_group, view.store_ms) == ("a", "g", 1700000000123)
    m = records.decode(rec)
    sp = m.system_properties
    assert (sp.queue_id, sp.queue_offset, sp.store_host) == (3, 42, "h:1")
    assert sp.store_timestamp.ToMilliseconds() == 1700000000123
    assert sp.body_encoding == pb.IDENTITY
    assert sp.body_digest.type == pb.MD5 and sp.body_digest.checksum == hashlib.md5(b"payload").hexdigest().upper()
    assert m.user_properties["k"] == "v" and m.body == b"payload"


def test_untagged_record_has_no_tag():
    view = records.view(records.seal(_message(), 0, 0, 1, "h"))
    assert view.tag is None and view.message_group is None


def test_overlay_merges_delivery_fields_into_the_stored_payload():
    rec = records.seal(_message(tag="a"), 0, 5, 1, "h")
    frame = records.message_frame(2, records.view(rec).payload + records.delivery_overlay("RH", 3, 1500))
    resp = rpc.ReceiveMessageResponse.FromString(frame)
    sp = resp.message.system_properties
    assert resp.WhichOneof("content") == "message"
    assert (sp.receipt_handle, sp.delivery_attempt, sp.invisible_duration.ToMilliseconds()) == ("RH", 3, 1500)
    assert (sp.tag, sp.queue_offset, resp.message.body) == ("a", 5, b"payload")


def test_message_frame_handles_long_payloads():
    payload = pb.Message(body=b"x" * 300_000).SerializeToString()
    assert rpc.PullMessageResponse.FromString(records.message_frame(2, payload)).message.body == b"x" * 300_000
