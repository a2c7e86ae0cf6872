"""Delayed messages: kept in the timers family by due time, moved into their queues when due.

A delayed message is sealed when it is sent (`records.seal`) and waits as `topic_id · record`
under `due_ms · sequence`. The service sleeps until the earliest due key (a new, earlier timer
wakes it, see `DeadlineLoop`), then moves due messages in batches, each atomically: delete the
timer entries and append the log entries in one WriteBatch; moving costs no parse. Nothing about
pending timers is held in memory but a count, which is stored with every change.
"""

from __future__ import annotations

import bisect
import logging
import struct
from collections import Counter
from dataclasses import dataclass, field

from rockmq.broker.clock import now_ms
from rockmq.broker.commit import Committer
from rockmq.broker.context import BrokerContext
from rockmq.broker.deadlines import DeadlineLoop
from rockmq.broker.metadata import TopicConfig
from rockmq.broker.trace import Event
from rockmq.protocol import pb, records, tokens
from rockmq.protocol.errors import BrokerError
from rockmq.store import keys
from rockmq.store.counts import StoredCount
from rockmq.store.db import Batch
from rockmq.store.schema import Family

log = logging.getLogger(__name__)
_RECALL = struct.Struct(">QQ")
# Upper bounds (ms) of the lateness histogram's buckets; the last bucket is everything later.
LATENESS_BOUNDS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000)


@dataclass
class Lateness:
    """How late due messages entered their queues (move time minus due time), since start."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(LATENESS_BOUNDS_MS) + 1))
    max_ms: int = 0
    total_ms: int = 0

    def add(self, late_ms: int, count: int = 1) -> None:
        self.counts[bisect.bisect_left(LATENESS_BOUNDS_MS, late_ms)] += count
        self.total_ms += late_ms * count
        self.max_ms = max(self.max_ms, late_ms)


class TimerService:
    def __init__(self, ctx: BrokerContext, committer: Committer) -> None:
        self.ctx = ctx
        self.commit = committer.commit
        self.durable = committer.durable
        self._seq = ctx.sequence_start
        self.loop = DeadlineLoop("timer service", self.move_due, ctx.settings.timer_move_batch)
        self.lateness = Lateness()
        self.moved = 0
        self.pending = StoredCount(ctx.store, keys.TIMER_COUNT_KEY,
                                   lambda: sum(1 for _ in ctx.store.scan(Family.TIMERS, b"", b"\xff" * 17)))

    def schedule(self, batch: Batch, topic: TopicConfig, msg: pb.Message, due_ms: int, queue_id: int = -1) -> str:
        """Put a delayed message into `batch` (consumes `msg`); -> its recall handle. `queue_id`:
        the queue its client chose (-1: the broker chooses when it is due)."""
        return self.schedule_record(batch, topic, self.ctx.logs.seal(topic, msg, queue_id), due_ms)

    def schedule_record(self, batch: Batch, topic: TopicConfig, sealed: bytes, due_ms: int) -> str:
        """Put a sealed record into `batch`, due at `due_ms`; -> its recall handle."""
        self._seq += 1
        batch.put(Family.TIMERS, keys.timer_key(due_ms, self._seq), topic.id.to_bytes(4, "big") + sealed)
        self.pending.add(batch, 1)
        self.loop.note(due_ms)
        return tokens.seal(_RECALL.pack(due_ms, self._seq), self.ctx.secret)

    async def recall(self, topic: str, handle: str) -> str:
        """Cancel a pending delayed message of `topic` (which must exist); returns its message id.
        The handle must name a message of that topic: the topic is what authorization checked."""
        topic_id = self.ctx.meta.topic(topic).id
        try:
            due_ms, seq = _RECALL.unpack(tokens.unseal(handle, self.ctx.secret, _RECALL.size))
        except tokens.InvalidToken as e:
            raise BrokerError(pb.BAD_REQUEST, f"invalid recall handle: {e}") from None
        key = keys.timer_key(due_ms, seq)
        raw = self.ctx.store.get(Family.TIMERS, key)
        if raw is None or int.from_bytes(raw[:4], "big") != topic_id:
            await self.durable()  # a recall that found it gone (recalled before) answers once the replica agrees
            raise BrokerError(pb.NOT_FOUND, f"no pending delayed message of topic {topic!r} for this recall handle "
                                            "(delivered or recalled)")
        message_id = records.message_id(raw[4:])
        batch = self.ctx.store.batch()
        batch.delete(Family.TIMERS, key)
        self.pending.add(batch, -1)
        self.ctx.logs.trace.unplaced(batch, topic_id, message_id, Event.RECALLED)
        await self.commit(batch)
        return message_id

    def move_due(self) -> tuple[int, int | None]:
        """Move up to `timer_move_batch` due messages; -> (moved, due time of the next pending timer)."""
        ctx = self.ctx
        logs = ctx.logs
        topics = ctx.meta.topics_by_id
        trace = logs.trace.event
        now = now_ms()
        batch = ctx.store.batch()
        touched: set[int] = set()
        allocated: dict[tuple[int, int], int] = {}
        size = 0
        due: Counter[int] = Counter()  # due time -> messages: lateness is counted once per due time
        for key, value in self.loop.due(ctx.store, Family.TIMERS, now, ctx.settings.timer_move_batch):
            if size >= ctx.settings.timer_move_bytes:  # the rest is due too: the loop comes straight back for it
                break
            size += len(value)
            batch.delete(Family.TIMERS, key)
            due[keys.deadline_of(key)] += 1
            topic = topics.get(int.from_bytes(value[:4], "big"))
            if topic is None:  # the topic was deleted meanwhile
                continue
            sealed = memoryview(value)[4:]  # `place` copies it once, into the log record
            queue_id = logs.queue_of(topic, sealed)
            trace(batch, topic.id, queue_id, logs.append_record(batch, topic, queue_id, sealed, now, allocated=allocated),
                  Event.TIMER_FIRED)
            touched.add(topic.id)
        for due_ms, count in due.items():
            self.lateness.add(now - due_ms, count)
        moved = due.total()
        if moved:
            self.pending.add(batch, -moved)
            logs.write_appends(batch, allocated, touched)  # and wakes the long polls they serve
            self.moved += moved
        return moved, self.loop.earliest(ctx.store, Family.TIMERS)

    def next_due(self) -> int | None:
        return self.loop.earliest(self.ctx.store, Family.TIMERS)
