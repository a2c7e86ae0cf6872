"""BatchMessaging.Fetch replies on the wire, without protobuf objects. Pure functions, no I/O.

A Fetch reply carries megabytes of records. Through protobuf objects the broker would copy them
into the message and again into its serialized form, and the reader would copy them out of the
message on every access; here the broker writes the reply in one join of the stored records,
and the reader gets views into the bytes it received. The layout is FetchResponse's in
proto/rockmq/messaging/v1/batch.proto (fields 1-7); unknown fields are skipped.
"""

from __future__ import annotations

import itertools
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from rockmq.protocol import batch, pb
from rockmq.protocol.field_keys import FetchResponseFields, number
from rockmq.protocol.wire import delimited, read_varint, varint

_F = batch.FetchResponse.DESCRIPTOR
_STATUS, _RECORDS, _OFFSETS = (number(_F, name) for name in ("status", "records", "offsets"))
_INT_FIELDS = {number(_F, name): name for name in ("first_offset", "count", "min_offset", "max_offset")}


def _int_field(key: bytes, value: int) -> bytes:
    return key + varint(value & 0xFFFFFFFFFFFFFFFF) if value else b""


def record_ends(records: Sequence[bytes]) -> bytes:
    """FetchResponse.offsets: where each record starts and the last ends, little-endian int32."""
    ends = array("i", itertools.accumulate(map(len, records), initial=0))
    if sys.byteorder == "big":
        ends.byteswap()
    return ends.tobytes()


def encode_fetch_response(status: pb.Status, first_offset: int, records: Sequence[bytes], min_offset: int,
                          max_offset: int) -> bytes:
    """A serialized FetchResponse holding `records` back to back, and their offsets."""
    offsets = record_ends(records)
    size = sum(map(len, records))
    f = FetchResponseFields
    head = (delimited(f.STATUS, status.SerializeToString()) + _int_field(f.FIRST_OFFSET, first_offset)
            + _int_field(f.COUNT, len(records)) + (f.RECORDS + varint(size) if size else b""))
    tail = delimited(f.OFFSETS, offsets) + _int_field(f.MIN_OFFSET, min_offset) + _int_field(f.MAX_OFFSET, max_offset)
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
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, at = read_varint(raw, at)
            if field in _INT_FIELDS:
                setattr(reply, _INT_FIELDS[field], value - (1 << 64) if value >= 1 << 63 else value)
        elif wire == 2:
            size, at = read_varint(raw, at)
            if field == _STATUS:
                status = pb.Status.FromString(raw[at:at + size])
                reply.code, reply.message = status.code, status.message
            elif field == _RECORDS:
                reply.records = view[at:at + size]
            elif field == _OFFSETS:
                reply.offsets = view[at:at + size]
            at += size
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ValueError(f"not a FetchResponse (wire type {wire})")
    return reply
