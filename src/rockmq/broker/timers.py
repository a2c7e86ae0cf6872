"""Delayed messages: kept in the timers family by due time, moved into their queues when due.

The service sleeps until the earliest due key (a new, earlier timer wakes it), then moves due
messages in batches, each atomically: delete the timer entry and append the log entry in one
WriteBatch. Nothing about pending timers is held in memory.
"""

from __future__ import annotations

import logging
import struct

from rockmq.broker.clock import now_ms
from rockmq.broker.context import BrokerContext
from rockmq.broker.deadlines import DeadlineLoop
from rockmq.broker.errors import BrokerError
from rockmq.broker.metadata import TopicConfig
from rockmq.protocol import pb, tokens
from rockmq.store import keys

log = logging.getLogger(__name__)
_RECALL = struct.Struct(">QQ")
MOVE_BATCH = 1000
MOVE_BYTES = 32 * 1024 * 1024  # one move's WriteBatch stays about this small


class TimerService:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self._seq = ctx.sequence_start
        self.loop = DeadlineLoop("timer service", self.move_due, MOVE_BATCH)
        self.on_move = lambda topic_ids: None  # set by the broker: wake long-polling readers

    def schedule(self, batch, topic: TopicConfig, msg: pb.Message, due_ms: int) -> str:
        """Put a delayed message into `batch`; returns its recall handle."""
        self._seq += 1
        batch.put("timers", keys.timer_key(due_ms, self._seq), topic.id.to_bytes(4, "big") + msg.SerializeToString())
        self.loop.note(due_ms)
        return tokens.seal(_RECALL.pack(due_ms, self._seq), self.ctx.secret)

    async def recall(self, handle: str) -> str:
        """Cancel a pending delayed message; returns its message id."""
        try:
            due_ms, seq = _RECALL.unpack(tokens.unseal(handle, self.ctx.secret, _RECALL.size))
        except tokens.InvalidToken as e:
            raise BrokerError(pb.BAD_REQUEST, f"invalid recall handle: {e}") from None
        key = keys.timer_key(due_ms, seq)
        raw = self.ctx.store.get("timers", key)
        if raw is None:
            raise BrokerError(pb.NOT_FOUND, "no pending delayed message for this recall handle (delivered or recalled)")
        batch = self.ctx.store.batch()
        batch.delete("timers", key)
        await self.ctx.store.commit(batch)
        return pb.Message.FromString(raw[4:]).system_properties.message_id

    def move_due(self) -> tuple[int, int | None]:
        """Move up to MOVE_BATCH due messages; -> (moved, due time of the next pending timer)."""
        ctx = self.ctx
        now = now_ms()
        batch = ctx.store.batch()
        touched: set[int] = set()
        moved = 0
        size = 0
        for key, value in ctx.store.scan("timers", b"", keys.deadline_bound(now + 1), MOVE_BATCH):
            if size >= MOVE_BYTES:  # the rest is due too: the loop comes straight back for it
                break
            size += len(value)
            batch.delete("timers", key)
            moved += 1
            topic = ctx.meta.topics_by_id.get(int.from_bytes(value[:4], "big"))
            if topic is None:  # the topic was deleted meanwhile
                continue
            msg = pb.Message.FromString(value[4:])
            ctx.logs.append(batch, topic, ctx.logs.choose_queue(topic, msg), msg)
            touched.add(topic.id)
        ctx.store.write(batch)
        if touched:
            self.on_move(touched)
        nxt = ctx.store.first_key("timers")
        return moved, keys.parse_timer_key(nxt)[0] if nxt else None
