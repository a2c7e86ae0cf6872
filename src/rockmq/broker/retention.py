"""Retention: a queue's oldest messages go once they are older than `retention_s`, or, with
`retention_bytes`, while the log holds more than that (the oldest first, across all queues).

Every `retention_check_s` the service finds, for every queue, the first offset to keep by a
binary search over store times (a queue is appended in time order, so this costs a few point
reads, no scan) and removes everything before it with one range delete per queue, all in one
WriteBatch: readers see a queue's minimum offset move up, never a gap. A range delete only
hides records, so the removed key range is then compacted on a worker thread (RocksDB releases
the GIL), which gives the disk space back: the keys leave the tables and blob files whose
every blob is gone are deleted.

A queue always keeps its newest message: its key carries the queue's next offset across a
restart, and offsets are never reused.

What a removed message owns goes with it (docs/storage.md "What retention frees"): in the same
WriteBatch, the filter matches of every registered group below the cut (one range delete per
group and queue), and the retry entries that point below a queue's minimum offset (an idle
group's, which its next receive would skip), found by a scan of at most `RETRY_SCAN` entries per
sweep that resumes where the last one stopped. POP checkpoints of removed messages go when their
invisible time runs out (revive finds the record gone). Their traces go with the same range deletes
(and, with a `trace_ttl_s` shorter than retention, those of messages stored longer ago than that), and
the key and id index by the hour, once an hour is older than `retention_s`
(broker/message_index.py, broker/trace.py). Timers, staged chunks, de-duplication
entries and transaction markers are not owned by a stored message and expire on their own clocks.
The size cap is an estimate (RocksDB's own file sizes, messages spread evenly in time): a sweep
that removes too little is followed by another.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from rockmq.broker.clock import now_ms
from rockmq.broker.context import BrokerContext
from rockmq.broker.queues import QueueLogs
from rockmq.broker.subscriptions import Subscriptions
from rockmq.protocol import records
from rockmq.store import keys
from rockmq.store.db import Batch
from rockmq.store.disk_space import log_failure
from rockmq.store.schema import Family

log = logging.getLogger(__name__)
RETRY_SCAN = 10_000  # retry entries a sweep looks at, at most (the family is small unless groups idle)
_RETRY_END = b"\xff" * 17  # above every retry key


@dataclass(frozen=True)
class Cut:
    """Remove offsets [start, end) of a queue."""

    topic_id: int
    queue_id: int
    start: int
    end: int


def first_to_keep(stored_at: Callable[[int], int | None], lo: int, hi: int, keep_from_ms: int) -> int:
    """The first offset in [lo, hi) stored at or after `keep_from_ms` (hi if none), given
    `stored_at(offset)` -> ms (None: already gone), non-decreasing in the offset."""
    if lo < hi and (head := stored_at(lo)) is not None and head >= keep_from_ms:
        return lo  # the usual sweep: nothing old yet, one read
    while lo < hi:
        mid = (lo + hi) // 2
        at = stored_at(mid)
        if at is not None and at >= keep_from_ms:
            hi = mid
        else:
            lo = mid + 1
    return lo


def stored_at(logs: QueueLogs, topic_id: int, queue_id: int) -> Callable[[int], int | None]:
    """offset -> when the queue's message there was stored (ms; None: gone), for `first_to_keep`."""
    read = logs.read

    def at(offset: int) -> int | None:
        raw = read(topic_id, queue_id, offset)
        return records.store_ms(raw) if raw is not None else None

    return at


