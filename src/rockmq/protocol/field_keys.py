"""Protobuf field keys of the fields rockmq encodes by hand (stored records, Fetch replies, the
Spark sink's Stage requests), derived once, at import, from the generated descriptors: the key is
the varint of `field number << 3 | wire type`. tests/unit/test_field_keys.py pins the bytes.
`MessageFields.TOPIC` is the key of apache.rocketmq.v2.Message's `topic`: each class is named after
the message whose fields it holds, with `Fields` (never the message's own name, which the protobuf
and client types have).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from google.protobuf import timestamp_pb2
from google.protobuf.descriptor import FieldDescriptor

from rockmq.protocol import batch, pb, rpc
from rockmq.protocol.wire import varint

_FIXED64 = (FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED64, FieldDescriptor.TYPE_DOUBLE)
_FIXED32 = (FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_SFIXED32, FieldDescriptor.TYPE_FLOAT)
_DELIMITED = (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES, FieldDescriptor.TYPE_MESSAGE)


class Field(Protocol):
    """A field descriptor, whichever protobuf implementation made it."""

    @property
    def number(self) -> int: ...

    @property
    def type(self) -> int: ...


class Descriptor(Protocol):
    """A message descriptor (`pb.Message.DESCRIPTOR`), whichever protobuf implementation made it."""

    @property
    def fields_by_name(self) -> Mapping[str, Field]: ...


def wire_type(field: Field) -> int:
    """0 varint, 1 fixed 64-bit, 2 length-delimited, 5 fixed 32-bit (packed repeated scalars,
    which would be 2, are never encoded by hand)."""
    if field.type in _DELIMITED:
        return 2
    if field.type in _FIXED64:
        return 1
    return 5 if field.type in _FIXED32 else 0


def key(message: Descriptor, name: str) -> bytes:
    field = message.fields_by_name[name]
    return varint(field.number << 3 | wire_type(field))


def number(message: Descriptor, name: str) -> int:
    return message.fields_by_name[name].number


class MessageFields:
    """apache.rocketmq.v2.Message"""

    TOPIC = key(pb.Message.DESCRIPTOR, "topic")
    USER_PROPERTIES = key(pb.Message.DESCRIPTOR, "user_properties")
    SYSTEM_PROPERTIES = key(pb.Message.DESCRIPTOR, "system_properties")
    BODY = key(pb.Message.DESCRIPTOR, "body")


class ResourceFields:
    NAME = key(pb.Resource.DESCRIPTOR, "name")


class MapEntryFields:
    """An entry of a map<string, string> (Message.user_properties)."""

    KEY = key(pb.Message.UserPropertiesEntry.DESCRIPTOR, "key")
    VALUE = key(pb.Message.UserPropertiesEntry.DESCRIPTOR, "value")


class SystemPropertiesFields:
    _D = pb.SystemProperties.DESCRIPTOR
    TAG = key(_D, "tag")
    KEYS = key(_D, "keys")
    MESSAGE_ID = key(_D, "message_id")
    BODY_DIGEST = key(_D, "body_digest")
    BODY_ENCODING = key(_D, "body_encoding")
    MESSAGE_TYPE = key(_D, "message_type")
    BORN_TIMESTAMP = key(_D, "born_timestamp")
    BORN_HOST = key(_D, "born_host")
    STORE_TIMESTAMP = key(_D, "store_timestamp")
    STORE_HOST = key(_D, "store_host")
    DELIVERY_TIMESTAMP = key(_D, "delivery_timestamp")
    RECEIPT_HANDLE = key(_D, "receipt_handle")
    QUEUE_ID = key(_D, "queue_id")
    QUEUE_OFFSET = key(_D, "queue_offset")
    INVISIBLE_DURATION = key(_D, "invisible_duration")
    DELIVERY_ATTEMPT = key(_D, "delivery_attempt")
    MESSAGE_GROUP = key(_D, "message_group")


class DigestFields:
    TYPE = key(pb.Digest.DESCRIPTOR, "type")
    CHECKSUM = key(pb.Digest.DESCRIPTOR, "checksum")


class TimestampFields:
    """google.protobuf.Timestamp, and Duration (the same fields)."""

    SECONDS = key(timestamp_pb2.Timestamp.DESCRIPTOR, "seconds")
    NANOS = key(timestamp_pb2.Timestamp.DESCRIPTOR, "nanos")


class ReceivedMessageFields:
    """The `message` of ReceiveMessageResponse and PullMessageResponse (the same key in both)."""

    MESSAGE = key(rpc.ReceiveMessageResponse.DESCRIPTOR, "message")


class StatusFields:
    CODE = key(pb.Status.DESCRIPTOR, "code")
    MESSAGE = key(pb.Status.DESCRIPTOR, "message")


class SendMessageResponseFields:
    STATUS = key(rpc.SendMessageResponse.DESCRIPTOR, "status")
    ENTRIES = key(rpc.SendMessageResponse.DESCRIPTOR, "entries")


class SendResultEntryFields:
    _D = rpc.SendResultEntry.DESCRIPTOR
    STATUS = key(_D, "status")
    MESSAGE_ID = key(_D, "message_id")
    TRANSACTION_ID = key(_D, "transaction_id")
    OFFSET = key(_D, "offset")
    RECALL_HANDLE = key(_D, "recall_handle")


class StageRequestFields:
    """rockmq.messaging.v1.StageRequest"""

    SYSTEM_PROPERTIES = key(batch.StageRequest.DESCRIPTOR, "system_properties")
    CONTENTS = key(batch.StageRequest.DESCRIPTOR, "contents")
    TTL_MS = key(batch.StageRequest.DESCRIPTOR, "ttl_ms")
    DEDUPLICATE = key(batch.StageRequest.DESCRIPTOR, "deduplicate")


class FetchResponseFields:
    """rockmq.messaging.v1.FetchResponse"""

    _D = batch.FetchResponse.DESCRIPTOR
    STATUS = key(_D, "status")
    FIRST_OFFSET = key(_D, "first_offset")
    COUNT = key(_D, "count")
    RECORDS = key(_D, "records")
    OFFSETS = key(_D, "offsets")
    MIN_OFFSET = key(_D, "min_offset")
    MAX_OFFSET = key(_D, "max_offset")
