"""Lite topics: which queue of its LITE parent each one is (docs/lite-topics.md).

A lite topic is one queue of its parent topic, numbered from `keys.LITE_QUEUE_BASE` in creation
order and never reused, so its messages are ordinary log entries and everything that reads a queue
(receive, pull, Fetch, trace, index, retention) reads it unchanged. The first send naming it creates
it, in that send's WriteBatch: a refused or failed send creates nothing (`rollback`). The `lite`
family maps names to queues and back, and holds each parent's next queue id and count.

Memory is bounded whatever the number of lite topics: names are read from the store (a point read
through the block cache) behind a cache of at most CACHE_ENTRIES names; per parent there is a next
id and a count, nothing per lite topic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from rockmq.broker.metadata import TopicConfig
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError
from rockmq.store import Store, keys
from rockmq.store.db import Batch
from rockmq.store.keys import LITE_COUNT, LITE_NEXT, LITE_QUEUE_BASE
from rockmq.store.schema import Family

MAX_LITE_TOPIC_SIZE = 64  # characters of a name (the Settings reply's max_lite_topic_size)
_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_LITE_TOPIC_SIZE}}}")
CACHE_ENTRIES = 65_536  # names kept in memory (~150 bytes each)
MAX_QUEUE_ID = 2**32 - 1

Key = tuple[int, str]  # (parent topic id, lite topic name)
Created = dict[Key, int]  # (parent, name) -> queue: lite topics a batch creates
Placed = dict[Key, int | BrokerError]  # (parent, name) -> queue, or why not (`queues`)


def check_lite_name(name: str) -> None:
    """Refuse (ILLEGAL_LITE_TOPIC) a name that is not 1-64 letters, digits, `_` or `-`, as Apache's proxy does."""
    if not _NAME.fullmatch(name):
        shown = name[:64] + ("..." if len(name) > 64 else "")
        raise BrokerError(pb.ILLEGAL_LITE_TOPIC, f"illegal lite topic {shown!r}: use 1-{MAX_LITE_TOPIC_SIZE} "
                                                 "letters, digits, '_' or '-'")


class _Recent(dict[Key, int]):
    """The queues of recently used lite topics, at most CACHE_ENTRIES: two generations of half as
    many, the young one this dict itself (a hit there is one `dict.get` in C). A name goes into the
    young one (`put`; one found in the old one goes back in: `get`); the young one full, it becomes
    the old one and the old one goes. An LRU OrderedDict cost ~2 µs per insert under churn (a
    million lite topics each created by its send), as much as the rest of creating one."""

    def __init__(self) -> None:
        super().__init__()
        self._old: dict[Key, int] = {}

    def old(self, key: Key) -> int | None:
        """The queue of a lite topic the young generation lacks (`dict.get` first), if the old one has it."""
        qid = self._old.get(key)
        if qid is not None:
            self.put(key, qid)
        return qid

    def put(self, key: Key, qid: int) -> None:
        self[key] = qid
        self._age()

    def add(self, entries: dict[Key, int]) -> None:
        """`put` of each (a generation may pass its half by as many)."""
        self.update(entries)
        self._age()

    def _age(self) -> None:
        if len(self) >= CACHE_ENTRIES // 2:
            self._old = self.copy()
            self.clear()

    def forget_topic(self, topic_id: int) -> None:
        for generation in (self, self._old):
            for key in [k for k in generation if k[0] == topic_id]:
                del generation[key]

    def forget(self, key: Key) -> None:
        self.pop(key, None)
        self._old.pop(key, None)


