"""A SendMessageRequest read from its received bytes: what validation and the record need of each
message, and the record's parts as slices of those bytes, without building protobuf objects.

`scan` walks the bytes once. It reads only the canonical encoding — each field once, in field
number order (repeated fields together), proto3 defaults left out, minimal varints, strings valid
UTF-8, every field one it knows — which is what protobuf serializers write. For such bytes the
record built from slices (`SentMessage.rest`, `.system_properties`) is the one protobuf would
re-serialize, except that user properties keep the order they came in (protobuf's map order is a
hash order, which changes with each process). Anything else — malformed, or valid but unusual
(unknown fields, fields the broker sets, a repeated map key) — gives None, and the caller parses
the request with protobuf as before, which answers malformed bytes as it always did.
"""

from __future__ import annotations

from typing import NamedTuple

import cython

from rockmq.protocol import field_keys, pb, rpc
from rockmq.protocol.field_keys import number
from rockmq.protocol.wire import varint
from rockmq.protocol.wire_reader import NotCanonical, Reader

if not cython.compiled:  # compiled, the .pxd cimports them as C constants
    from rockmq.protocol.wire_reader import DELIMITED, INT32, INT64, VARINT

_SP = pb.SystemProperties.DESCRIPTOR
_M = pb.Message.DESCRIPTOR
# Field numbers, from the descriptors; C constants when compiled.
_TAG = cython.declare(cython.int, number(_SP, "tag"))
_KEYS = cython.declare(cython.int, number(_SP, "keys"))
_MESSAGE_ID = cython.declare(cython.int, number(_SP, "message_id"))
_BODY_DIGEST = cython.declare(cython.int, number(_SP, "body_digest"))
_BODY_ENCODING = cython.declare(cython.int, number(_SP, "body_encoding"))
_MESSAGE_TYPE = cython.declare(cython.int, number(_SP, "message_type"))
_BORN_TIMESTAMP = cython.declare(cython.int, number(_SP, "born_timestamp"))
_BORN_HOST = cython.declare(cython.int, number(_SP, "born_host"))
_STORE_TIMESTAMP = cython.declare(cython.int, number(_SP, "store_timestamp"))
_STORE_HOST = cython.declare(cython.int, number(_SP, "store_host"))
_DELIVERY_TIMESTAMP = cython.declare(cython.int, number(_SP, "delivery_timestamp"))
_QUEUE_ID = cython.declare(cython.int, number(_SP, "queue_id"))
_QUEUE_OFFSET = cython.declare(cython.int, number(_SP, "queue_offset"))
_MESSAGE_GROUP = cython.declare(cython.int, number(_SP, "message_group"))
_TRACE_CONTEXT = cython.declare(cython.int, number(_SP, "trace_context"))
_LITE_TOPIC = cython.declare(cython.int, number(_SP, "lite_topic"))
_PRIORITY = cython.declare(cython.int, number(_SP, "priority"))
_TOPIC = cython.declare(cython.int, number(_M, "topic"))
_USER_PROPERTIES = cython.declare(cython.int, number(_M, "user_properties"))
_SYSTEM_PROPERTIES = cython.declare(cython.int, number(_M, "system_properties"))
_BODY = cython.declare(cython.int, number(_M, "body"))
_NAMESPACE = cython.declare(cython.int, number(pb.Resource.DESCRIPTOR, "resource_namespace"))
_NAME = cython.declare(cython.int, number(pb.Resource.DESCRIPTOR, "name"))


class SentMessage(NamedTuple):
    """One message of a request, as `read` read it. `rest` and `system_properties`: the record's
    two serialized parts (`records.received_parts`), the placement fields (the broker's) left out."""

    topic: str
    user_properties: dict[str, str]
    tag: str | None
    keys: list[str]
    message_id: str
    body_encoding: int
    message_type: int
    delivery: tuple[int, int] | None  # (seconds, nanos)
    queue_id: int
    message_group: str | None
    body: memoryview
    rest: bytes
    system_properties: bytes
    lite_topic: str | None = None  # a LITE message's lite topic (docs/lite-topics.md)
    priority: int | None = None  # a PRIORITY message's priority

    def message(self) -> pb.Message:
        """The message parsed, for the rarer paths that keep a protobuf object (delayed and
        transactional messages, dead letters): what its record would hold, the placement fields
        (which sealing clears) left out."""
        return pb.Message.FromString(b"".join((self.rest, _SP_KEY, varint(len(self.system_properties)),
                                               self.system_properties)))


