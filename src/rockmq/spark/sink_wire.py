"""Arrow record batches -> serialized `BatchMessaging.Stage` requests, for the Spark sink.

Pure (no Spark, no I/O): the sink's per-row cost lives here. Building upb `Message` objects field
by field costs a few µs a row; this encodes the protobuf bytes by hand instead, reusing what
every message of a task shares (topic, born host and time, type), so the per-row work is a few
byte concatenations and the body's SHA1. Each message goes in the two parts the broker stores
(system properties; topic + properties + body), so the broker re-encodes nothing.
tests/spark/test_sink_broker.py checks the bytes against protobuf's parser.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from rockmq.protocol import pb, records
from rockmq.protocol.field_keys import DigestFields, MapEntryFields, MessageFields, ResourceFields, StageRequestFields
from rockmq.protocol.field_keys import SystemPropertiesFields as SP
from rockmq.protocol.wire import delimited as field
from rockmq.protocol.wire import varint

# Columns the sink understands, and the Arrow types it accepts for each (Spark's, via Arrow).
COLUMNS = ("body", "topic", "tag", "keys", "message_group", "delivery_timestamp", "properties", "message_id")

_TYPE = {t: SP.MESSAGE_TYPE + varint(t) for t in (pb.NORMAL, pb.FIFO, pb.DELAY)}
_SP_ITEM, _CONTENTS_ITEM = StageRequestFields.SYSTEM_PROPERTIES, StageRequestFields.CONTENTS


def timestamp(micros: int) -> bytes:
    """A google.protobuf.Timestamp from microseconds since the epoch."""
    seconds, us = divmod(micros, 1_000_000)
    return records.timestamp(seconds, us * 1000)


class RowError(ValueError):
    """A row the sink cannot turn into a message; says which row and why."""


@dataclass
class Encoder:
    """Encodes one task's rows. `id_prefix` makes generated message ids: prefix + row number."""

    default_topic: str | None
    born_host: str
    id_prefix: str

    def __post_init__(self) -> None:
        self._topics: dict[str, bytes] = {}
        self.rows = 0  # rows encoded so far: the next generated id's number

    def _topic(self, name: str | None) -> bytes:
        if name is None:
            name = self.default_topic
            if name is None:
                raise RowError(f"row {self.rows}: topic is null and no `topic` option is set")
        frame = self._topics.get(name)
        if frame is None:
            if not name:
                raise RowError(f"row {self.rows}: topic is empty")
            frame = self._topics[name] = field(MessageFields.TOPIC, field(ResourceFields.NAME, name.encode()))
        return frame

    def messages(self, batch: pa.RecordBatch, born_micros: int) -> Iterator[tuple[bytes, bytes]]:
        """-> per row, in order: (StageRequest.system_properties field, StageRequest.contents field)."""
        cols = {name: batch.column(i) for i, name in enumerate(batch.schema.names)}
        body_col = cols["body"]
        if pa.types.is_string(body_col.type) or pa.types.is_large_string(body_col.type):
            body_col = body_col.cast(pa.binary())
        bodies = body_col.to_pylist()
        shared = (field(SP.BORN_TIMESTAMP, timestamp(born_micros)) + field(SP.BORN_HOST, self.born_host.encode())
                  + records.IDENTITY_ENCODING)
        if len(cols) == 1:  # the fast path: bodies only
            yield from self._plain(bodies, shared)
            return
        topics = cols["topic"].to_pylist() if "topic" in cols else None
        tags = cols["tag"].to_pylist() if "tag" in cols else None
        key_lists = cols["keys"].to_pylist() if "keys" in cols else None
        groups = cols["message_group"].to_pylist() if "message_group" in cols else None
        dues = cols["delivery_timestamp"].cast(pa.int64()).to_pylist() if "delivery_timestamp" in cols else None
        props = cols["properties"].to_pylist() if "properties" in cols else None
        ids = cols["message_id"].to_pylist() if "message_id" in cols else None
        for i, body in enumerate(bodies):
            if body is None:
                raise RowError(f"row {self.rows}: body is null")
            sp = []
            if tags is not None and (tag := tags[i]) is not None:
                sp.append(field(SP.TAG, tag.encode()))
            if key_lists is not None and (row_keys := key_lists[i]):
                for k in row_keys:
                    if k is None:
                        raise RowError(f"row {self.rows}: keys holds a null")
                    sp.append(field(SP.KEYS, k.encode()))
            mid = ids[i] if ids is not None else None
            sp.append(field(SP.MESSAGE_ID, (mid if mid is not None else f"{self.id_prefix}{self.rows:08X}").encode()))
            sp.append(_digest(body))
            sp.append(shared)
            group = groups[i] if groups is not None else None
            due = dues[i] if dues is not None else None
            if group is not None and due is not None:
                raise RowError(f"row {self.rows}: a message with a message_group (FIFO) cannot be delayed")
            if group is not None:
                sp.append(_TYPE[pb.FIFO])
                sp.append(field(SP.MESSAGE_GROUP, group.encode()))
            elif due is not None:
                sp.append(_TYPE[pb.DELAY])
                sp.append(field(SP.DELIVERY_TIMESTAMP, timestamp(due)))
            else:
                sp.append(_TYPE[pb.NORMAL])
            parts = [self._topic(topics[i] if topics is not None else None)]
            if props is not None and (row_props := props[i]):
                for k, v in row_props:
                    if v is None:
                        raise RowError(f"row {self.rows}: property {k!r} is null")
                    entry = field(MapEntryFields.KEY, k.encode()) + field(MapEntryFields.VALUE, v.encode())
                    parts.append(field(MessageFields.USER_PROPERTIES, entry))
            parts.append(field(MessageFields.BODY, body))
            self.rows += 1
            yield field(_SP_ITEM, b"".join(sp)), field(_CONTENTS_ITEM, b"".join(parts))

    def _plain(self, bodies: list[bytes | None], shared: bytes) -> Iterator[tuple[bytes, bytes]]:
        head = self._topic(None)
        prefix = self.id_prefix
        tail = shared + _TYPE[pb.NORMAL]
        body_key, message_id_key, sp_item, contents_item = MessageFields.BODY, SP.MESSAGE_ID, _SP_ITEM, _CONTENTS_ITEM
        n = self.rows
        sha1 = hashlib.sha1
        try:
            for body in bodies:
                if body is None:
                    raise RowError(f"row {n}: body is null")
                sp = field(message_id_key, f"{prefix}{n:08X}".encode()) + _DIGEST + sha1(body).hexdigest().upper().encode() + tail
                contents = head + body_key + varint(len(body)) + body
                n += 1
                yield sp_item + varint(len(sp)) + sp, contents_item + varint(len(contents)) + contents
        finally:
            self.rows = n


