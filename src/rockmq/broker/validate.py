"""What a producer's message must be before the broker writes anything (like RocketMQ's GrpcValidator).

Pure: no context, no I/O. The caller passes its settings, the time, and the topics and groups it
knows (the metadata's in-memory maps), and gets back a refusal (BrokerError) or where the message
goes. A topic that auto-creation would make comes back as a `NewTopic`, which the caller creates
only once every message of the request passed: a refused send creates no topic and no group.
SendMessage and Stage (the Spark sink) call the same functions, so a staged message is refused
exactly when a sent one is.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import cython
from google.protobuf.timestamp_pb2 import Timestamp

from rockmq.broker.metadata import MESSAGE_TYPES, PRIORITY, GroupConfig, TopicConfig
from rockmq.config import Settings
from rockmq.protocol import pb
from rockmq.protocol.conventions import DLQ_PREFIX, RECONSUME_TIMES, RETRY_PREFIX, check_name, dlq_topic, group_of_retry_topic
from rockmq.protocol.errors import BrokerError

_TYPE_NAMES: dict[int, str] = {pb.NORMAL: "NORMAL", pb.FIFO: "FIFO", pb.DELAY: "DELAY", pb.TRANSACTION: "TRANSACTION",
                               pb.LITE: "LITE", pb.PRIORITY: "PRIORITY"}
MAX_MESSAGE_ID = 128
# Tags and message groups, in UTF-8 bytes: well under what the stored record's 16-bit length
# fields hold (protocol/records.py), so a message that passes here always seals.
MAX_TAG_BYTES = 1024
MAX_GROUP_BYTES = 1024
GROUP_TOPIC_QUEUES = 1  # a group's retry and dead-letter topics have one queue each
_SPECIAL = os.path.commonprefix([RETRY_PREFIX, DLQ_PREFIX])  # "%": what retry and dead-letter topic names start with


class KnownNames(Protocol):
    """The topics and groups a broker knows, by name (`Metadata` is one)."""

    @property
    def topics(self) -> Mapping[str, TopicConfig]: ...

    @property
    def groups(self) -> Mapping[str, GroupConfig]: ...


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create once every check passed; `group`: a group to create with it (the group
    of a new retry topic, when the group is new too)."""

    name: str
    queues: int
    group: str | None = None
    message_types: tuple[str, ...] = MESSAGE_TYPES


Target = TopicConfig | NewTopic


_new = tuple.__new__


class Checked(NamedTuple):
    """Where a valid message goes. `dead_letter`: a consumer's send-back that used up its group's
    attempts; it goes to the group's dead-letter topic as a NORMAL message, due now."""

    target: Target
    message_type: str
    dead_letter: bool = False


def delivery_ms(ts: Timestamp) -> int:
    return timestamp_ms(ts.seconds, ts.nanos)


def timestamp_ms(seconds: int, nanos: int) -> int:
    """A delivery timestamp in ms. rocketmq-python-client 5.1.x writes milliseconds into the
    seconds field; no real date in seconds exceeds 1e11 (year 5138), so such values are ms."""
    if seconds > 100_000_000_000:
        return seconds + nanos // 1_000_000
    return seconds * 1000 + nanos // 1_000_000


def message_type(code: int, grouped: bool, delayed: bool) -> str:
    """The type a message declares (`message_type`), else the one its fields imply: FIFO with a
    message group, DELAY with a delivery timestamp."""
    return _TYPE_NAMES.get(code) or ("FIFO" if grouped else "DELAY" if delayed else "NORMAL")


def topic_or_new(name: str, known: KnownNames, settings: Settings) -> Target:
    """The named topic, or the one auto-creation would make: a group's retry topic exists once the
    group does (one queue), a dead-letter topic has one queue, any other `default_queues`."""
    topic = known.topics.get(name)
    if topic is not None:
        return topic
    check_name("topic", name)
    group = group_of_retry_topic(name)
    if group is not None:
        if group in known.groups:
            return NewTopic(name, GROUP_TOPIC_QUEUES)
        if settings.auto_create_groups:
            return NewTopic(name, GROUP_TOPIC_QUEUES, group)
        raise BrokerError(pb.CONSUMER_GROUP_NOT_FOUND, f"consumer group {group!r} does not exist")
    if settings.auto_create_topics:
        return NewTopic(name, GROUP_TOPIC_QUEUES if name.startswith(DLQ_PREFIX) else settings.default_queues)
    raise BrokerError(pb.TOPIC_NOT_FOUND, f"topic {name!r} does not exist")


def topic_for_write(name: str, known: KnownNames, settings: Settings) -> Target:
    """The topic a producer's message to `name` is written to: a dead-letter topic takes no sends
    (only the broker writes there), and is refused before anything is looked up or created."""
    if name.startswith(DLQ_PREFIX):
        raise BrokerError(pb.FORBIDDEN, f"topic {name!r} is a dead-letter topic: it takes no sends")
    return topic_or_new(name, known, settings)


