"""Where a consumer group stands on each queue it reads, and its lag: the one computation behind
`rockmq group describe` and /metrics' rocketmq_consumer_* gauges. Lag is what the group has not
acknowledged: ready (stored, not handed out yet) + in flight (handed out, or waiting for redelivery),
in messages and in time (now minus the store time of the oldest of them)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rockmq.broker.context import BrokerContext
from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.broker.pop.service import PopService
from rockmq.broker.pull import PullService
from rockmq.protocol import records
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
    oldest: int  # offset of the oldest message the group has not acknowledged; -1: none

    @property
    def ready(self) -> int:
        """Messages not handed out yet."""
        return max(0, self.max_offset - max(self.popped, self.committed))

    @property
    def lag(self) -> int:
        """Messages not acknowledged yet: those not handed out, and those in flight."""
        return self.ready + self.inflight


@dataclass
class TopicLag:
    """A group's lag on one topic of this broker, over its queues."""

    topic: TopicConfig
    ready: int = 0
    inflight: int = 0
    oldest_ms: int = 0  # store time of the oldest message not acknowledged; 0: none

    def latency_ms(self, now_ms: int) -> int:
        return max(0, now_ms - self.oldest_ms) if self.oldest_ms else 0


class Positions:
    def __init__(self, ctx: BrokerContext, pop: PopService, pull: PullService) -> None:
        self.ctx = ctx
        self.pop = pop
        self.pull = pull

    def of(self, group: GroupConfig) -> list[QueuePosition]:
        """Every queue of every topic the group has a position on, by topic id and queue."""
        inflight = self.pop.inflight(group.id)
        tids = {tid for (tid, _) in inflight} | self._topics_with_positions(group.id)
        out = []
        for tid in sorted(tids):
            topic = self.ctx.meta.topics_by_id.get(tid)
            if topic is None:
                continue
            for q in range(topic.queues):
                out.append(self._position(group, topic, q, inflight.get((tid, q))))
        return out

    def _topics_with_positions(self, group_id: int) -> set[int]:
        """The topics the group holds a position on: one seek per topic, however many queues (a
        LITE topic's lite topics may be millions)."""
        head = keys.group_prefix(group_id)
        end = keys.prefix_end(head)
        found: set[int] = set()
        lower = head
        while (key := self.ctx.store.first_key(Family.OFFSETS, lower, end)) is not None:
            tid = keys.parse_offset_key(key)[1]
            found.add(tid)
            lower = head + keys.topic_prefix(tid + 1) if tid < 2**32 - 1 else end
        return found

    def _position(self, group: GroupConfig, topic: TopicConfig, q: int, inflight: tuple[int, int] | None) -> QueuePosition:
        committed = self.pull.committed(group.id, topic.id, q)
        popped = self.pop.pop_offset(group.id, topic.id, q)
        max_offset = self.ctx.logs.max_offset(topic.id, q)
        position = max(popped, committed)
        oldest = position if position < max_offset else -1
        if inflight is not None:
            oldest = inflight[1] if oldest < 0 else min(oldest, inflight[1])
        return QueuePosition(topic, q, committed, popped, max_offset, inflight[0] if inflight else 0, oldest)

    def store_ms(self, p: QueuePosition) -> int:
        """Store time of the oldest message of the queue the group has not acknowledged (0: none, or
        retention removed it: then the queue's oldest kept)."""
        if p.oldest < 0:
            return 0
        logs = self.ctx.logs
        record = logs.read(p.topic.id, p.queue_id, max(p.oldest, logs.min_offset(p.topic.id, p.queue_id)))
        return records.store_ms(record) if record is not None else 0

    def lags(self, group: GroupConfig) -> Iterator[TopicLag]:
        """The group's lag per topic it has a position on (/metrics)."""
        current: TopicLag | None = None
        for p in self.of(group):
            if current is None or current.topic is not p.topic:
                if current is not None:
                    yield current
                current = TopicLag(p.topic)
            current.ready += p.ready
            current.inflight += p.inflight
            stored = self.store_ms(p)
            if stored and (not current.oldest_ms or stored < current.oldest_ms):
                current.oldest_ms = stored
        if current is not None:
            yield current
