"""The stored message record: a small header plus the v2 `Message` in two ready-made parts.

    record = version:u8 · store_ms:u64 · tag_len:u16 · group_len:u16 · rest_len:u32
             · tag · message_group · rest · system_properties

`rest` is the serialized `apache.rocketmq.v2.Message` without its system properties (topic,
user properties, body) and `system_properties` the serialized `SystemProperties`, completed when
the broker takes the message (`seal`: store host, SHA-1 body digest and encoding) and placed when
it enters a queue (`place`: queue id and offset, store time). Delivering a
message costs no parse: the per-delivery fields (receipt handle, attempt, invisible time) are
encoded alone and spliced into the system-properties field, which appears exactly once on the
wire (some decoders, such as the Node.js client's, keep only the last copy of a repeated
message field). The header lets the broker filter by tag and order by message group without
parsing anything.
"""

from __future__ import annotations

import functools
import hashlib
import struct
from typing import NamedTuple

from rockmq.protocol import pb

_HEADER = struct.Struct(">BQHHI")
_VERSION_AND_STORE_MS = struct.Struct(">BQ")  # the header's start: what `place` rewrites
VERSION = 1
_SYSTEM_PROPERTIES = 3  # field number of Message.system_properties
_SYSTEM_PROPERTIES_KEY = bytes([_SYSTEM_PROPERTIES << 3 | 2])
# Keys of the SystemProperties fields encoded by hand here: (field number << 3) | wire type.
_STORE_TIMESTAMP, _QUEUE_ID, _QUEUE_OFFSET = bytes([9 << 3 | 2]), bytes([13 << 3]), bytes([14 << 3])
_RECEIPT_HANDLE, _INVISIBLE_DURATION = bytes([12 << 3 | 2]), bytes([15 << 3 | 2])
_DELIVERY_ATTEMPT = bytes([16 << 3, 1])  # field 16 needs a two-byte key


class RecordView(NamedTuple):
    """A record's parts; `rest` and `system_properties` are views into it, not copies."""

    store_ms: int
    tag: str | None
    message_group: str | None
    rest: memoryview
    system_properties: memoryview

    def message(self, delivery: bytes = b"") -> bytes:
        """The serialized Message, with `delivery` (see `delivery_fields`) spliced in: one copy
        of the record's bytes, made once."""
        sp = self.system_properties
        return b"".join((self.rest, _SYSTEM_PROPERTIES_KEY, varint(len(sp) + len(delivery)), sp, delivery))


def seal(msg: pb.Message, store_host: str) -> bytes:
    """Encode a received message as a record not yet placed in a queue (see `place`).

    Delayed and transactional messages wait in this form, so moving one into its queue later
    costs no parse. Consumes `msg`: its system properties are moved into the record.
    """
    sp = msg.system_properties
    for placed in ("queue_id", "queue_offset", "store_timestamp"):  # ours to set, in `place`
        sp.ClearField(placed)
    sp.store_host = store_host
    if not sp.body_encoding:
        sp.body_encoding = pb.IDENTITY
    digest = sp.body_digest
    digest.type = pb.SHA1  # faster than MD5 here (SHA extensions); every official client checks it
    digest.checksum = hashlib.sha1(msg.body).hexdigest().upper()
    tag = sp.tag.encode() if sp.HasField("tag") else b""
    group = sp.message_group.encode() if sp.HasField("message_group") else b""
    sp_bytes = sp.SerializeToString()
    msg.ClearField("system_properties")
    rest = msg.SerializeToString()
    return _HEADER.pack(VERSION, 0, len(tag), len(group), len(rest)) + tag + group + rest + sp_bytes


def place(record: bytes | memoryview, queue_id: int, offset: int, store_ms: int) -> bytes:
    """The sealed record as stored at `queue_id`/`offset`: the store time goes into the header
    and the placement fields are appended to the system properties, which end the record (a
    parser merges fields that appear later into the message)."""
    return b"".join((_VERSION_AND_STORE_MS.pack(VERSION, store_ms), memoryview(record)[_VERSION_AND_STORE_MS.size:],
                     _QUEUE_ID, varint(queue_id & 0xFFFFFFFFFFFFFFFF), _QUEUE_OFFSET, varint(offset),
                     _store_timestamp(store_ms)))


@functools.lru_cache(maxsize=8)  # a batch of appends shares one store time
def _store_timestamp(store_ms: int) -> bytes:
    seconds, millis = divmod(store_ms, 1000)
    timestamp = b"\x08" + varint(seconds) + (b"\x10" + varint(millis * 1_000_000) if millis else b"")
    return _STORE_TIMESTAMP + varint(len(timestamp)) + timestamp


def view(record: bytes | memoryview) -> RecordView:
    _, store_ms, tag_len, group_len, rest_len = _HEADER.unpack_from(record)
    a = _HEADER.size
    b = a + tag_len
    c = b + group_len
    d = c + rest_len
    whole = memoryview(record)
    return RecordView(store_ms, str(whole[a:b], "utf-8") if tag_len else None,
                      str(whole[b:c], "utf-8") if group_len else None, whole[c:d], whole[d:])


def message_group(record: bytes | memoryview) -> str | None:
    """The record's message group, read from the header alone."""
    _, _, tag_len, group_len, _ = _HEADER.unpack_from(record)
    start = _HEADER.size + tag_len
    return str(record[start:start + group_len], "utf-8") if group_len else None


def store_ms(record: bytes) -> int:
    return _HEADER.unpack_from(record)[1]


def message_id(record: bytes | memoryview) -> str:
    """The record's message id (parses its system properties)."""
    return pb.SystemProperties.FromString(bytes(view(record).system_properties)).message_id


def decode(record: bytes) -> pb.Message:
    return pb.Message.FromString(view(record).message())


def delivery_fields(receipt_handle: str, attempt: int, invisible_ms: int) -> bytes:
    """The per-delivery system properties, encoded alone, for `RecordView.message()`."""
    handle = receipt_handle.encode()
    return _RECEIPT_HANDLE + varint(len(handle)) + handle + _delivery_tail(invisible_ms, attempt)


@functools.lru_cache(maxsize=64)  # a receive hands out many messages with the same two values
def _delivery_tail(invisible_ms: int, attempt: int) -> bytes:
    seconds, millis = divmod(invisible_ms, 1000)
    duration = (b"\x08" + varint(seconds) if seconds else b"") + (b"\x10" + varint(millis * 1_000_000) if millis else b"")
    return _INVISIBLE_DURATION + varint(len(duration)) + duration + _DELIVERY_ATTEMPT + varint(attempt)


_ONE_BYTE = [bytes([i]) for i in range(128)]


def varint(n: int) -> bytes:
    if n < 0x80:
        return _ONE_BYTE[n]
    if n < 0x4000:
        return bytes((n & 0x7F | 0x80, n >> 7))
    if n < 0x200000:  # queue offsets, mostly
        return bytes((n & 0x7F | 0x80, n >> 7 & 0x7F | 0x80, n >> 14))
    out = []
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at `data[at:]` -> (value, position after it)."""
    value = shift = 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, at
        shift += 7


def frame(field_number: int, message: bytes) -> bytes:
    """Encode `message` (already serialized) as a length-delimited field of an outer message.

    Used to build `ReceiveMessageResponse{message}` / `PullMessageResponse{message}` straight
    from stored bytes.
    """
    return varint((field_number << 3) | 2) + varint(len(message)) + message
