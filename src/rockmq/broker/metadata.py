"""Topics and consumer groups: names, ids, configuration, kept in the meta family.

Each topic and group gets a small integer id at creation; the other families key by id, so a
topic deleted and created again starts from a clean slate.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from dataclasses import asdict, dataclass, field

from rockmq.protocol import pb
from rockmq.protocol.conventions import DLQ_PREFIX, RETRY_PREFIX, check_name
from rockmq.protocol.errors import AlreadyExists, BrokerError, over_limit
from rockmq.store import Store, keys
from rockmq.store.db import Batch
from rockmq.store.schema import Family

MESSAGE_TYPES = ("NORMAL", "FIFO", "DELAY", "TRANSACTION")  # what a topic takes unless it is told
# A topic of one of these takes it alone: LITE holds lite topics (docs/lite-topics.md), PRIORITY
# messages with a priority (docs/priority.md).
LITE, PRIORITY = "LITE", "PRIORITY"
ALL_TYPES = (*MESSAGE_TYPES, LITE, PRIORITY)


@dataclass
class TopicConfig:
    name: str
    id: int
    queues: int
    message_types: list[str] = field(default_factory=lambda: list(MESSAGE_TYPES))
    perm: str = "rw"  # PERMS: "r" refuses sends, "w" refuses receives (and routes say so)
    lite_topic_ttl_s: int = 0  # LITE: a lite topic expires this long after its last message (0: the broker's default)
    max_priority: int = 9  # PRIORITY: priorities 0..max_priority


PERMS = ("rw", "r", "w")


def is_lite(topic: TopicConfig) -> bool:
    """A LITE topic: its lite topics are queues from keys.LITE_QUEUE_BASE (broker/lite/)."""
    return topic.message_types == [LITE]


def check_perm(perm: str) -> str:
    if perm not in PERMS:
        raise BrokerError(pb.BAD_REQUEST, f"unknown permission {perm!r}: use {', '.join(PERMS)}")
    return perm


def check_writable(topic: TopicConfig) -> None:
    """Refuse (FORBIDDEN) a send to a topic made read-only (`rockmq topic update T --perm r`)."""
    if topic.perm == "r":
        raise BrokerError(pb.FORBIDDEN, f"topic {topic.name!r} is read-only (perm r): it takes no sends")


def check_readable(topic: TopicConfig) -> None:
    """Refuse (FORBIDDEN) a receive or pull from a topic made write-only (`--perm w`)."""
    if topic.perm == "w":
        raise BrokerError(pb.FORBIDDEN, f"topic {topic.name!r} is write-only (perm w): it serves no receives")


# How a group consumes (broker/consume_mode.py): by POP, or by offsets its consumers commit.
POP, OFFSET = "pop", "offset"
CONSUME_MODES = (POP, OFFSET)


@dataclass
class GroupConfig:
    name: str
    id: int
    fifo: bool = False
    max_attempts: int = 17
    consume_mode: str = ""  # POP or OFFSET; "" until the group's first use (and for groups made before modes)
    lite_wildcard: bool = False  # its lite consumers receive every lite topic of their LITE topic (broker/lite/)


MAX_QUEUES = 1024  # of a topic, on one broker


def check_queue_count(queues: int, brokers: int = 1) -> None:
    """A topic's queue count: 1..MAX_QUEUES on each broker, over `brokers` (a topic spread over a cluster)."""
    if not 1 <= queues <= MAX_QUEUES * brokers:
        raise BrokerError(pb.BAD_REQUEST, f"queue count must be 1..{MAX_QUEUES * brokers}, not {queues}")


def parse_types(types: list[str] | None) -> list[str]:
    if not types:
        return list(MESSAGE_TYPES)
    out = []
    for t in types:
        up = t.strip().upper()
        if up not in ALL_TYPES:
            raise BrokerError(pb.BAD_REQUEST, f"unknown message type {t!r}: use {', '.join(ALL_TYPES)}")
        if up not in out:
            out.append(up)
    for alone in (LITE, PRIORITY):
        if alone in out and len(out) > 1:
            raise BrokerError(pb.BAD_REQUEST, f"a {alone} topic takes {alone} messages only, not {', '.join(out)}")
    return out