# SystemProperties.body_digest = Digest{type: SHA1, checksum: 40 hex digits}: its fixed head.
_SHA1_HEX = 40
_DIGEST_HEAD = DigestFields.TYPE + varint(pb.SHA1) + DigestFields.CHECKSUM + varint(_SHA1_HEX)
_DIGEST = SP.BODY_DIGEST + varint(len(_DIGEST_HEAD) + _SHA1_HEX) + _DIGEST_HEAD


def _digest(body: bytes) -> bytes:
    return _DIGEST + hashlib.sha1(body).hexdigest().upper().encode()


def stage_request(messages: list[tuple[bytes, bytes]], ttl_ms: int, deduplicate: bool) -> bytes:
    """A serialized StageRequest from `Encoder.messages` output."""
    tail = ((StageRequestFields.TTL_MS + varint(ttl_ms) if ttl_ms else b"")
            + (StageRequestFields.DEDUPLICATE + varint(1) if deduplicate else b""))
    return b"".join(sp for sp, _ in messages) + b"".join(c for _, c in messages) + tail


def id_prefix(sink_id: str, batch_id: int, partition: int) -> str:
    """24 hex digits naming (sink, batch, partition): generated ids are this + the row number,
    the same for every attempt of a task, so a retried one rebuilds the very same ids."""
    return hashlib.sha256(f"{sink_id}/{batch_id}/{partition}".encode()).hexdigest()[:24].upper()
