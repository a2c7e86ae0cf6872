"""One look of a lite consumer's receive (`LiteTake`): pop/take.py's steps over its reader's lite topics.

Each lite topic is one queue consumed in order: nothing more of it goes out while an earlier
message of it is in flight or waiting for redelivery (pop/fifo.py holds it, as a FIFO group's
queue), whatever the group. Retries come first, those of the reader's lite topics only; then the
reader's ready lite topics in the order they became ready (broker/lite/subscriptions.py), and, for
a wildcard reader that may have missed some, a bounded walk of the parent's lite topics.
"""

from __future__ import annotations

from rockmq.broker.lite.subscriptions import Reader
from rockmq.broker.lite.topics import LiteTopics
from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.broker.pop.take import Sources, Take
from rockmq.store import keys

WALK_STEP = 256  # lite topics a wildcard reader's look walks at most


class LiteTake(Take):
    __slots__ = ("_reader", "_topics", "_looked")

    def __init__(self, sources: Sources, group: GroupConfig, topic: TopicConfig, reader: Reader, topics: LiteTopics,
                 batch_size: int, invisible_ms: int, max_bytes: int, client_id: str = "") -> None:
        super().__init__(sources, group, topic, None, batch_size, invisible_ms, None, max_bytes, client_id)
        self._fifo = sources.fifo  # every lite topic is consumed in order
        self._plain = False
        self._reader = reader
        self._topics = topics
        self._looked: set[int] = set()  # lite topics this look read (a position moves only once it is written)

    def _retries(self) -> list[tuple[bytes, bytes]]:
        holds = self._reader.holds
        return [r for r in super()._retries() if holds(keys.parse_retry_value(r[1])[0])]

    def new(self) -> None:
        reader = self._reader
        for name in list(reader.ready):
            if self.full():
                return
            qid = self._topics.queue_of(self._topic_id, name)
            if qid is None or not self._lite_queue(qid):
                reader.ready.pop(name, None)
        if reader.walk and not self.full():
            self._walk(reader)

    def _walk(self, reader: Reader) -> None:
        """A wildcard reader's step through the parent's lite topics from its cursor; a full pass
        that found nothing more to mark ends the walk."""
        walked = 0
        for qid, _ in self._topics.walk(self._topic_id, reader.cursor, WALK_STEP):
            walked += 1
            if self.full():
                return
            self._lite_queue(qid)
            reader.cursor = qid
        if walked < WALK_STEP:
            reader.walk, reader.cursor = False, keys.LITE_QUEUE_BASE - 1

    def _lite_queue(self, qid: int) -> bool:
        """New messages of one lite topic, in order -> whether more of it may be handed out now."""
        gid, tid = self._group_id, self._topic_id
        fifo = self._fifo
        assert fifo is not None
        if qid in self._looked:
            return False
        self._looked.add(qid)
        if fifo.held((gid, tid, qid)):
            return False  # its release marks it ready again
        begin = self._offsets.get(gid, tid, qid)
        end = self._ctx.logs.max_offset(tid, qid)
        if begin >= end:
            return False
        handed = len(self.out)
        position = self.scanned(qid, begin, end)
        if position != begin:
            self._positions[(gid, tid, qid)] = position
            self._offsets.advance(self.batch, gid, tid, qid, position)
        return len(self.out) == handed and position < end
