"""Where a consumer group stands on each queue it reads (for `rockmq group describe`)."""

from __future__ import annotations

from dataclasses import dataclass

from rockmq.broker.context import BrokerContext
from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.broker.pop.service import PopService
from rockmq.broker.pull import PullService
from rockmq.store import keys
from rockmq.store.schema import Family


@dataclass(frozen=True)
class QueuePosition:
    topic: TopicConfig
    queue_id: int
    committed: int  # offset committed by offset-based consumers; -1: none
    popped: int  # next offset POP hands out
    max_offset: int
    inflight: int  # POP deliveries in flight or waiting for redelivery

    @property
    def lag(self) -> int:
        """Messages not consumed yet: those not handed out, and those in flight."""
        return max(0, self.max_offset - max(self.popped, self.committed)) + self.inflight


class Positions:
    def __init__(self, ctx: BrokerContext, pop: PopService, pull: PullService) -> None:
        self.ctx = ctx
        self.pop = pop
        self.pull = pull

    def of(self, group: GroupConfig) -> list[QueuePosition]:
        """Every queue of every topic the group has a position on, by topic id and queue."""
        inflight = self.pop.inflight_count(group.id)
        tids = {tid for (tid, _) in inflight}
        for key, _ in self.ctx.store.scan_prefix(Family.OFFSETS, keys.group_prefix(group.id)):
            tids.add(keys.parse_offset_key(key)[1])
        out = []
        for tid in sorted(tids):
            topic = self.ctx.meta.topics_by_id.get(tid)
            if topic is None:
                continue
            for q in range(topic.queues):
                out.append(QueuePosition(topic, q, self.pull.committed(group.id, tid, q), self.pop.pop_offset(group.id, tid, q),
                                         self.ctx.logs.max_offset(tid, q), inflight.get((tid, q), 0)))
        return out