def check_request(messages: Sized) -> None:
    """A SendMessage request carries at least one message."""
    if not messages:
        raise BrokerError(pb.BAD_REQUEST, "a SendMessage request needs at least one message")


def check_send(msg: pb.Message, known: KnownNames, settings: Settings, now_ms: int, queue_chosen: bool = False) -> Checked:
    """`check_fields` of a parsed message."""
    sp = msg.system_properties
    return check_fields(msg.topic.name, sp.message_id, sp.queue_id, len(msg.body), sp.tag if sp.HasField("tag") else None,
                        sp.keys, sp.message_group if sp.HasField("message_group") else None, msg.user_properties,
                        delivery_ms(sp.delivery_timestamp) if sp.HasField("delivery_timestamp") else None,
                        sp.message_type, known, settings, now_ms, queue_chosen)


@cython.locals(chars=cython.Py_ssize_t)
def check_fields(name: str, mid: str, queue_id: int, size: int, tag: str | None, keys: Sequence[str], group: str | None,
                 props: Mapping[str, str], due_ms: int | None, type_code: int, known: KnownNames, settings: Settings,
                 now_ms: int, queue_chosen: bool = False) -> Checked:
    """Where a producer's message goes, or a BrokerError naming what is wrong: its topic's `name`,
    message id, the queue its client chose, body size, tag, keys, message group, user properties,
    delivery time and declared type (None: the field is absent). Hot path: a plain message to a
    known topic skips the special-topic rules. SendMessage passes what it read of the request's
    bytes (protocol/send_request.py), Stage a parsed message (`check_send`)."""
    if not mid or len(mid) > MAX_MESSAGE_ID:
        raise BrokerError(pb.ILLEGAL_MESSAGE_ID, f"message_id must be 1-{MAX_MESSAGE_ID} characters")
    target: Target | None = known.topics.get(name)
    special = name.startswith(_SPECIAL)  # a retry or dead-letter topic
    if target is None or special:
        target = topic_for_write(name, known, settings)
    if queue_chosen and not 0 <= queue_id < target.queues:
        raise BrokerError(pb.BAD_REQUEST, f"queue_id {queue_id} is not a queue of topic {name!r} on this broker "
                                          f"(it has {target.queues}: 0-{target.queues - 1}); nothing was stored")
    if not size:
        raise BrokerError(pb.MESSAGE_BODY_EMPTY, "message body is empty")
    if size > settings.max_body_size:
        raise BrokerError(pb.MESSAGE_BODY_TOO_LARGE,
                          f"message body is {size} bytes, over the {settings.max_body_size}-byte limit")
    if tag is not None:
        if not tag.strip() or "|" in tag:
            raise BrokerError(pb.ILLEGAL_MESSAGE_TAG, f"illegal tag {tag[:64]!r}: must be non-blank without '|'")
        if len(tag) * 4 > MAX_TAG_BYTES and utf8_over(tag, MAX_TAG_BYTES):  # short ones are not encoded
            raise BrokerError(pb.ILLEGAL_MESSAGE_TAG, f"tag is over the {MAX_TAG_BYTES}-byte limit")
    if keys and not all(map(str.strip, keys)):  # a blank key strips to ""
        raise BrokerError(pb.ILLEGAL_MESSAGE_KEY, "message keys must not be blank")
    grouped = group is not None
    if group is not None:
        if not group.strip():
            raise BrokerError(pb.ILLEGAL_MESSAGE_GROUP, "message group must not be blank")
        if len(group) * 4 > MAX_GROUP_BYTES and utf8_over(group, MAX_GROUP_BYTES):
            raise BrokerError(pb.ILLEGAL_MESSAGE_GROUP, f"message group is over the {MAX_GROUP_BYTES}-byte limit")
    if keys or props:
        chars = 0  # a C integer compiled: no Python ints made
        for text in keys:
            chars += len(text)
        for text in props:
            chars += len(text)
        for text in props.values():
            chars += len(text)
        if chars * 4 > settings.max_properties_size:  # else under the limit however they encode
            check_properties_size(chars, keys, props, settings.max_properties_size)
        if "" in props:
            raise BrokerError(pb.ILLEGAL_MESSAGE_PROPERTY_KEY, "user property keys must not be empty")
    delayed = due_ms is not None
    mtype = message_type(type_code, grouped, delayed)
    if mtype not in target.message_types:
        raise BrokerError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                          f"topic {name!r} does not accept {mtype} messages (accepts {', '.join(target.message_types)})")
    if mtype == "FIFO" and not grouped:
        raise BrokerError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "a FIFO message needs a message group")
    if mtype == "DELAY" and not delayed:
        raise BrokerError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "a DELAY message needs a delivery timestamp")
    if due_ms is not None and (due_ms < 0 or due_ms - now_ms > settings.max_delay_s * 1000):  # < 0: stored unsigned
        raise BrokerError(pb.ILLEGAL_DELIVERY_TIME, "delivery time is before 1970" if due_ms < 0 else
                          f"delivery time is more than the maximum delay ({settings.max_delay_s} s) away")
    if special:
        retry_group = group_of_retry_topic(name)
        if retry_group is not None:
            return _dead_letter_if_spent(props, retry_group, target, mtype, known, settings)
    return _new(Checked, (target, mtype, False))  # without NamedTuple's Python-level __new__: SendMessage's every message


