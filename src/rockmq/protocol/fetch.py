"""BatchMessaging.Fetch replies on the wire, without protobuf objects. Pure functions, no I/O.

A Fetch reply carries megabytes of records. Through protobuf objects the broker would copy them
into the message and again into its serialized form, and the reader would copy them out of the
message on every access; here the broker writes the reply in one join of the stored records,
and the reader gets views into the bytes it received. The layout is FetchResponse's in
proto/rockmq/messaging/v1/batch.proto (fields 1-7); unknown fields are skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rockmq.protocol import pb
from rockmq.protocol.records import frame, read_varint, varint

_STATUS, _FIRST_OFFSET, _COUNT, _RECORDS, _OFFSETS, _MIN_OFFSET, _MAX_OFFSET = range(1, 8)
_INT_FIELDS = {_FIRST_OFFSET: "first_offset", _COUNT: "count", _MIN_OFFSET: "min_offset", _MAX_OFFSET: "max_offset"}


def _int_field(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value & 0xFFFFFFFFFFFFFFFF) if value else b""


def encode_fetch_response(status: pb.Status, first_offset: int, records: Sequence[bytes], offsets: bytes,
                          min_offset: int, max_offset: int) -> bytes:
    """A serialized FetchResponse holding `records` back to back; `offsets` as the field says."""
    size = sum(map(len, records))
    head = (frame(_STATUS, status.SerializeToString()) + _int_field(_FIRST_OFFSET, first_offset)
            + _int_field(_COUNT, len(records)) + (varint((_RECORDS << 3) | 2) + varint(size) if size else b""))
    tail = (frame(_OFFSETS, offsets) + _int_field(_MIN_OFFSET, min_offset) + _int_field(_MAX_OFFSET, max_offset))
    return b"".join((head, *records, tail))


@dataclass
class FetchReply:
    """A Fetch reply as read: `records` and `offsets` are views into the received bytes."""

    code: int = pb.OK
    message: str = ""
    first_offset: int = 0
    count: int = 0
    records: memoryview = memoryview(b"")
    offsets: memoryview = memoryview(b"")
    min_offset: int = 0
    max_offset: int = 0


def parse_fetch_response(raw: bytes) -> FetchReply:
    """FetchResponse's fields from its serialized form."""
    reply = FetchReply()
    view = memoryview(raw)
    at = 0
    while at < len(raw):
        key, at = read_varint(raw, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = read_varint(raw, at)
            if number in _INT_FIELDS:
                setattr(reply, _INT_FIELDS[number], value - (1 << 64) if value >= 1 << 63 else value)
        elif wire == 2:
            size, at = read_varint(raw, at)
            if number == _STATUS:
                status = pb.Status.FromString(raw[at:at + size])
                reply.code, reply.message = status.code, status.message
            elif number == _RECORDS:
                reply.records = view[at:at + size]
            elif number == _OFFSETS:
                reply.offsets = view[at:at + size]
            at += size
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ValueError(f"not a FetchResponse (wire type {wire})")
    return reply