def _check_group_settings(max_attempts: int, consume_mode: str) -> None:
    if not 1 <= max_attempts <= 1000:
        raise BrokerError(pb.BAD_REQUEST, f"max attempts must be 1..1000, not {max_attempts}")
    if consume_mode and consume_mode not in CONSUME_MODES:
        raise BrokerError(pb.BAD_REQUEST, f"unknown consume mode {consume_mode!r}: use {' or '.join(CONSUME_MODES)}")


_CHANGES = itertools.count(1)  # numbers the changes of every Metadata's names, never twice


class Metadata:
    """In-memory view of the meta family, written through on every change. Creating more than
    `max_topics` topics (a group's retry and dead-letter topics aside) or `max_groups` groups is
    refused (TOO_MANY_REQUESTS)."""

    def __init__(self, store: Store, max_topics: int = 2**63, max_groups: int = 2**63) -> None:
        self.store = store
        self.max_topics, self.max_groups = max_topics, max_groups
        self.topics: dict[str, TopicConfig] = {}
        self.groups: dict[str, GroupConfig] = {}
        self.topics_by_id: dict[int, TopicConfig] = {}
        self.groups_by_id: dict[int, GroupConfig] = {}
        self._of_groups: set[str] = set()  # retry and dead-letter topics of existing groups: bounded by max_groups
        # Topics whose permission is not "rw": while there is none, a send checks nothing per message.
        self.restricted: set[str] = set()
        self.generation = 0  # the last change of the names (a listing's sorted names stay good until the next)
        for _, raw in store.scan_prefix(Family.META, keys.GROUP_META_PREFIX):  # first: a topic may be a group's own
            self._add_group(GroupConfig(**json.loads(raw)))
        for _, raw in store.scan_prefix(Family.META, keys.TOPIC_META_PREFIX):
            self._add_topic(TopicConfig(**json.loads(raw)))
        next_id = store.get(Family.META, keys.NEXT_ID_KEY)
        self._next_id = keys.decode_u64(next_id) if next_id else 1

    def _add_topic(self, t: TopicConfig) -> None:
        self.topics[t.name] = t
        self.topics_by_id[t.id] = t
        if t.perm != "rw":
            self.restricted.add(t.name)
        if self._of_group(t.name):
            self._of_groups.add(t.name)
        self.generation = next(_CHANGES)

    def _add_group(self, g: GroupConfig) -> None:
        self.groups[g.name] = g
        self.groups_by_id[g.id] = g
        self.generation = next(_CHANGES)

    def _allocate_id(self, batch: Batch) -> int:
        new_id = self._next_id
        self._next_id += 1
        batch.put(Family.META, keys.NEXT_ID_KEY, keys.encode_u64(self._next_id))
        return new_id

    def create_topic(self, name: str, queues: int, types: list[str] | None = None,
                     lite_topic_ttl_s: int = 0) -> TopicConfig:
        check_name("topic", name)
        if name in self.topics:
            raise AlreadyExists(f"topic {name!r} already exists")
        check_queue_count(queues)
        if len(self.topics) - len(self._of_groups) >= self.max_topics and not self._of_group(name):
            raise over_limit(f"cannot create topic {name!r}", "max_topics", self.max_topics,
                             "delete topics (rockmq topic delete) or raise max_topics (rockmq serve --max-topics)")
        batch = self.store.batch()
        if lite_topic_ttl_s < 0:
            raise BrokerError(pb.BAD_REQUEST, f"lite_topic_ttl_s must not be negative, not {lite_topic_ttl_s}")
        topic = TopicConfig(name=name, id=self._allocate_id(batch), queues=queues, message_types=parse_types(types),
                            lite_topic_ttl_s=lite_topic_ttl_s)
        batch.put(Family.META, keys.topic_meta(name), json.dumps(asdict(topic)).encode())
        self.store.write(batch)
        self._add_topic(topic)
        return topic

    def delete_topic(self, name: str) -> TopicConfig:
        topic = self.topic(name)
        batch = self.store.batch()
        batch.delete(Family.META, keys.topic_meta(name))
        prefix = keys.topic_prefix(topic.id)
        for family in (Family.LOG, Family.INDEX, Family.TRACE):  # its messages, their index entries and traces
            batch.delete_range(family, prefix, keys.prefix_end(prefix))
        for lower, upper in keys.lite_topic_ranges(topic.id):  # its lite topics' names
            batch.delete_range(Family.LITE, lower, upper)
        for group in self.groups.values():  # their positions on it: the topic id is never used again
            positions = keys.group_prefix(group.id) + prefix
            batch.delete_range(Family.OFFSETS, positions, keys.prefix_end(positions))
        self.store.write(batch)
        del self.topics[name]
        del self.topics_by_id[topic.id]
        self._of_groups.discard(name)
        self.restricted.discard(name)
        self.generation = next(_CHANGES)
        return topic

    def update_topic(self, topic: TopicConfig, queues: int, perm: str) -> TopicConfig:
        """Store the topic's new queue count and permission (checked by the caller, broker/topic_admin.py)."""
        changed = dataclasses.replace(topic, queues=queues, perm=check_perm(perm))
        batch = self.store.batch()
        batch.put(Family.META, keys.topic_meta(topic.name), json.dumps(asdict(changed)).encode())
        self.store.write(batch)
        topic.queues, topic.perm = changed.queues, changed.perm  # in place: services hold the object
        if topic.perm == "rw":
            self.restricted.discard(topic.name)
        else:
            self.restricted.add(topic.name)
        return topic

    def _of_group(self, name: str) -> bool:
        """A retry or dead-letter topic of an existing group: counted by max_groups, not max_topics."""
        for prefix in (RETRY_PREFIX, DLQ_PREFIX):
            if name.startswith(prefix):
                return name[len(prefix):] in self.groups
        return False

    def topic(self, name: str) -> TopicConfig:
        check_name("topic", name)
        topic = self.topics.get(name)
        if topic is None:
            raise BrokerError(pb.TOPIC_NOT_FOUND, f"topic {name!r} does not exist")
        return topic

    def create_group(self, name: str, fifo: bool, max_attempts: int, consume_mode: str = "",
                     lite_wildcard: bool = False) -> GroupConfig:
        check_name("group", name)
        if name in self.groups:
            raise AlreadyExists(f"group {name!r} already exists")
        _check_group_settings(max_attempts, consume_mode)
        if len(self.groups) >= self.max_groups:
            raise over_limit(f"cannot create group {name!r}", "max_groups", self.max_groups,
                             "raise max_groups (rockmq serve --max-groups)")
        batch = self.store.batch()
        group = GroupConfig(name=name, id=self._allocate_id(batch), fifo=fifo, max_attempts=max_attempts,
                            consume_mode=consume_mode, lite_wildcard=lite_wildcard)
        self._put_group(batch, group)
        self.store.write(batch)
        self._add_group(group)
        return group

    @staticmethod
    def _put_group(batch: Batch, group: GroupConfig) -> None:
        batch.put(Family.META, keys.group_meta(group.name), json.dumps(asdict(group)).encode())

    def update_group(self, group: GroupConfig, fifo: bool, max_attempts: int, consume_mode: str) -> GroupConfig:
        """Store what CreateGroup set, changed (in place: services hold the object)."""
        _check_group_settings(max_attempts, consume_mode)
        changed = dataclasses.replace(group, fifo=fifo, max_attempts=max_attempts, consume_mode=consume_mode)
        batch = self.store.batch()
        self._put_group(batch, changed)
        self.store.write(batch)
        group.fifo, group.max_attempts, group.consume_mode = fifo, max_attempts, consume_mode
        return group

    def delete_group(self, group: GroupConfig) -> None:
        """The group's configuration and what is stored under its id (positions, deliveries,
        retries; its filter registrations are Subscriptions.forget_group's); its id is never used again."""
        batch = self.store.batch()
        batch.delete(Family.META, keys.group_meta(group.name))
        prefix = keys.group_prefix(group.id)
        for family in (Family.OFFSETS, Family.CHECKPOINTS, Family.RETRY):
            batch.delete_range(family, prefix, keys.prefix_end(prefix))
        self.store.write(batch)  # in-flight keys (by deadline) stay: revive drops those of an unknown group
        del self.groups[group.name]
        del self.groups_by_id[group.id]
        self.generation = next(_CHANGES)

    def set_consume_mode(self, group: GroupConfig, mode: str) -> None:
        """Store how the group consumes from now on (broker/consume_mode.py decides)."""
        batch = self.store.batch()
        self._put_group(batch, dataclasses.replace(group, consume_mode=mode))
        self.store.write(batch)
        group.consume_mode = mode

    def group(self, name: str) -> GroupConfig:
        check_name("group", name)
        group = self.groups.get(name)
        if group is None:
            raise BrokerError(pb.CONSUMER_GROUP_NOT_FOUND, f"consumer group {name!r} does not exist")
        return group
