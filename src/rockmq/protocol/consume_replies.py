"""Receive, pull and ack replies on the wire, without protobuf objects. Pure functions, no I/O.

A receive of 256 messages built as a ReceiveResponse copies every message into the protobuf
object and again into its serialized form (~1.2 µs per message); an ack reply built from Status
objects costs one object per entry. Here each reply is one join of pre-encoded parts: the
messages as the store handed them out, behind their field key and length, and statuses that are
the same for every OK entry encoded once. Layouts: ReceiveResponse, PullResponse and AckResponse
in proto/rockmq/messaging/v1/batch.proto, AckMessageResponse in apache/rocketmq/v2/service.proto.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from rockmq.protocol import batch, pb, rpc
from rockmq.protocol.field_keys import key
from rockmq.protocol.wire import delimited, varint

_STATUS = key(batch.ReceiveResponse.DESCRIPTOR, "status")
_MESSAGES = key(batch.ReceiveResponse.DESCRIPTOR, "messages")
_NEXT_OFFSET = key(batch.PullResponse.DESCRIPTOR, "next_offset")
_ENTRIES = key(batch.AckResponse.DESCRIPTOR, "entries")
_ACK_ENTRIES = key(rpc.AckMessageResponse.DESCRIPTOR, "entries")
_RESULT = rpc.AckMessageResultEntry.DESCRIPTOR
_ENTRY_STATUS = key(_RESULT, "status")
# Receive and Pull replies share one layout for their status and messages (a test pins it).
assert (_STATUS, _MESSAGES) == (key(batch.PullResponse.DESCRIPTOR, "status"), key(batch.PullResponse.DESCRIPTOR, "messages"))
# The broker frames each received message once, for the stream and the batch reply alike.
assert _MESSAGES == key(rpc.ReceiveMessageResponse.DESCRIPTOR, "message")
assert _STATUS == key(batch.AckResponse.DESCRIPTOR, "status") == key(rpc.AckMessageResponse.DESCRIPTOR, "status")


def _status_field(status: pb.Status, field: bytes = _STATUS) -> bytes:
    return delimited(field, status.SerializeToString())


_OK = pb.Status(code=pb.OK, message="OK")
_OK_ENTRY = _status_field(_OK, _ENTRIES)
_OK_RESULT_STATUS = _status_field(_OK, _ENTRY_STATUS)


def messages_reply(status: pb.Status, messages: Sequence[bytes], next_offset: int | None = None) -> bytes:
    """A serialized ReceiveResponse (or, with `next_offset`, PullResponse) carrying `messages`
    (serialized v2 Messages) as they are."""
    framed = itertools.chain.from_iterable((_MESSAGES, varint(len(m)), m) for m in messages)
    tail = _NEXT_OFFSET + varint(next_offset & 0xFFFFFFFFFFFFFFFF) if next_offset else b""
    return b"".join((_status_field(status), *framed, tail))


def received_reply(status: pb.Status, framed: Sequence[bytes]) -> bytes:
    """A serialized ReceiveResponse of messages framed already (each its field key, length and
    serialized Message: what PopService.receive hands out)."""
    return b"".join((_status_field(status), *framed))


def ack_reply(status: pb.Status, entries: Sequence[pb.Status | None]) -> bytes:
    """A serialized AckResponse: `status`, then one status per receipt handle (None: OK)."""
    return b"".join((_status_field(status), *(_OK_ENTRY if e is None else _status_field(e, _ENTRIES) for e in entries)))


def ack_message_reply(status: pb.Status, entries: Sequence[bytes], statuses: Sequence[pb.Status | None]) -> bytes:
    """A serialized AckMessageResponse: `status`, then per entry its fields as the request's
    entry carried them (its message id and receipt handle: `ack_request.AckRequest.entries`)
    and its status (None: OK)."""
    parts = [_status_field(status)]
    for entry, st in zip(entries, statuses):
        result = _OK_RESULT_STATUS if st is None else _status_field(st, _ENTRY_STATUS)
        parts += (_ACK_ENTRIES, varint(len(entry) + len(result)), entry, result)
    return b"".join(parts)