_SP_KEY = field_keys.MessageFields.SYSTEM_PROPERTIES
_PLACEMENT = ("queue_id", "queue_offset", "store_timestamp")


def read(data: bytes) -> list[SentMessage]:
    """A SendMessageRequest's messages: `scan`ned, or parsed by protobuf when the scan does not
    read the bytes (protobuf's DecodeError for malformed bytes, as before) or runs as Python (the
    same result either way: tests/unit/test_send_request.py)."""
    scanned = scan(data) if cython.compiled else None  # as Python, protobuf's parse (C) is the faster
    return scanned if scanned is not None else [parsed(m) for m in rpc.SendMessageRequest.FromString(data).messages]


def parsed(msg: pb.Message) -> SentMessage:
    """What `scan` reads of a message, from the message parsed. Consumes `msg`."""
    sp = msg.system_properties
    queue_id = sp.queue_id
    for placed in _PLACEMENT:
        sp.ClearField(placed)
    delivery = sp.delivery_timestamp
    fields = (msg.topic.name, dict(msg.user_properties), sp.tag if sp.HasField("tag") else None, list(sp.keys),
              sp.message_id, sp.body_encoding, sp.message_type,
              (delivery.seconds, delivery.nanos) if sp.HasField("delivery_timestamp") else None, queue_id,
              sp.message_group if sp.HasField("message_group") else None)
    lite_topic = sp.lite_topic if sp.HasField("lite_topic") else None
    priority = sp.priority if sp.HasField("priority") else None
    sp_bytes, body = sp.SerializeToString(), msg.body
    msg.ClearField("system_properties")
    return SentMessage(*fields, memoryview(body), msg.SerializeToString(), sp_bytes, lite_topic, priority)


_new = tuple.__new__  # a SentMessage made without its Python-level __new__


