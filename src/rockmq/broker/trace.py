"""The trace store: what happened to each stored message after it was stored (docs/storage.md
"The trace store").

An event is one put in the trace family, in the WriteBatch the broker writes anyway for what it
records (a receive's checkpoint, an ack's settlement, a timer's move, a transaction's commit, a
dead-letter copy): no extra write, no fsync of its own. Its key is the message's log key, then the
event time and a sequence (`keys.trace_key`), so a message's timeline is one prefix scan, and
retention trims it with the log, per queue by offset (broker/retention.py), at the latest
`trace_ttl_s` after the message was stored. The value is small and fixed: the kind, the group id
(named when read), the attempt, then the client id. "Stored" is not an event: the message's record
and its index entry say it.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterable
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


_VALUE = struct.Struct(">BIH")  # kind · group id · attempt, then the client id (UTF-8)
_pack_value = _VALUE.pack
_U32 = 0xFFFFFFFF


@dataclass(frozen=True)
class TraceEvent:
    at_ms: int
    kind: Event
    group_id: int
    attempt: int
    client_id: str


class Tracer:
    """Writes events into batches (nothing when `enabled` is off) and reads a message's timeline."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._seq = itertools.count()

    def event(self, batch: Batch, topic_id: int, queue_id: int, offset: int, kind: Event, group_id: int = 0,
              attempt: int = 0, client_id: str = "") -> None:
        if self.enabled:
            self.events(batch, topic_id, ((queue_id, offset, attempt),), kind, group_id, client_id)

    def events(self, batch: Batch, topic_id: int, deliveries: Iterable[tuple[int, int, int]], kind: Event,
               group_id: int = 0, client_id: str = "") -> None:
        """One event of `kind` for each (queue, offset, attempt); a delivery after the first is REDELIVERED."""
        if not self.enabled:
            return
        now = now_ms()
        put, key, seq = batch.put, keys.trace_key, self._seq
        client = client_id.encode()
        redelivery = kind == Event.DELIVERED
        for queue_id, offset, attempt in deliveries:
            what = Event.REDELIVERED if redelivery and attempt > 1 else kind
            put(Family.TRACE, key(topic_id, queue_id, offset, now, next(seq) & _U32),
                _pack_value(what, group_id, attempt & 0xFFFF) + client)

    @staticmethod
    def timeline(store: Store, topic_id: int, queue_id: int, offset: int, limit: int) -> list[TraceEvent]:
        """The message's events, oldest first (at most `limit`)."""
        out = []
        for k, v in store.scan_prefix(Family.TRACE, keys.log_key(topic_id, queue_id, offset), limit):
            kind, group_id, attempt = _VALUE.unpack_from(v)
            out.append(TraceEvent(keys.parse_trace_key(k)[3], Event(kind), group_id, attempt, v[_VALUE.size:].decode()))
        return out
