"""The stored message record: a small header plus the v2 `Message` exactly as it is delivered.

    record = version:u8 · store_ms:u64 · tag_len:u16 · group_len:u16 · tag · message_group · payload

`payload` is a serialized `apache.rocketmq.v2.Message` whose system properties were completed at
store time (queue id and offset, store time and host, body digest and encoding). Delivering it
costs no parse: protobuf merges concatenated encodings, so the per-delivery fields (receipt
handle, attempt, invisible time) are appended as a small overlay. The header lets the broker
filter by tag and order by message group without parsing the payload.
"""

from __future__ import annotations

import hashlib
import struct
from typing import NamedTuple

from rockmq.protocol import pb

_HEADER = struct.Struct(">BQHH")
VERSION = 1


class RecordView(NamedTuple):
    store_ms: int
    tag: str | None
    message_group: str | None
    payload: bytes


def seal(msg: pb.Message, queue_id: int, offset: int, store_ms: int, store_host: str) -> bytes:
    """Complete a received message's system properties and encode it as a record."""
    sp = msg.system_properties
    sp.queue_id = queue_id
    sp.queue_offset = offset
    sp.store_timestamp.FromMilliseconds(store_ms)
    sp.store_host = store_host
    if sp.body_encoding == pb.ENCODING_UNSPECIFIED:
        sp.body_encoding = pb.IDENTITY
    sp.body_digest.type = pb.MD5
    sp.body_digest.checksum = hashlib.md5(msg.body).hexdigest().upper()
    return encode(msg, store_ms)


def encode(msg: pb.Message, store_ms: int) -> bytes:
    sp = msg.system_properties
    tag = sp.tag.encode() if sp.HasField("tag") else b""
    group = sp.message_group.encode() if sp.HasField("message_group") else b""
    return _HEADER.pack(VERSION, store_ms, len(tag), len(group)) + tag + group + msg.SerializeToString()


def view(record: bytes) -> RecordView:
    _, store_ms, tag_len, group_len = _HEADER.unpack_from(record)
    start = _HEADER.size
    tag = record[start : start + tag_len].decode() if tag_len else None
    group = record[start + tag_len : start + tag_len + group_len].decode() if group_len else None
    return RecordView(store_ms, tag, group, record[start + tag_len + group_len :])


def store_ms(record: bytes) -> int:
    return _HEADER.unpack_from(record)[1]


def decode(record: bytes) -> pb.Message:
    return pb.Message.FromString(view(record).payload)


def delivery_overlay(receipt_handle: str, attempt: int, invisible_ms: int) -> bytes:
    """The per-delivery system properties, to append to a record's payload."""
    msg = pb.Message()
    sp = msg.system_properties
    sp.receipt_handle = receipt_handle
    sp.delivery_attempt = attempt
    sp.invisible_duration.FromMilliseconds(invisible_ms)
    return msg.SerializeToString()


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def message_frame(field_number: int, message: bytes) -> bytes:
    """Encode `message` (already serialized) as a length-delimited field of an outer message.

    Used to stream `ReceiveMessageResponse{message}` / `PullMessageResponse{message}` straight
    from stored bytes.
    """
    return _varint((field_number << 3) | 2) + _varint(len(message)) + message