def check_priority(priority: int | None, mtype: str, grouped: bool, delayed: bool, topic: TopicConfig) -> int:
    """The level a message takes on `topic` (docs/priority.md), or a BrokerError: only PRIORITY
    messages (to PRIORITY topics: `check_fields` matched the type) have a priority, 0..max_priority,
    never with a message group or a delivery time. One without a priority gets 0, the lowest: a
    message that says nothing never overtakes those that asked for a place. SendMessage calls it
    only for a message with a priority or of type PRIORITY, so plain sends never come here."""
    if mtype != PRIORITY:
        raise BrokerError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                          f"a {mtype} message has no priority: priorities are for PRIORITY messages to PRIORITY topics "
                          f"(topic {topic.name!r} accepts {', '.join(topic.message_types)})")
    if grouped or delayed:
        raise BrokerError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                          f"a PRIORITY message cannot have a {'message group' if grouped else 'delivery time'}")
    if priority is None:
        return 0
    if not 0 <= priority <= topic.max_priority:
        raise BrokerError(pb.BAD_REQUEST, f"priority must be 0..{topic.max_priority}, not {priority} "
                                          f"(topic {topic.name!r})")
    return priority


def utf8_over(text: str, limit: int) -> bool:
    """Whether `text` is over `limit` bytes as UTF-8 (a character is 1-4 bytes: encoded only when
    its length leaves that in doubt)."""
    return len(text) > limit or len(text.encode()) > limit


def check_properties_size(chars: int, keys: Sequence[str], props: Mapping[str, str], limit: int) -> None:
    """Keys and user properties together (`chars` characters) are at most `limit` UTF-8 bytes
    (RocketMQ's proxy bounds them apart from the body)."""
    if chars > limit or sum(len(t.encode()) for t in (*keys, *props, *props.values())) > limit:
        raise BrokerError(pb.MESSAGE_PROPERTIES_TOO_LARGE, f"message keys and user properties are over the "
                                                           f"{limit}-byte limit (max_properties_size)")


def _dead_letter_if_spent(props: Mapping[str, str], group: str, target: Target, mtype: str, known: KnownNames,
                          settings: Settings) -> Checked:
    """A consumer's send-back to its group's retry topic that has used up the group's attempts
    goes to the dead-letter topic instead, at once: the group's max_attempts is decided here."""
    raw = props.get(RECONSUME_TIMES, "0")
    if not raw.isdigit():
        raise BrokerError(pb.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property {RECONSUME_TIMES} must be a count, not {raw!r}")
    config = known.groups.get(group)
    max_attempts = config.max_attempts if config is not None else settings.max_attempts
    if int(raw) < max_attempts:
        return Checked(target, mtype)
    return Checked(dead_letter_topic(group, known), "NORMAL", dead_letter=True)


def dead_letter_topic(group: str, known: KnownNames) -> Target:
    """Where the group's dead letters go (a send-back out of attempts, a message revived once too often)."""
    name = dlq_topic(group)
    return known.topics.get(name) or NewTopic(name, GROUP_TOPIC_QUEUES)


def check_staged(msg: pb.Message, checked: Checked) -> None:
    """What a staged message (the Spark sink) must be besides a valid send: not transactional, not
    a send-back, its body digest right, and no placement fields (those are the broker's)."""
    sp = msg.system_properties
    if checked.message_type == "TRANSACTION":
        raise BrokerError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "transactional messages cannot be staged")
    if checked.message_type == PRIORITY or sp.HasField("priority"):  # publishing places by the broker's rotation
        raise BrokerError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "priority messages cannot be staged: send them")
    if group_of_retry_topic(msg.topic.name) is not None:
        raise BrokerError(pb.FORBIDDEN, f"topic {msg.topic.name!r} is a retry topic: it takes no staged writes")
    digest = sp.body_digest
    if digest.type != pb.SHA1 or digest.checksum != hashlib.sha1(msg.body).hexdigest().upper():
        raise BrokerError(pb.MESSAGE_CORRUPTED, "the body's SHA1 digest is missing or wrong")
    if sp.HasField("store_timestamp") or sp.HasField("queue_offset") or sp.queue_id:
        raise BrokerError(pb.BAD_REQUEST, "queue_id, queue_offset and store_timestamp are the broker's to set")
