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
parsing anything. Until a record is placed, its store_ms slot holds the queue its client chose,
plus one (0: the broker chooses), so a delayed or transactional message enters the queue its
producer picked (`chosen_queue`).
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import struct
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import cython

from rockmq.protocol import pb, receipt, send_request
from rockmq.protocol.field_keys import DigestFields, MessageFields, SystemPropertiesFields, TimestampFields
from rockmq.protocol.wire import delimited, varint

VERSION = 1
_HEADER_FIELDS = (("version", "B"), ("store_ms", "Q"), ("tag_len", "H"), ("group_len", "H"), ("rest_len", "I"))
HEADER = struct.Struct(">" + "".join(code for _, code in _HEADER_FIELDS))
# Each header field's (offset, width), for readers that cut headers column-wise (spark/columnar.py).
HEADER_LAYOUT = {name: (struct.calcsize(">" + "".join(code for _, code in _HEADER_FIELDS[:i])), struct.calcsize(">" + code))
                 for i, (name, code) in enumerate(_HEADER_FIELDS)}
# Bound once: a per-message `HEADER.pack(...)` looks the method up each time (compiled: builds a bound method).
_pack_header, _unpack_header = HEADER.pack, HEADER.unpack_from
_HEADER_SIZE = HEADER.size
_VERSION_AND_STORE_MS = struct.Struct(">" + "".join(code for _, code in _HEADER_FIELDS[:2]))  # what `place` rewrites
IDENTITY_ENCODING = SystemPropertiesFields.BODY_ENCODING + varint(pb.IDENTITY)  # the field, encoded
_SHA1_HEX = 40  # characters of a SHA-1 hex digest
# body_digest{type: SHA1, checksum: <hex>} up to the checksum's characters, which complete it
_SHA1_DIGEST = (SystemPropertiesFields.BODY_DIGEST
                + varint(len(DigestFields.TYPE) + 1 + len(DigestFields.CHECKSUM) + 1 + _SHA1_HEX)
                + DigestFields.TYPE + varint(pb.SHA1) + DigestFields.CHECKSUM + varint(_SHA1_HEX))


class RecordVersionError(ValueError):
    """A record in a layout this rockmq does not read: written by a newer release, or not a record."""

    def __init__(self, version: int) -> None:
        super().__init__(f"stored record version {version} is not one this rockmq reads (it reads version {VERSION}): "
                         "written by a newer rockmq?")


_new_tuple = tuple.__new__


class RecordView(NamedTuple):
    """A record's parts; `rest` and `system_properties` are views into it, not copies."""

    store_ms: int
    tag: str | None
    message_group: str | None
    rest: memoryview
    system_properties: memoryview

    def message(self, delivery: bytes = b"", field: bytes = b"") -> bytes:
        """The serialized Message, with `delivery` (see `delivery_fields`) spliced in: one copy
        of the record's bytes, made once. With `field`, behind that field key and its length: a
        reply's message field, framed in the same copy."""
        sp = self.system_properties
        sp_len = len(sp) + len(delivery)
        sp_size = varint(sp_len)
        if not field:
            return b"".join((self.rest, MessageFields.SYSTEM_PROPERTIES, sp_size, sp, delivery))
        size = len(self.rest) + len(MessageFields.SYSTEM_PROPERTIES) + len(sp_size) + sp_len
        return b"".join((field, varint(size), self.rest, MessageFields.SYSTEM_PROPERTIES, sp_size, sp, delivery))


def _head(tag: bytes, group: bytes, rest_len: int, queue_id: int = -1) -> bytes:
    return _pack_header(VERSION, queue_id + 1, len(tag), len(group), rest_len) + tag + group


class Parts(NamedTuple):
    """A received message cut into what its record holds (`message_parts`): a record is the header,
    then these joined."""

    tag: bytes
    message_group: bytes
    rest: bytes
    system_properties: bytes


def message_parts(msg: pb.Message, store_host: str) -> Parts:
    """A received message as its record's parts (`received_parts`). Consumes `msg`."""
    sent = send_request.parsed(msg)
    return received_parts(sent.tag, sent.message_group, sent.rest, sent.system_properties, sent.body_encoding, sent.body,
                          store_host)


def received_parts(tag: str | None, message_group: str | None, rest: bytes, sp_bytes: bytes, body_encoding: int,
                   body: bytes | memoryview, store_host: str) -> Parts:
    """A received message's record parts from its serialized `rest` and system properties
    (`sp_bytes`, the placement fields left out: ours to set, in `place`), completed by the broker
    (`_completion`). SendMessage passes slices of the request's bytes (protocol/send_request.py)."""
    return Parts(_utf8(tag), _utf8(message_group), rest, b"".join((sp_bytes, *_completion(body_encoding, body, store_host))))


