"""Queue logs: offset allocation, appends and reads of the log family, and who they wake (broker/arrivals.py).

Offsets are dense and never reused: the next offset of every queue is kept in memory (recovered
from the last key at start), and an append allocates it and puts the record into the caller's
WriteBatch in one synchronous step, so no reader sees offset n+1 before offset n.
"""

from __future__ import annotations

import zlib
from collections.abc import Container, Iterable, Iterator, Mapping
from typing import Protocol

from rockmq.broker.arrivals import Arrivals
from rockmq.broker.clock import now_ms
from rockmq.broker.lite.topics import CACHED_POSITIONS, trim_lite
from rockmq.broker.message_index import MessageIndex
from rockmq.broker.metadata import TopicConfig
from rockmq.broker.trace import Tracer
from rockmq.protocol import pb, records
from rockmq.protocol.send_request import SentMessage
from rockmq.store import Store, keys
from rockmq.store.db import Batch
from rockmq.store.schema import Family


class AppendIndex(Protocol):
    """Called for every append to one of its `topics`, in the append's batch (broker/matches.py)."""

    @property
    def topics(self) -> Container[int]: ...

    def index_append(self, batch: Batch, topic_id: int, queue_id: int, offset: int, sealed: bytes | memoryview,
                     props: Mapping[str, str] | None) -> None: ...


class _NoIndex:
    topics: Container[int] = ()

    def index_append(self, batch: Batch, topic_id: int, queue_id: int, offset: int, sealed: bytes | memoryview,
                     props: Mapping[str, str] | None) -> None:
        pass