class LiteTopics:
    def __init__(self, store: Store, max_per_topic: int) -> None:
        self._store = store
        self.max_per_topic = max_per_topic
        self._cache = _Recent()
        self._next: dict[int, int] = {}  # parent -> the next lite topic's queue id
        self._count: dict[int, int] = {}  # parent -> lite topics it holds

    # --- names --------------------------------------------------------------------------------

    def queue_of(self, topic_id: int, name: str) -> int | None:
        """The queue of a lite topic, or None if it does not exist."""
        key = (topic_id, name)
        qid = self._cache.get(key) or self._cache.old(key)
        if qid is not None:
            return qid
        raw = self._store.get(Family.LITE, keys.lite_name_key(topic_id, name))
        if raw is None:
            return None
        qid = keys.decode_u32(raw)
        self._cache.put(key, qid)
        return qid

    def name_of(self, topic_id: int, queue_id: int) -> str | None:
        raw = self._store.get(Family.LITE, keys.lite_queue_key(topic_id, queue_id))
        return raw.decode() if raw is not None else None

    def count(self, topic_id: int) -> int:
        self._load(topic_id)
        return self._count[topic_id]

    def _load(self, topic_id: int) -> None:
        if topic_id not in self._next:
            raw = self._store.get(Family.LITE, keys.lite_counter_key(LITE_NEXT, topic_id))
            self._next[topic_id] = keys.decode_u32(raw) if raw else LITE_QUEUE_BASE
            raw = self._store.get(Family.LITE, keys.lite_counter_key(LITE_COUNT, topic_id))
            self._count[topic_id] = keys.decode_u64(raw) if raw else 0

    # --- creation -----------------------------------------------------------------------------

    def queues(self, batch: Batch, wanted: Iterable[tuple[TopicConfig, str]], created: Created) -> Placed:
        """The queue of each of these lite topics ((parent, name), in message order), created in
        `batch` where new (noted in `created`, for `rollback`), or why not. Those the cache lacks are
        read in one multi-get (a request creating 64 pays one read, not 64). A name is checked
        (ILLEGAL_LITE_TOPIC) only here, where it enters the store: one that exists passed then. Past
        the parent's quota LITE_TOPIC_QUOTA_EXCEEDED. Called in the same step of the event loop as
        the batch's write: no other request writes in between."""
        cache = self._cache
        placed: Placed = {}
        unknown: dict[Key, TopicConfig] = {}  # in message order
        for topic, name in wanted:
            key = (topic.id, name)
            qid = cache.get(key) or cache.old(key)  # a queue id is never 0
            if qid is not None:
                placed[key] = qid
            elif key not in unknown:
                unknown[key] = topic
        if unknown:
            name_keys = [keys.lite_name_key(tid, name) for tid, name in unknown]
            for (key, topic), name_key, raw in zip(unknown.items(), name_keys,
                                                   self._store.get_many(Family.LITE, name_keys), strict=True):
                if raw is not None:
                    placed[key] = qid = keys.decode_u32(raw)
                    cache.put(key, qid)
                    continue
                try:
                    placed[key] = created[key] = self._create(batch, topic, key[1], name_key)
                except BrokerError as e:
                    placed[key] = e
            for topic_id in {tid for tid, _ in created}:  # the parents' counters, once per request
                self._counters(batch, topic_id)
        return placed

    def _create(self, batch: Batch, topic: TopicConfig, name: str, name_key: bytes) -> int:
        check_lite_name(name)
        if topic.id not in self._next:
            self._load(topic.id)
        count, qid = self._count[topic.id], self._next[topic.id]
        if count >= self.max_per_topic:
            raise BrokerError(pb.LITE_TOPIC_QUOTA_EXCEEDED, f"topic {topic.name!r} holds {count:,} lite topics, its "
                                                            f"quota (max_lite_topics_per_topic): {name!r} is not created")
        if qid > MAX_QUEUE_ID:
            raise BrokerError(pb.LITE_TOPIC_QUOTA_EXCEEDED, f"topic {topic.name!r} has used every lite topic id")
        batch.put(Family.LITE, name_key, keys.encode_u32(qid))
        batch.put(Family.LITE, keys.lite_queue_key(topic.id, qid), name.encode())
        self._next[topic.id], self._count[topic.id] = qid + 1, count + 1
        return qid  # cached once written (`written`): until then the store says it is not there

    def _counters(self, batch: Batch, topic_id: int) -> None:
        batch.put(Family.LITE, keys.lite_counter_key(LITE_NEXT, topic_id), keys.encode_u32(self._next[topic_id]))
        batch.put(Family.LITE, keys.lite_counter_key(LITE_COUNT, topic_id), keys.encode_u64(self._count[topic_id]))

    def written(self, created: Created) -> None:
        """The batch that created these was written."""
        self._cache.add(created)

    def rollback(self, created: Created) -> None:
        """The batch that created these failed: those it did not write do not exist (no id is
        reused either way: the next one counts past them)."""
        for (tid, name) in created:
            if self._store.get(Family.LITE, keys.lite_name_key(tid, name)) is None:
                self._count[tid] -= 1

    # --- listing, expiry ----------------------------------------------------------------------

    def page(self, topic_id: int, after: str, prefix: str, limit: int) -> tuple[list[tuple[str, int]], bool]:
        """Up to `limit` lite topics by name, after `after`, starting with `prefix` -> ([(name, queue)], more)."""
        head = keys.lite_names_prefix(topic_id)
        lower = head + (after.encode() + b"\x00" if after and after >= prefix else prefix.encode())
        upper = keys.prefix_end(head + prefix.encode()) if prefix else keys.prefix_end(head)
        found = [(k[len(head):].decode(), keys.decode_u32(v)) for k, v in self._store.scan(Family.LITE, lower, upper, limit + 1)]
        return found[:limit], len(found) > limit

    def walk(self, topic_id: int, after_queue: int, limit: int) -> Iterator[tuple[int, str]]:
        """Up to `limit` lite topics by queue id, after `after_queue` -> (queue, name)."""
        lower = keys.lite_queue_key(topic_id, after_queue + 1) if after_queue < MAX_QUEUE_ID else None
        if lower is None:
            return
        for k, v in self._store.scan(Family.LITE, lower, keys.prefix_end(keys.lite_queues_prefix(topic_id)), limit):
            yield keys.parse_lite_queue_key(k)[1], v.decode()

    def delete(self, batch: Batch, topic_id: int, queue_id: int, name: str) -> None:
        """Remove an expired lite topic's names in `batch` (its log and offsets are the caller's)."""
        self._load(topic_id)
        batch.delete(Family.LITE, keys.lite_name_key(topic_id, name))
        batch.delete(Family.LITE, keys.lite_queue_key(topic_id, queue_id))
        self._count[topic_id] -= 1
        self._counters(batch, topic_id)
        self._cache.forget((topic_id, name))

    def forget_topic(self, topic_id: int) -> None:
        """A deleted parent's (its keys go with it: `keys.lite_topic_ranges`)."""
        self._next.pop(topic_id, None)
        self._count.pop(topic_id, None)
        self._cache.forget_topic(topic_id)