def _completion(body_encoding: int, body: bytes | memoryview, store_host: str) -> tuple[bytes, bytes, bytes, bytes]:
    """What the broker appends to a received message's system properties, as encoded fields: the
    store host, IDENTITY if no body encoding is named, and the SHA-1 body digest (faster than MD5
    here: SHA extensions; every official client checks it). A parser keeps a scalar's last value,
    and the digest sets both of its fields whether a parser merges or replaces it."""
    return (_store_host(store_host), b"" if body_encoding else IDENTITY_ENCODING, _SHA1_DIGEST,
            _hexlify(_sha1(body).digest()).upper())


_sha1, _hexlify = hashlib.sha1, binascii.hexlify


def _utf8(text: str | None) -> bytes:
    return text.encode() if text is not None else b""


def seal(msg: pb.Message, store_host: str, queue_id: int = -1) -> bytes:
    """Encode a received message as a record not yet placed in a queue (see `place`); `queue_id`:
    the queue its client chose (-1: none), kept until it is placed.

    Delayed and transactional messages wait in this form, so moving one into its queue later
    costs no parse. Consumes `msg` (see `message_parts`).
    """
    tag, group, rest, sp_bytes = message_parts(msg, store_host)
    return b"".join((_head(tag, group, len(rest), queue_id), rest, sp_bytes))


def seal_parts(sp: pb.SystemProperties, rest: bytes, sp_bytes: bytes, store_host: str) -> tuple[bytes, bytes, bytes, bytes]:
    """`seal` for a message received in its two serialized parts (`rest`, and `sp_bytes` parsed as
    `sp`, with its body digest already checked): the record is these parts joined, so the body is
    not copied here. The store host, and IDENTITY if no body encoding is named, are appended to
    the system properties (a parser keeps a field's last value)."""
    tag = sp.tag.encode() if sp.HasField("tag") else b""
    group = sp.message_group.encode() if sp.HasField("message_group") else b""
    added = _store_host(store_host) + (b"" if sp.body_encoding else IDENTITY_ENCODING)
    return _head(tag, group, len(rest)), rest, sp_bytes, added


@functools.lru_cache(maxsize=4)
def _store_host(store_host: str) -> bytes:
    return delimited(SystemPropertiesFields.STORE_HOST, store_host.encode())


def place(record: bytes | memoryview, queue_id: int, offset: int, store_ms: int) -> bytes:
    """The sealed record as stored at `queue_id`/`offset`: the store time goes into the header
    and the placement fields are appended to the system properties, which end the record (a
    parser merges fields that appear later into the message)."""
    return b"".join((_VERSION_AND_STORE_MS.pack(VERSION, store_ms), memoryview(record)[_VERSION_AND_STORE_MS.size:],
                     _placement(queue_id, offset, store_ms)))


def placed(tag: str | None, message_group: str | None, rest: bytes, sp_bytes: bytes, body_encoding: int,
           body: bytes | memoryview, store_host: str, queue_id: int, offset: int, store_ms: int) -> bytes:
    """`place(seal(...))` in one step and one copy, for a received message that enters its queue
    as it arrives (`received_parts`' arguments)."""
    t, g = _utf8(tag), _utf8(message_group)
    return b"".join((_pack_header(VERSION, store_ms, len(t), len(g), len(rest)), t, g, rest, sp_bytes,
                     *_completion(body_encoding, body, store_host), _placement(queue_id, offset, store_ms)))


def _placement(queue_id: int, offset: int, store_ms: int) -> bytes:
    """The system-properties fields a record gets when it enters a queue."""
    return b"".join((_QUEUE_ID, varint(queue_id & 0xFFFFFFFFFFFFFFFF), _QUEUE_OFFSET, varint(offset), _store_timestamp(store_ms)))


_QUEUE_ID, _QUEUE_OFFSET = SystemPropertiesFields.QUEUE_ID, SystemPropertiesFields.QUEUE_OFFSET


def timestamp(seconds: int, nanos: int) -> bytes:
    """A serialized google.protobuf.Timestamp (or Duration: the same fields), zero fields left out."""
    return ((TimestampFields.SECONDS + varint(seconds) if seconds else b"")
            + (TimestampFields.NANOS + varint(nanos) if nanos else b""))


@functools.lru_cache(maxsize=8)  # a batch of appends shares one store time
def _store_timestamp(store_ms: int) -> bytes:
    seconds, millis = divmod(store_ms, 1000)
    return delimited(SystemPropertiesFields.STORE_TIMESTAMP, timestamp(seconds, millis * 1_000_000))


def view(record: bytes | memoryview) -> RecordView:
    version, store_ms, tag_len, group_len, rest_len = _unpack_header(record)
    if version != VERSION:
        raise RecordVersionError(version)
    a = HEADER.size
    b = a + tag_len
    c = b + group_len
    d = c + rest_len
    whole = memoryview(record)
    # tuple.__new__: a NamedTuple's own __new__ is Python code, half the cost of a view (every message received)
    return _new_tuple(RecordView, (store_ms, str(whole[a:b], "utf-8") if tag_len else None,
                                   str(whole[b:c], "utf-8") if group_len else None, whole[c:d], whole[d:]))