class QueueLogs:
    def __init__(self, store: Store, store_host: str, index: AppendIndex | None = None,
                 trace: Tracer | None = None) -> None:
        self.store = store
        self.store_host = store_host
        self._next: dict[tuple[int, int], int] = {}
        self._trim_at = CACHED_POSITIONS  # past it, lite topics' entries of _next are dropped (trim_lite)
        self.arrivals = Arrivals()
        self._arrived_tags: dict[int, set[str | None]] = {}  # tag-watched topic -> tags appended since its last wake
        self._round_robin: dict[int, int] = {}
        self._index = index or _NoIndex()
        self._indexed = self._index.topics  # live: read on every append
        self.messages = MessageIndex(store)  # every append's id and keys
        self.trace = trace or Tracer(enabled=False)  # what happens to the messages after

    def max_offset(self, topic_id: int, queue_id: int) -> int:
        """The offset the next message of this queue will get (= number ever appended)."""
        key = (topic_id, queue_id)
        nxt = self._next.get(key)
        if nxt is None:
            last = self.store.last_key_with_prefix(Family.LOG, keys.queue_prefix(topic_id, queue_id))
            nxt = keys.parse_log_key(last)[2] + 1 if last else 0
            self._next[key] = nxt
        return nxt

    def last_store_ms(self, topic_id: int, queue_id: int) -> int:
        """When the queue's newest message was stored (0: it holds none)."""
        last = self.max_offset(topic_id, queue_id) - 1
        record = self.read(topic_id, queue_id, last) if last >= 0 else None
        return records.view(record).store_ms if record is not None else 0

    def min_offset(self, topic_id: int, queue_id: int) -> int:
        """The oldest offset still stored (retention removes older ones)."""
        first = self.store.first_key(Family.LOG, keys.queue_prefix(topic_id, queue_id),
                                     keys.prefix_end(keys.queue_prefix(topic_id, queue_id)))
        return keys.parse_log_key(first)[2] if first else self.max_offset(topic_id, queue_id)

    def choose_queue(self, topic: TopicConfig, message_group: str | None) -> int:
        """The broker's placement: FIFO messages by a stable hash of the message group (whatever
        queue the client named), others round robin (unless their client chose: send.py)."""
        if message_group is not None:
            return zlib.crc32(message_group.encode()) % topic.queues
        self._round_robin[topic.id] = n = self._round_robin.get(topic.id, -1) + 1
        return n % topic.queues

    def queue_of(self, topic: TopicConfig, sealed: bytes | memoryview) -> int:
        """The queue a sealed record enters now (a delayed or transactional one, once due or
        committed): the one its client chose if the topic still has it, else `choose_queue`."""
        chosen = records.chosen_queue(sealed)
        return chosen if 0 <= chosen < topic.queues else self.choose_queue(topic, records.message_group(sealed))

    def seal(self, topic: TopicConfig, msg: pb.Message, queue_id: int = -1) -> bytes:
        """`msg` as a record for `topic`, ready for `append_record` now or later (consumes it);
        `queue_id`: the queue its client chose, for `queue_of` (-1: none)."""
        _address(msg, topic)
        return records.seal(msg, self.store_host, queue_id)

    def append_record(self, batch: Batch, topic: TopicConfig, queue_id: int, sealed: bytes | memoryview,
                      store_ms: int | None = None, props: Mapping[str, str] | None = None,
                      allocated: dict[tuple[int, int], int] | None = None) -> int:
        """Place a sealed record at the queue's next offset in `batch`; the caller writes the batch now.
        `props`: the message's user properties, if at hand (spares the indexer a parse).
        `allocated`: collects each queue's first offset in the batch (see `write_appends`)."""
        offset = self._allocate(topic.id, queue_id, allocated)
        store_ms = store_ms or now_ms()
        self._put(batch, topic.id, queue_id, offset, records.place(sealed, queue_id, offset, store_ms), props)
        sp = pb.SystemProperties.FromString(bytes(records.view(sealed).system_properties))  # not a received message's path
        self.messages.add(batch, topic.id, queue_id, offset, store_ms, sp.message_id, sp.keys)
        return offset

    def append_received(self, batch: Batch, topic: TopicConfig, queue_id: int, msg: SentMessage, store_ms: int,
                        allocated: dict[tuple[int, int], int]) -> int:
        """`append_record(seal(...))` in one step, for a received message (addressed to `topic`)
        that enters its queue as it arrives: its record built from the request's slices."""
        offset = self._allocate(topic.id, queue_id, allocated)
        record = records.placed(msg.tag, msg.message_group, msg.rest, msg.system_properties, msg.body_encoding, msg.body,
                                self.store_host, queue_id, offset, store_ms)
        self._put(batch, topic.id, queue_id, offset, record, msg.user_properties if topic.id in self._indexed else None)
        self.messages.add(batch, topic.id, queue_id, offset, store_ms, msg.message_id, msg.keys)
        return offset

    def _allocate(self, topic_id: int, queue_id: int, allocated: dict[tuple[int, int], int] | None) -> int:
        key = (topic_id, queue_id)
        offset = self._next.get(key)
        if offset is None:
            offset = self.max_offset(topic_id, queue_id)
        self._next[key] = offset + 1
        if allocated is not None and key not in allocated:
            allocated[key] = offset
        return offset

    def _put(self, batch: Batch, topic_id: int, queue_id: int, offset: int, record: bytes,
             props: Mapping[str, str] | None) -> None:
        batch.put(Family.LOG, keys.log_key(topic_id, queue_id, offset), record)
        if topic_id in self.arrivals.tag_watched:
            self._arrived_tags.setdefault(topic_id, set()).add(records.view(record).tag)
        if topic_id in self._indexed:
            self._index.index_append(batch, topic_id, queue_id, offset, record, props)

    def rollback(self, allocated: dict[tuple[int, int], int]) -> None:
        """Give back the offsets allocated for a batch that was never written (`allocated`: each
        queue's first offset in it), so the queue's next message takes the first: no gap."""
        for key, first in allocated.items():
            self._next[key] = first

    def write_appends(self, batch: Batch, allocated: dict[tuple[int, int], int], touched: Iterable[int]) -> None:
        """Write a batch of appends (`allocated`: each queue's first offset in it), then wake the
        long polls they can serve (`touched`: the topics appended to); if the write fails, its offsets are free again."""
        try:
            self.store.write(batch)
        except Exception:
            self.rollback(allocated)
            raise
        if len(self._next) > self._trim_at:  # a million lite topics: memory stays bounded
            self._trim_at = trim_lite(self._next, CACHED_POSITIONS)
        arrived = self._arrived_tags
        for topic_id in touched:
            self.arrivals.appended(topic_id, [q for t, q in allocated if t == topic_id], arrived.pop(topic_id, None))

    def read(self, topic_id: int, queue_id: int, offset: int) -> bytes | None:
        return self.store.get(Family.LOG, keys.log_key(topic_id, queue_id, offset))

    def read_many(self, topic_id: int, queue_id: int, offsets: list[int]) -> list[bytes | None]:
        return self.store.get_many(Family.LOG, [keys.log_key(topic_id, queue_id, o) for o in offsets])

    def scan(self, topic_id: int, queue_id: int, start: int, limit: int) -> Iterator[tuple[int, bytes]]:
        return by_offset(self.scan_keyed(topic_id, queue_id, start, limit))

    def scan_keyed(self, topic_id: int, queue_id: int, start: int, limit: int) -> Iterator[tuple[bytes, bytes]]:
        """`scan` with each record's log key as it is (`keys.log_offset` reads its offset): no step of
        Python between the store and a compiled reader (records.frame_run)."""
        end = keys.prefix_end(keys.queue_prefix(topic_id, queue_id))
        return self.store.scan(Family.LOG, keys.log_key(topic_id, queue_id, start), end, limit)

    def forget_offsets(self) -> None:
        """Drop the cached next offsets (a replica's store changed underneath)."""
        self._next.clear()

    def new_queues(self, created: Iterable[tuple[int, int]]) -> None:
        """Queues (topic id, queue id) created by the batch being built (lite topics): each one's
        first offset is 0, no need to look (one already appended to keeps its next)."""
        nxt = self._next
        for key in created:
            nxt.setdefault(key, 0)

    def forget_queue(self, topic_id: int, queue_id: int) -> None:
        """An expired lite topic's next offset (its queue id is never used again)."""
        self._next.pop((topic_id, queue_id), None)

    def forget_topic(self, topic_id: int) -> None:
        """What is kept of a deleted topic (its id is never used again); its polls wake and find it gone."""
        for key in [k for k in self._next if k[0] == topic_id]:
            del self._next[key]
        self._round_robin.pop(topic_id, None)
        self._arrived_tags.pop(topic_id, None)
        self.arrivals.topic(topic_id)


def by_offset(scan: Iterator[tuple[bytes, bytes]]) -> Iterator[tuple[int, bytes]]:
    """A keyed log scan (`QueueLogs.scan_keyed`) as (offset, record)."""
    log_offset = keys.log_offset
    for key, value in scan:
        yield log_offset(key), value


def _address(msg: pb.Message, topic: TopicConfig) -> None:
    """Name the topic the message is stored in (a send-back out of attempts goes to the dead-letter topic)."""
    if msg.topic.name != topic.name:
        msg.topic.name = topic.name
