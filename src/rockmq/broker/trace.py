"""The trace store: what happened to each stored message after it was stored (docs/storage.md
"The trace store").

An event is one put in the trace family, in the WriteBatch the broker writes anyway for what it
records (a receive's checkpoint, an ack's settlement, a timer's move, a transaction's commit, a
dead-letter copy): no extra write, no fsync of its own. One event covers a range of consecutive
offsets of one queue (a receive hands out runs, an ack settles them): a put per run, not per
message. Its key is the log key of the range's last message, then the event time and a sequence
(`keys.trace_key`), and its value holds the range's first offset, the kind, the group id (named
when read), the attempt and the client id; a message's timeline is one bounded scan from its own
log key (ranges are at most RANGE_MAX long), and retention trims it with the log, per queue by
offset (broker/retention.py), at the latest `trace_ttl_s` after the message was stored. "Stored"
is not an event: the message's record and its index entry say it.

A message not in a queue (a half message checked or rolled back, a delayed one recalled) has no
log key: its events are filed under the topic's UNPLACED queue, at the hour of the event and a
CRC-32 of its id (`_unplaced_slot`), with the id after the client's so that a collision is told
apart; reading them is a prefix scan per hour of `trace_ttl_s`, and they go by the hour (`trim`).
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum

from rockmq.broker.clock import now_ms
from rockmq.store import Store, keys
from rockmq.store.db import Batch
from rockmq.store.schema import Family


class Event(IntEnum):
    TIMER_FIRED = 1
    DELIVERED = 2
    REDELIVERED = 3  # a delivery after the first (attempt > 1)
    ACKED = 4
    INVISIBLE_CHANGED = 5
    DEAD_LETTERED = 6
    COMMITTED = 7
    ROLLED_BACK = 8
    CHECKED = 9  # a producer asked to resolve the transaction
    RECALLED = 10


_VALUE = struct.Struct(">BIHQ")  # kind · group id · attempt · the range's first offset, then the client id (UTF-8)
_pack_value = _VALUE.pack
_U32 = 0xFFFFFFFF
UNPLACED = _U32  # the queue id under which events of messages not in a queue are filed
HOUR_MS = 3_600_000
RANGE_MAX = 1024  # offsets one event covers at most: how far back of a message's key its events can start
_ID = b"\0"  # between an unplaced event's client id and its message id
Range = tuple[int, int, int, int]  # queue, first offset, last offset, attempt


def _unplaced_slot(hour: int, message_id: str) -> int:
    """Where an unplaced message's events of that hour go, in the offset's place."""
    return hour << 32 | zlib.crc32(message_id.encode())


@dataclass(frozen=True)
class TraceEvent:
    at_ms: int
    kind: Event
    group_id: int
    attempt: int
    client_id: str


class Tracer:
    """Writes events into batches (nothing when `enabled` is off) and reads a message's timeline."""

    def __init__(self, enabled: bool, ttl_s: int = 72 * 3600) -> None:
        self.enabled = enabled
        self.ttl_ms = ttl_s * 1000
        self._seq = itertools.count()
        self._trimmed = 0  # unplaced events of hours before this one are gone

    def event(self, batch: Batch, topic_id: int, queue_id: int, offset: int, kind: Event, group_id: int = 0,
              attempt: int = 0, client_id: str = "") -> None:
        if self.enabled:
            self.ranges(batch, topic_id, ((queue_id, offset, offset, attempt),), kind, group_id, client_id)

    def ranges(self, batch: Batch, topic_id: int, ranges: Iterable[Range], kind: Event, group_id: int = 0,
               client_id: str = "") -> None:
        """One event of `kind` for each range of offsets (queue, first, last, attempt); a delivery
        after the first is REDELIVERED."""
        if not self.enabled:
            return
        now = now_ms()
        put, key, seq = batch.put, keys.trace_key, self._seq
        client = client_id.encode()
        redelivery = kind == Event.DELIVERED
        for queue_id, first, last, attempt in ranges:
            what = Event.REDELIVERED if redelivery and attempt > 1 else kind
            for start in range(first, last + 1, RANGE_MAX):
                end = min(last, start + RANGE_MAX - 1)
                put(Family.TRACE, key(topic_id, queue_id, end, now, next(seq) & _U32),
                    _pack_value(what, group_id, attempt & 0xFFFF, start) + client)

    def unplaced(self, batch: Batch, topic_id: int, message_id: str, kind: Event, client_id: str = "") -> None:
        """An event of a message that is in no queue (yet, or ever)."""
        if self.enabled:
            now = now_ms()
            key = keys.trace_key(topic_id, UNPLACED, _unplaced_slot(now // HOUR_MS, message_id), now, next(self._seq) & _U32)
            batch.put(Family.TRACE, key, _pack_value(kind, 0, 0, 0) + client_id.encode() + _ID + message_id.encode())

    @staticmethod
    def timeline(store: Store, topic_id: int, queue_id: int, offset: int, limit: int) -> list[TraceEvent]:
        """The events of the message at that place (those of the ranges that hold it), oldest first (at most `limit`)."""
        scan = store.scan(Family.TRACE, keys.log_key(topic_id, queue_id, offset),
                          keys.log_key(topic_id, queue_id, offset + RANGE_MAX))
        found = sorted((_event(k, v) for k, v in scan if _VALUE.unpack_from(v)[3] <= offset), key=lambda e: e.at_ms)
        return found[:limit]

    def unplaced_timeline(self, store: Store, topic_id: int, message_id: str, now: int, limit: int) -> list[TraceEvent]:
        """The events of the message while it was in no queue, within `trace_ttl_s`, oldest first."""
        out: list[TraceEvent] = []
        wanted = message_id.encode()
        for hour in range((now - self.ttl_ms) // HOUR_MS, now // HOUR_MS + 1):
            prefix = keys.log_key(topic_id, UNPLACED, _unplaced_slot(hour, message_id))
            out += [_event(k, v) for k, v in store.scan_prefix(Family.TRACE, prefix, limit - len(out))
                    if v.rpartition(_ID)[2] == wanted]
        return out

    def trim(self, batch: Batch, topic_ids: Iterable[int], now: int) -> None:
        """Put into `batch` the removal of the unplaced events of hours that ended `trace_ttl_s` ago (the placed
        ones go with their messages: broker/retention.py); nothing if no hour ended since the last trim."""
        cut = (now - self.ttl_ms) // HOUR_MS
        if cut <= self._trimmed:
            return
        for tid in topic_ids:
            batch.delete_range(Family.TRACE, keys.log_key(tid, UNPLACED, 0), keys.log_key(tid, UNPLACED, cut << 32))
        self._trimmed = cut


def coalesce(deliveries: Sequence[tuple[int, int, int]]) -> list[Range]:
    """(queue, offset, attempt) of deliveries, as ranges of consecutive offsets of one queue and attempt."""
    if deliveries:  # the usual ack: one receive's run, every offset once -> one range, found by set comprehensions
        kinds = {(q, a) for q, _, a in deliveries}
        offsets = {o for _, o, _ in deliveries}
        low, high = min(offsets), max(offsets)
        if len(kinds) == 1 and len(offsets) == len(deliveries) and high - low == len(offsets) - 1:
            ((queue_id, attempt),) = kinds
            return [(queue_id, low, high, attempt)]
    out: list[Range] = []
    for queue_id, offset, attempt in deliveries:
        extend(out, queue_id, offset, offset, attempt)
    return out


def extend(ranges: list[Range], queue_id: int, first: int, last: int, attempt: int) -> None:
    """Add offsets first..last of a queue and attempt to `ranges`: the last range grows if they follow it."""
    if ranges:
        q, start, end, a = ranges[-1]
        if q == queue_id and a == attempt and first == end + 1:
            ranges[-1] = (q, start, last, a)
            return
    ranges.append((queue_id, first, last, attempt))


def _event(key: bytes, value: bytes) -> TraceEvent:
    kind, group_id, attempt, _ = _VALUE.unpack_from(value)
    client = value[_VALUE.size:].partition(_ID)[0]
    return TraceEvent(keys.parse_trace_key(key)[3], Event(kind), group_id, attempt, client.decode())