def message_group(record: bytes | memoryview) -> str | None:
    """The record's message group, read from the header alone."""
    version, _, tag_len, group_len, _ = _unpack_header(record)
    if version != VERSION:
        raise RecordVersionError(version)
    start = HEADER.size + tag_len
    return str(record[start:start + group_len], "utf-8") if group_len else None


def chosen_queue(sealed: bytes | memoryview) -> int:
    """The queue a sealed, not yet placed record's client chose; -1: none (`seal`)."""
    version, slot = _VERSION_AND_STORE_MS.unpack_from(sealed)
    if version != VERSION:
        raise RecordVersionError(version)
    return int(slot) - 1


def store_ms(record: bytes) -> int:
    version, stored = _VERSION_AND_STORE_MS.unpack_from(record)
    if version != VERSION:
        raise RecordVersionError(version)
    return int(stored)


def message_id(record: bytes | memoryview) -> str:
    """The record's message id (parses its system properties)."""
    return pb.SystemProperties.FromString(bytes(view(record).system_properties)).message_id


def decode(record: bytes) -> pb.Message:
    return pb.Message.FromString(view(record).message())


def delivery_fields(receipt_handle: str, attempt: int, invisible_ms: int) -> bytes:
    """The per-delivery system properties, encoded alone, for `RecordView.message()`."""
    return _handle_field(receipt_handle, delivery_tail(invisible_ms, attempt))


def _handle_field(receipt_handle: str, tail: bytes) -> bytes:
    """`delivery_fields` of a delivery, `tail` its `delivery_tail`."""
    handle = receipt_handle.encode()
    return b"".join((_RECEIPT_HANDLE, varint(len(handle)), handle, tail))


_RECEIPT_HANDLE = SystemPropertiesFields.RECEIPT_HANDLE


@cython.locals(version=cython.int, tag_len=cython.Py_ssize_t, group_len=cython.Py_ssize_t, rest_len=cython.Py_ssize_t,
               a=cython.Py_ssize_t, d=cython.Py_ssize_t, sp_len=cython.Py_ssize_t, size=cython.Py_ssize_t)
def framed(record: bytes, delivery: bytes, field: bytes) -> bytes:
    """`view(record).message(delivery, field)` without the view: a reply's message field straight
    from the stored record, in one copy."""
    version, _, tag_len, group_len, rest_len = _unpack_header(record)
    if version != VERSION:
        raise RecordVersionError(version)
    a = _HEADER_SIZE + tag_len + group_len
    d = a + rest_len
    whole = memoryview(record)
    sp = whole[d:]
    sp_len = len(sp) + len(delivery)
    sp_size = varint(sp_len)
    size = rest_len + len(MessageFields.SYSTEM_PROPERTIES) + len(sp_size) + sp_len
    return b"".join((field, varint(size), whole[a:d], MessageFields.SYSTEM_PROPERTIES, sp_size, sp, delivery))


@cython.locals(taken=cython.Py_ssize_t, room=cython.Py_ssize_t, added=cython.Py_ssize_t, limit=cython.Py_ssize_t,
               entry=cython.Py_ssize_t, offset=cython.ulonglong, below=cython.ulonglong)  # log offsets are u64
def frame_run(scan: Iterator[tuple[bytes, bytes]], offset_of: Callable[[bytes], int], token: str, entry: int, tail: bytes,
              field: bytes, room: int, limit: int, below: int, out: list[Any],
              offsets: list[int]) -> tuple[int, tuple[bytes, bytes] | None]:
    """Frame the records of a log scan (`scan`: (key, record), `offset_of` a key's offset) as a
    receive hands them out, in one call: each behind `field`, with its delivery fields (its
    receipt handle, of `token` and the checkpoint entry `entry`, `entry` + 1, ...; then `tail`:
    `delivery_tail`) spliced in, appended to `out`, its offset to `offsets`. Stops before the
    record at `below` or beyond, once `room` are out, or once `limit` bytes or more are ->
    (bytes framed, the (key, record) it stopped at and did not take, None if the scan ended)."""
    taken = added = 0
    for item in scan:
        offset = offset_of(item[0])
        if taken >= room or added >= limit or offset >= below:
            return added, item
        message = framed(item[1], _handle_field(receipt.handle(token, entry + taken), tail), field)
        out.append(message)
        offsets.append(offset)
        added += len(message)
        taken += 1
    return added, None


@functools.lru_cache(maxsize=64)  # a receive hands out many messages with the same two values
def delivery_tail(invisible_ms: int, attempt: int) -> bytes:
    """The delivery fields that follow the receipt handle: the same for every delivery of a receive."""
    seconds, millis = divmod(invisible_ms, 1000)
    return (delimited(SystemPropertiesFields.INVISIBLE_DURATION, timestamp(seconds, millis * 1_000_000))
            + SystemPropertiesFields.DELIVERY_ATTEMPT + varint(attempt))
