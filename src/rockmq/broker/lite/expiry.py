"""Lite topic expiry: a lite topic nothing was written to for its parent's TTL goes, with its
messages, traces, name and the groups' positions on it, and its subscribers are told.

The TTL is the parent's `lite_topic_ttl_s`, else the broker's. The walk goes through each LITE
topic's lite topics in queue order, `STEP` of them per round (a round every `ROUND_S` while a pass
is under way, every `retention_check_s` between passes), reading each one's newest message: its
cost follows the number of lite topics, bounded per second, with nothing kept per lite topic.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from rockmq.broker.clock import now_ms
from rockmq.broker.context import BrokerContext
from rockmq.broker.lite.subscriptions import LiteSubscriptions
from rockmq.broker.metadata import TopicConfig, is_lite
from rockmq.store import keys
from rockmq.store.db import Batch
from rockmq.store.disk_space import log_failure
from rockmq.store.keys import COMMITTED, LITE_QUEUE_BASE, POPPED
from rockmq.store.schema import Family

log = logging.getLogger(__name__)

STEP = 512  # lite topics looked at per round: a round holds the event loop ~20 ms
ROUND_S = 0.25  # so 2,048 a second while a pass is under way
# A lite topic with at most this many entries in a family goes by point deletes, a bigger one by a
# range delete: every iterator pays for each range tombstone in the memtable until it is flushed,
# and one per expired lite topic made the walk itself 100x slower by 200,000 (docs/lite-topics.md).
POINT_DELETES = 256

Unsubscribed = Callable[[str, str], None]  # (client id, lite topic): tell the client it no longer holds it


class LiteExpiry:
    def __init__(self, ctx: BrokerContext, lite: LiteSubscriptions, unsubscribed: Unsubscribed) -> None:
        self.ctx = ctx
        self.lite = lite
        self.unsubscribed = unsubscribed
        self._cursor: dict[int, int] = {}  # parent -> the queue the walk reached
        self.expired = 0  # lite topics removed since start (tests and metrics read it)

    async def run(self) -> None:
        while True:
            try:
                walking = self.round(now_ms())
            except Exception as e:
                log_failure(log, e, "lite topic expiry failed")
                walking = False
            await asyncio.sleep(ROUND_S if walking else self.ctx.settings.retention_check_s)

    def round(self, now: int) -> bool:
        """One round over every LITE topic -> whether a pass is still under way."""
        walking = False
        for topic in [t for t in self.ctx.meta.topics.values() if is_lite(t)]:
            walking |= self._step(topic, now)
        return walking

    def _step(self, topic: TopicConfig, now: int) -> bool:
        ttl_ms = (topic.lite_topic_ttl_s or self.ctx.settings.lite_topic_ttl_s) * 1000
        cursor = self._cursor.get(topic.id, LITE_QUEUE_BASE - 1)
        seen = 0
        batch = self.ctx.store.batch()
        gone: list[str] = []
        for qid, name in self.lite.topics.walk(topic.id, cursor, STEP):
            seen += 1
            cursor = qid
            if now - self.ctx.logs.last_store_ms(topic.id, qid) >= ttl_ms:
                self._delete(batch, topic, qid, name)
                gone.append(name)
        if gone:
            self.ctx.store.write(batch)
            self.expired += len(gone)
            for name in gone:
                for client_id in self.lite.forget(topic.id, name):
                    self.unsubscribed(client_id, name)
            log.info("expired %d lite topics of %s (idle for %d s)", len(gone), topic.name, ttl_ms // 1000)
        if seen < STEP:
            self._cursor.pop(topic.id, None)
            return False
        self._cursor[topic.id] = cursor
        return True

    def _delete(self, batch: Batch, topic: TopicConfig, qid: int, name: str) -> None:
        """A lite topic's messages, traces, name and the positions groups hold on it, in `batch`."""
        prefix = keys.queue_prefix(topic.id, qid)
        end = keys.prefix_end(prefix)
        for family in (Family.LOG, Family.TRACE):
            found = self.ctx.store.scan_keys(family, prefix, end, POINT_DELETES + 1)
            if len(found) > POINT_DELETES:
                batch.delete_range(family, prefix, end)
            else:
                for key in found:
                    batch.delete(family, key)
        positions = [keys.offset_key(g.id, topic.id, qid, kind) for g in self.ctx.meta.groups.values()
                     for kind in (COMMITTED, POPPED)]
        for key, value in zip(positions, self.ctx.store.get_many(Family.OFFSETS, positions), strict=True):
            if value is not None:
                batch.delete(Family.OFFSETS, key)
        self.lite.topics.delete(batch, topic.id, qid, name)
        self.ctx.logs.forget_queue(topic.id, qid)