def check_lite_message(lite_topic: str | None, mtype: str, grouped: bool, delayed: bool, priority: int | None) -> None:
    """A message's lite topic against its type: a LITE message names one and no message
    group, delivery time or priority (the protocol forbids them together); no other type names one.
    Its name is checked where the lite topic is created (`LiteTopics.queues`), not on every send."""
    if mtype != "LITE":
        if lite_topic is not None:
            raise BrokerError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                              f"a {mtype} message takes no lite topic (send it to a LITE topic as a LITE message)")
        return
    if lite_topic is None:
        raise BrokerError(pb.ILLEGAL_LITE_TOPIC, "a LITE message needs a lite topic")
    if grouped or delayed or priority is not None:
        what = "message group" if grouped else "delivery time" if delayed else "priority"
        raise BrokerError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, f"a LITE message takes no {what}")


CACHED_POSITIONS = 65_536  # lite topics' offsets a position cache keeps (QueueLogs, PopOffsets)


def trim_lite(cache: dict[Any, int], limit: int) -> int:
    """Drop the oldest lite topics' entries of a position cache keyed by (..., queue) down to half of
    CACHED_POSITIONS (they are read from the store again when needed) -> the size at which to trim
    next. Called by the cache's owner only where no entry is about to be written (after a write)."""
    lite = [k for k in cache if k[-1] >= LITE_QUEUE_BASE]
    for key in lite[:max(0, len(lite) - CACHED_POSITIONS // 2)]:
        del cache[key]
    return max(limit, len(cache) + CACHED_POSITIONS // 2)