def size_cut_ms(oldest_ms: int, now: int, size: int, cap: int) -> int | None:
    """Where a size cap cuts, assuming messages spread evenly between the oldest and now: the
    time before which `size - cap` bytes were stored (at least one ms past the oldest)."""
    if not cap or size <= cap or oldest_ms >= now:
        return None
    return oldest_ms + max(1, (now - oldest_ms) * (size - cap) // size)


class RetentionService:
    def __init__(self, ctx: BrokerContext, subscriptions: Subscriptions) -> None:
        self.ctx = ctx
        self.subscriptions = subscriptions
        self.removed = 0  # messages removed since start
        self.freed_retries = 0  # ... and retry entries of removed messages
        self._retry_from = b""  # where the next sweep's look at the retry family starts

    def _stored_at(self, topic_id: int, queue_id: int) -> Callable[[int], int | None]:
        return stored_at(self.ctx.logs, topic_id, queue_id)

    def _queues(self) -> list[tuple[int, int, int, int]]:
        """(topic id, queue id, min offset, max offset) of every queue."""
        logs = self.ctx.logs
        return [(t.id, q, logs.min_offset(t.id, q), logs.max_offset(t.id, q))
                for t in list(self.ctx.meta.topics.values()) for q in range(t.queues)]

    def plan(self, now: int, queues: list[tuple[int, int, int, int]] | None = None) -> list[Cut]:
        """What a sweep at `now` removes (of `queues`, as `_queues` gives them)."""
        ctx = self.ctx
        s = ctx.settings
        queues = [(tid, qid, lo, hi) for tid, qid, lo, hi in (self._queues() if queues is None else queues) if hi - lo > 1]
        keep_from = now - s.retention_s * 1000
        if s.retention_bytes:
            heads = [self._stored_at(tid, qid)(lo) for tid, qid, lo, _ in queues]
            oldest = min((h for h in heads if h is not None), default=now)
            by_size = size_cut_ms(oldest, now, ctx.store.size(Family.LOG), s.retention_bytes)
            if by_size is not None:
                keep_from = max(keep_from, by_size)
        cuts = []
        for tid, qid, lo, hi in queues:
            end = first_to_keep(self._stored_at(tid, qid), lo, hi - 1, keep_from)  # the newest stays
            if end > lo:
                cuts.append(Cut(tid, qid, lo, end))
        return cuts

    async def sweep(self) -> int:
        """Remove what retention says is due, with what it owns; -> messages removed."""
        queues = self._queues()
        now = now_ms()
        cuts = self.plan(now, queues)
        floors = {(tid, qid): lo for tid, qid, lo, _ in queues} | {(c.topic_id, c.queue_id): c.end for c in cuts}
        batch = self.ctx.store.batch()
        for c in cuts:
            batch.delete_range(Family.LOG, keys.log_key(c.topic_id, c.queue_id, c.start),
                               keys.log_key(c.topic_id, c.queue_id, c.end))
        self._free_matches(batch, cuts)
        self._trim_traces(batch, now, queues, cuts)
        topic_ids = list(self.ctx.meta.topics_by_id)
        self.ctx.logs.messages.trim(batch, topic_ids, now - self.ctx.settings.retention_s * 1000)
        self.ctx.logs.trace.trim(batch, topic_ids, now)
        freed = self._free_retries(batch, floors)
        if batch.empty:
            return 0
        await self.ctx.store.commit(batch)
        self.freed_retries += freed
        if freed:
            log.info("retention freed %d retry entries of removed messages", freed)
        if not cuts:
            return 0
        removed = sum(c.end - c.start for c in cuts)
        self.removed += removed
        log.info("retention removed %d messages from %d queues", removed, len(cuts))
        bounds = [keys.log_key(c.topic_id, c.queue_id, c.start) for c in cuts]
        await self.ctx.store.compact(Family.LOG, min(bounds), max(keys.log_key(c.topic_id, c.queue_id, c.end) for c in cuts))
        return removed

    def _trim_traces(self, batch: Batch, now: int, queues: list[tuple[int, int, int, int]], cuts: list[Cut]) -> None:
        """Put into `batch` the removal of the traces of removed messages and, with a `trace_ttl_s`
        shorter than retention, of messages stored longer ago than that (per queue, by offset, as the log)."""
        s = self.ctx.settings
        ends = {(c.topic_id, c.queue_id): c.end for c in cuts}
        if s.trace_ttl_s < s.retention_s:
            keep_from = now - s.trace_ttl_s * 1000
            for tid, qid, lo, hi in queues:
                end = first_to_keep(self._stored_at(tid, qid), lo, hi, keep_from)
                ends[(tid, qid)] = max(end, ends.get((tid, qid), 0))
        for (tid, qid), end in ends.items():
            if end > 0:
                batch.delete_range(Family.TRACE, keys.log_key(tid, qid, 0), keys.log_key(tid, qid, end))


    def _free_matches(self, batch: Batch, cuts: list[Cut]) -> None:
        """Put the range deletes of every registered group's matches below the cuts into `batch`
        (no compaction: receives seek past them, and the family's own compactions drop them)."""
        registered = self.subscriptions.groups_by_topic()
        for c in cuts:
            for gid in registered.get(c.topic_id, ()):
                batch.delete_range(Family.MATCHES, keys.match_key(gid, c.topic_id, c.queue_id, 0),
                                   keys.match_key(gid, c.topic_id, c.queue_id, c.end))

    def _free_retries(self, batch: Batch, floors: dict[tuple[int, int], int]) -> int:
        """Put the deletes of retry entries below their queue's minimum offset (or of a topic
        deleted since) into `batch`, looking at up to RETRY_SCAN entries; -> entries freed."""
        topics = self.ctx.meta.topics_by_id
        scanned = freed = 0
        last = b""
        for key, value in self.ctx.store.scan(Family.RETRY, self._retry_from, _RETRY_END, RETRY_SCAN):
            scanned += 1
            last = key
            tid = keys.parse_retry_key(key)[1]
            qid, offset, _ = keys.parse_retry_value(value)
            if tid not in topics or offset < floors.get((tid, qid), 0):
                batch.delete(Family.RETRY, key)
                freed += 1
        self._retry_from = last + b"\x00" if scanned == RETRY_SCAN else b""  # at the end: from the start next time
        return freed

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.ctx.settings.retention_check_s)
            if self.ctx.read_only:
                continue
            try:
                await self.sweep()
            except Exception as e:
                log_failure(log, e, "retention sweep failed; trying again at the next check")