@cython.cclass
class _Reader(Reader):
    """The shared reader, and the parts of a SendMessageRequest that only it has."""

    @cython.cfunc
    @cython.locals(limit=cython.Py_ssize_t, end=cython.Py_ssize_t, seconds=cython.ulonglong, nanos=cython.ulonglong,
                   field=cython.int)
    def timestamp(self, limit: int) -> tuple[int, int]:
        """A Timestamp (or Duration): (seconds, nanos), each present only when not zero."""
        end = self.length(limit)
        seconds = 0
        nanos = 0
        field = 0
        while self.at < end:
            field = self.key(end, field, 0)
            self.expect(VARINT)
            if field == 1:
                seconds = self.varint(end, INT64)
                if seconds == 0:
                    raise NotCanonical
            elif field == 2:
                nanos = self.varint(end, INT32)
                if nanos == 0:
                    raise NotCanonical
            else:
                raise NotCanonical
        return seconds, nanos

    @cython.cfunc
    @cython.returns(cython.int)
    @cython.locals(limit=cython.Py_ssize_t, end=cython.Py_ssize_t, field=cython.int)
    def digest(self, limit: int) -> int:
        end = self.length(limit)
        field = 0
        while self.at < end:
            field = self.key(end, field, 0)
            if field == 1:
                self.expect(VARINT)
                if self.varint(end, INT32) == 0:
                    raise NotCanonical
            elif field == 2:
                self.expect(DELIMITED)
                self.text(end, True)
            else:
                raise NotCanonical
        return 0

    @cython.cfunc
    @cython.returns(cython.int)
    @cython.locals(limit=cython.Py_ssize_t, end=cython.Py_ssize_t)
    def entry(self, limit: int, props: dict[str, str]) -> int:
        """A user property: key then value, both written (as protobuf writes a map entry); a key
        seen before is not canonical (protobuf would keep the last)."""
        end = self.length(limit)
        if self.at >= end or self.data[self.at] != 0x0A:
            raise NotCanonical
        self.at += 1
        key = self.text(end, False)
        if self.at >= end or self.data[self.at] != 0x12:
            raise NotCanonical
        self.at += 1
        value = self.text(end, False)
        if self.at != end or key in props:
            raise NotCanonical
        props[key] = value
        return 0

    @cython.cfunc
    @cython.locals(start=cython.Py_ssize_t, end=cython.Py_ssize_t, field=cython.int, cut=cython.Py_ssize_t,
                   kept=cython.Py_ssize_t, data=bytes, queue_id=cython.ulonglong, number=cython.ulonglong, sp=cython.int,
                   sp_end=cython.Py_ssize_t, sp_key=cython.Py_ssize_t, body_end=cython.Py_ssize_t, encoding=cython.ulonglong,
                   mtype=cython.ulonglong, priority=cython.longlong)
    def message(self, start: int, end: int, whole: memoryview) -> SentMessage:
        data = self.data
        topic = ""
        props: dict[str, str] = {}
        tag: str | None = None
        group: str | None = None
        keys: list[str] = []
        mid = ""
        encoding = 0
        mtype = 0
        queue_id = 0
        delivery: tuple[int, int] | None = None
        lite: str | None = None
        priority = -1  # none
        body = whole[end:end]
        sp_key = end  # no system properties: the rest is the whole message
        sp_end = end
        sp_parts: list[bytes] = []
        field = 0
        while self.at < end:
            field = self.key(end, field, _USER_PROPERTIES)
            self.expect(DELIMITED)
            if field == _TOPIC:
                topic = self.second(self.length(end), _NAMESPACE, _NAME)
            elif field == _USER_PROPERTIES:
                self.entry(end, props)
            elif field == _SYSTEM_PROPERTIES:
                sp_key = self.at - 1
                sp_end = self.length(end)
                kept = self.at
                sp = 0
                while self.at < sp_end:
                    cut = self.at
                    sp = self.key(sp_end, sp, _KEYS)
                    if sp == _PRIORITY:  # optional: 0 is written when set
                        self.expect(VARINT)
                        priority = self.varint(sp_end, INT32)
                        continue
                    if sp == _BODY_ENCODING or sp == _MESSAGE_TYPE or sp == _QUEUE_ID or sp == _QUEUE_OFFSET:
                        self.expect(VARINT)
                        number = self.varint(sp_end, INT64 if sp == _QUEUE_OFFSET else INT32)
                        if number == 0 and sp != _QUEUE_OFFSET:  # a proto3 default is not written
                            raise NotCanonical
                        if sp == _BODY_ENCODING:
                            encoding = number
                        elif sp == _MESSAGE_TYPE:
                            mtype = number
                        else:  # the placement fields are the broker's: left out of the record
                            if sp == _QUEUE_ID:
                                queue_id = number
                            sp_parts.append(data[kept:cut])
                            kept = self.at
                        continue
                    self.expect(DELIMITED)
                    if sp == _MESSAGE_ID:
                        mid = self.text(sp_end, True)
                    elif sp == _TAG:
                        tag = self.text(sp_end, False)
                    elif sp == _KEYS:
                        keys.append(self.text(sp_end, False))
                    elif sp == _MESSAGE_GROUP:
                        group = self.text(sp_end, False)
                    elif sp == _BORN_HOST or sp == _STORE_HOST:
                        self.text(sp_end, True)
                    elif sp == _TRACE_CONTEXT:
                        self.text(sp_end, False)
                    elif sp == _LITE_TOPIC:
                        lite = self.text(sp_end, False)
                    elif sp == _BODY_DIGEST:
                        self.digest(sp_end)
                    elif sp == _BORN_TIMESTAMP:
                        self.timestamp(sp_end)
                    elif sp == _DELIVERY_TIMESTAMP:
                        delivery = self.timestamp(sp_end)
                    elif sp == _STORE_TIMESTAMP:
                        self.timestamp(sp_end)
                        sp_parts.append(data[kept:cut])
                        kept = self.at
                    else:
                        raise NotCanonical  # a field the scan does not read: protobuf does
                sp_parts.append(data[kept:sp_end])
            elif field == _BODY:
                body_end = self.length(end)
                if body_end == self.at:
                    raise NotCanonical
                body = whole[self.at:body_end]
                self.at = body_end
            else:
                raise NotCanonical
        if self.at != end:
            raise NotCanonical
        rest = data[start:sp_key] + data[sp_end:end] if sp_key < end else data[start:end]
        return _new(SentMessage, (topic, props, tag, keys, mid, encoding, mtype, delivery, queue_id, group, body,
                           rest, b"".join(sp_parts), lite, None if priority < 0 else priority))


@cython.locals(end=cython.Py_ssize_t, size=cython.Py_ssize_t, reader=_Reader)
def scan(data: bytes) -> list[SentMessage] | None:
    """The request's messages, or None: bytes the scan does not read (see the module's docstring)."""
    reader = _Reader(data)
    whole = memoryview(data)
    size = len(data)
    out: list[SentMessage] = []
    try:
        while reader.at < size:
            if data[reader.at] != 0x0A:  # messages = 1, length-delimited
                return None
            reader.at += 1
            end = reader.length(size)
            out.append(reader.message(reader.at, end, whole))
            reader.at = end
    except (NotCanonical, UnicodeDecodeError):
        return None
    return out
