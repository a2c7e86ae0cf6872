"""Offset-based consumption: PullMessage, UpdateOffset, GetOffset and QueryOffset.

The consumer owns its position: it reads a queue from an offset and commits offsets it has
processed. rockmq's own client and the Spark source read this way.
"""

from __future__ import annotations

import asyncio

from rockmq.broker.context import BrokerContext
from rockmq.broker.errors import BrokerError
from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.broker.pop.service import MAX_REPLY_BYTES
from rockmq.filter.record_filter import RecordFilter
from rockmq.protocol import pb, records
from rockmq.store import keys
from rockmq.store.keys import COMMITTED

SCAN_LIMIT = 4096


class PullService:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx

    def _check_queue(self, topic: TopicConfig, queue_id: int) -> None:
        if not 0 <= queue_id < topic.queues:
            raise BrokerError(pb.BAD_REQUEST, f"topic {topic.name!r} has queues 0..{topic.queues - 1}, not {queue_id}")

    async def pull(self, topic: TopicConfig, queue_id: int, offset: int, batch_size: int, accept: RecordFilter,
                   poll_s: float) -> tuple[list[bytes], int]:
        """Messages from `offset` on -> (serialized v2 Messages, next offset)."""
        self._check_queue(topic, queue_id)
        logs = self.ctx.logs
        lo, hi = logs.min_offset(topic.id, queue_id), logs.max_offset(topic.id, queue_id)
        if offset < lo or offset > hi:
            raise BrokerError(pb.ILLEGAL_OFFSET, f"offset {offset} is outside the queue's range [{lo}, {hi}]")
        batch_size = max(1, min(batch_size, 1024))
        loop = asyncio.get_running_loop()
        until = loop.time() + poll_s
        while True:
            arrival = logs.signal(topic.id)
            out: list[bytes] = []
            size = 0
            position = offset
            for off, record in logs.scan(topic.id, queue_id, offset, SCAN_LIMIT):
                if len(out) >= batch_size or size >= MAX_REPLY_BYTES:
                    break
                position = off + 1
                view = records.view(record)
                if accept(view):
                    out.append(view.message())
                    size += len(out[-1])
            left = until - loop.time()
            if out or position != offset or left <= 0:
                return out, position
            try:
                await asyncio.wait_for(arrival.wait(), left)
            except TimeoutError:
                pass

    def update_offset(self, group: GroupConfig, topic: TopicConfig, queue_id: int, offset: int) -> None:
        self._check_queue(topic, queue_id)
        hi = self.ctx.logs.max_offset(topic.id, queue_id)
        if not 0 <= offset <= hi:
            raise BrokerError(pb.ILLEGAL_OFFSET, f"offset {offset} is outside [0, {hi}]")
        batch = self.ctx.store.batch()
        batch.put("offsets", keys.offset_key(group.id, topic.id, queue_id, COMMITTED), keys.encode_u64(offset))
        self.ctx.store.write(batch)

    def get_offset(self, group: GroupConfig, topic: TopicConfig, queue_id: int) -> int:
        self._check_queue(topic, queue_id)
        raw = self.ctx.store.get("offsets", keys.offset_key(group.id, topic.id, queue_id, COMMITTED))
        if raw is None:
            raise BrokerError(pb.OFFSET_NOT_FOUND, f"group {group.name!r} has no committed offset for queue {queue_id}")
        return keys.decode_u64(raw)

    def query_offset(self, topic: TopicConfig, queue_id: int, policy: int, timestamp_ms: int | None) -> int:
        self._check_queue(topic, queue_id)
        logs = self.ctx.logs
        lo, hi = logs.min_offset(topic.id, queue_id), logs.max_offset(topic.id, queue_id)
        if policy == pb.BEGINNING:
            return lo
        if policy == pb.END:
            return hi
        if timestamp_ms is None:
            raise BrokerError(pb.BAD_REQUEST, "a TIMESTAMP query needs a timestamp")
        # First offset stored at or after the timestamp (store times grow with offsets).
        while lo < hi:
            mid = (lo + hi) // 2
            record = logs.read(topic.id, queue_id, mid)
            if record is not None and records.store_ms(record) < timestamp_ms:
                lo = mid + 1
            else:
                hi = mid
        return lo
