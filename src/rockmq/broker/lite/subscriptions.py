"""Lite subscriptions: which lite topics each consumer holds, and which of them may have a message for it.

Subscriptions belong to a client, not to its group (the official clients' model): two consumers of
one group hold different sets and each receives only its own. What one receive loop serves is a
`Reader`: a client's own set, or, in a wildcard group (`rockmq group create G --lite-wildcard`),
every lite topic of the parent, shared by the group's clients there. They live in memory only:
every client re-sends its whole set (COMPLETE_ADD) every 30 s, which also says it is alive, and a
reader not heard from in `STALE_S` is dropped.

Dispatch follows traffic, not the number of lite topics: a stored lite message marks its lite topic
*ready* in the readers holding it and wakes only their receives (broker/arrivals.py, keyed by
reader); an ack of a lite message (its lite topic no longer held) does the same. A receive looks
at its reader's ready lite topics only. A wildcard reader that missed some (at start, or past
READY_LIMIT marked at once) walks the parent's lite topics in queue order, a bounded step per look.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from rockmq.broker.arrivals import Arrivals
from rockmq.broker.lite.topics import LiteTopics, Placed, check_lite_name
from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError
from rockmq.store.keys import LITE_QUEUE_BASE

READY_LIMIT = 4096  # lite topics a reader keeps marked ready; past it a wildcard reader walks them all
STALE_S = 120.0  # a reader whose client sent nothing for this long is dropped (clients re-sync every 30 s)
PYTHON = "PYTHON"

ReaderKey = str | tuple[int, int]  # a client id, or (group, parent) for a wildcard group's reader


@dataclass(eq=False)
class Reader:
    """What a lite consumer's receives serve (see the module's docstring)."""

    key: ReaderKey
    group_id: int
    topic_id: int
    names: set[str] | None = field(default_factory=set)  # None: every lite topic of the parent (wildcard)
    queues: dict[int, str] = field(default_factory=dict)  # queue -> name, of the held ones that exist
    ready: dict[str, None] = field(default_factory=dict)  # may have a message to hand out, oldest first
    walk: bool = False  # wildcard: ready lite topics may be missing from `ready`: walk them from `cursor`
    cursor: int = LITE_QUEUE_BASE - 1
    heard: float = field(default_factory=time.monotonic)
    looked: asyncio.Event | None = None  # the wake-up its last receive took: another one since, it was woken

    def holds(self, queue_id: int) -> bool:
        return self.names is None or queue_id in self.queues

    def mark(self, name: str) -> None:
        if len(self.ready) < READY_LIMIT or name in self.ready:
            self.ready[name] = None
        elif self.names is None:  # the walk finds the rest
            self.ready.clear()
            self.walk, self.cursor = True, LITE_QUEUE_BASE - 1


def quota_exceeded(client_id: str, topic: TopicConfig, wanted: int, quota: int) -> BrokerError:
    return BrokerError(pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED,
                       f"client {client_id[:64]!r} would hold {wanted:,} lite topics of {topic.name!r}, over its "
                       f"quota of {quota:,} (lite_subscription_quota)")


def read_names(action: int, names: list[str], client: str) -> list[str]:
    """The names a SyncLiteSubscription means. The official Python client 5.1.2 sends a PARTIAL_ADD of
    `subscribe_lite("s1")` as its characters `["s", "1"]` (docs/protocol.md): from that client
    (`client`: its x-mq-language and x-mq-client-version, "PYTHON 5.1.2"; rockmq's own says
    "PYTHON rockmq..."), a PARTIAL_ADD whose entries are all single characters is one name."""
    official_python = client.startswith(PYTHON + " ") and not client.startswith(PYTHON + " rockmq")
    if action == pb.PARTIAL_ADD and official_python and len(names) > 1 and all(len(n) == 1 for n in names):
        return ["".join(names)]
    return names


class LiteSubscriptions:
    def __init__(self, topics: LiteTopics, arrivals: Arrivals, quota: int, max_readers: int) -> None:
        self.topics = topics
        self.arrivals = arrivals
        self.quota = quota  # lite topics one client may hold (the Settings reply's lite_subscription_quota)
        self.max_readers = max_readers
        self._readers: dict[ReaderKey, Reader] = {}
        self._client_reader: dict[str, ReaderKey] = {}  # a wildcard group's client -> its shared reader
        self._holders: dict[tuple[int, str], set[ReaderKey]] = {}  # (parent, name) -> readers holding it
        self._wildcards: dict[int, set[ReaderKey]] = {}  # parent -> its wildcard readers

    # --- subscribing ----------------------------------------------------------------------------

    def sync(self, client_id: str, group: GroupConfig, topic: TopicConfig, action: int, names: list[str],
             client: str) -> list[str]:
        """Apply a SyncLiteSubscription: PARTIAL_ADD adds, PARTIAL_REMOVE removes, COMPLETE_ADD replaces
        the client's set, COMPLETE_REMOVE drops it -> the names the broker dropped: a COMPLETE_ADD over
        the quota (a quota lowered since) keeps what the client held first, up to the quota. A
        PARTIAL_ADD over it: LITE_SUBSCRIPTION_QUOTA_EXCEEDED, nothing changed. In a wildcard group
        every action binds the client to all of the parent."""
        names = read_names(action, names, client)
        for name in names:
            check_lite_name(name)
        reader = self.reader(client_id, group, topic)
        if reader.names is None:
            return []
        wanted = set(reader.names)
        if action == pb.PARTIAL_ADD:
            wanted.update(names)
        elif action == pb.PARTIAL_REMOVE:
            wanted.difference_update(names)
        elif action == pb.COMPLETE_ADD:
            wanted = set(names)
        elif action == pb.COMPLETE_REMOVE:
            wanted = set()
        else:
            raise BrokerError(pb.BAD_REQUEST, f"unknown lite subscription action {action}")
        dropped: list[str] = []
        if len(wanted) > self.quota:
            if action != pb.COMPLETE_ADD:
                raise quota_exceeded(client_id, topic, len(wanted), self.quota)
            held = reader.names
            ordered = sorted(wanted, key=lambda n: (n not in held, n))
            wanted, dropped = set(ordered[:self.quota]), ordered[self.quota:]
        self._set(reader, wanted)
        return dropped

    def _set(self, reader: Reader, wanted: set[str]) -> None:
        assert reader.names is not None
        tid = reader.topic_id
        for name in reader.names - wanted:
            self._unhold(reader, name)
        added = wanted - reader.names
        for name in added:
            self._holders.setdefault((tid, name), set()).add(reader.key)
            qid = self.topics.queue_of(tid, name)
            if qid is not None:
                reader.queues[qid] = name
                reader.mark(name)  # a backlog may be waiting
        reader.names = wanted
        if added:
            self.arrivals.lite(tid, [reader.key])

    def _unhold(self, reader: Reader, name: str) -> None:
        assert reader.names is not None
        holders = self._holders.get((reader.topic_id, name))
        if holders is not None:
            holders.discard(reader.key)
            if not holders:
                del self._holders[(reader.topic_id, name)]
        reader.ready.pop(name, None)
        for qid in [q for q, n in reader.queues.items() if n == name]:
            del reader.queues[qid]

    def reader(self, client_id: str, group: GroupConfig, topic: TopicConfig) -> Reader:
        """The reader a client's receive of `topic` in `group` serves (made if new: empty, or the
        group's wildcard reader). A client binds to one parent and group: another replaces it."""
        now = time.monotonic()
        key: ReaderKey = (group.id, topic.id) if group.lite_wildcard else client_id
        found = self._readers.get(key)
        if found is None or found.group_id != group.id or found.topic_id != topic.id:
            if found is not None:
                self._drop(found)
            self._make_room(now)
            found = self._readers[key] = Reader(key, group.id, topic.id)
            if group.lite_wildcard:
                found.names, found.walk = None, True
                self._wildcards.setdefault(topic.id, set()).add(key)
        if group.lite_wildcard:
            self._client_reader[client_id] = key
        found.heard = now
        return found

    def _make_room(self, now: float) -> None:
        """At most `max_readers`: the stale ones go first, then the longest silent."""
        if len(self._readers) < self.max_readers:
            return
        for reader in [r for r in self._readers.values() if now - r.heard > STALE_S]:
            self._drop(reader)
        if len(self._readers) >= self.max_readers:
            self._drop(min(self._readers.values(), key=lambda r: r.heard))

    def drop(self, client_id: str) -> None:
        """A client gone (it said goodbye, or its session was evicted): its subscriptions go with it."""
        self._client_reader.pop(client_id, None)
        reader = self._readers.get(client_id)
        if reader is not None:
            self._drop(reader)

    def _drop(self, reader: Reader) -> None:
        if reader.names is not None:
            for name in list(reader.names):
                self._unhold(reader, name)
        else:
            self._wildcards.get(reader.topic_id, set()).discard(reader.key)
        self._readers.pop(reader.key, None)
        self.arrivals.lite(reader.topic_id, [reader.key])  # its receives end their wait

    def holding(self, topic_id: int, name: str) -> int:
        """How many readers hold a lite topic (admin view)."""
        return len(self._holders.get((topic_id, name), ())) + len(self._wildcards.get(topic_id, ()))

    # --- dispatch -------------------------------------------------------------------------------

    def arrived(self, placed: Placed) -> None:
        """A request's messages were stored in these lite topics (`LiteTopics.queues`' answer for
        it: a refused one is skipped; a client's retry of a message stored before marks its lite
        topic too, and its receive looks and finds nothing new): mark them ready for their readers
        and wake those readers' receives only."""
        woken: dict[int, set[ReaderKey]] = {}
        holders, wildcards = self._holders, self._wildcards
        for key, qid in placed.items():
            if isinstance(qid, BrokerError):
                continue
            topic_id, name = key
            held, wild = holders.get(key, ()), wildcards.get(topic_id, ())
            if not held and not wild:
                continue
            marked = woken.setdefault(topic_id, set())
            for reader_key in held:
                reader = self._readers[reader_key]
                reader.queues[qid] = name
                reader.mark(name)
                marked.add(reader_key)
            for reader_key in wild:
                self._readers[reader_key].mark(name)
                marked.add(reader_key)
        for topic_id, marked in woken.items():
            self.arrivals.lite(topic_id, marked)

    def released(self, topic_id: int, queue_ids: Iterable[int]) -> None:
        """Deliveries of these lite topics were settled: what follows them may go out now."""
        woken: set[ReaderKey] = set()
        wildcards = self._wildcards.get(topic_id, ())
        for qid in set(queue_ids):
            name = self.topics.name_of(topic_id, qid)
            if name is None:
                continue
            for key in (*self._holders.get((topic_id, name), ()), *wildcards):
                self._readers[key].mark(name)
                woken.add(key)
        if woken:
            self.arrivals.lite(topic_id, woken)

    def forget(self, topic_id: int, name: str) -> list[str]:
        """A lite topic expired or was deleted: no reader holds it any more -> the clients that held
        it (told with NotifyUnsubscribeLiteCommand by the caller)."""
        clients = []
        for key in list(self._holders.get((topic_id, name), ())):
            reader = self._readers[key]
            assert reader.names is not None
            reader.names.discard(name)
            self._unhold(reader, name)
            if isinstance(key, str):
                clients.append(key)
        for key in self._wildcards.get(topic_id, ()):
            self._readers[key].ready.pop(name, None)
        return clients

    def forget_topic(self, topic_id: int) -> None:
        """A deleted parent: every reader of it goes."""
        for reader in [r for r in self._readers.values() if r.topic_id == topic_id]:
            self._drop(reader)
