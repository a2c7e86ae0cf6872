"""broker/validate.py: the pure checks of a producer's message, against plain dicts of topics and groups."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pytest

from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.broker.validate import (
    MAX_GROUP_BYTES,
    MAX_TAG_BYTES,
    Checked,
    NewTopic,
    check_send,
    check_staged,
    topic_for_write,
    topic_or_new,
)
from rockmq.config import Settings
from rockmq.protocol import pb
from rockmq.protocol.conventions import RECONSUME_TIMES
from rockmq.protocol.errors import BrokerError

NOW = 1_800_000_000_000
SETTINGS = Settings()


@dataclass
class Known:
    topics: dict[str, TopicConfig] = field(default_factory=dict)
    groups: dict[str, GroupConfig] = field(default_factory=dict)


def msg(topic: str = "orders", body: bytes = b"x", **sp: object) -> pb.Message:
    m = pb.Message(topic=pb.Resource(name=topic), body=body)
    m.system_properties.message_id = "01ABC"
    for k, v in sp.items():
        if k == "delivery_ms":
            m.system_properties.delivery_timestamp.FromMilliseconds(int(v))  # type: ignore[call-overload]
        else:
            setattr(m.system_properties, k, v)
    return m


def refused(m: pb.Message, known: Known | None = None, settings: Settings = SETTINGS) -> str:
    with pytest.raises(BrokerError) as e:
        check_send(m, known or Known(), settings, NOW)
    return pb.Code.Name(e.value.code)


def test_a_new_topic_is_planned_not_created():
    assert check_send(msg(), Known(), SETTINGS, NOW) == Checked(NewTopic("orders", SETTINGS.default_queues), "NORMAL")
    orders = TopicConfig("orders", 7, 2)
    assert check_send(msg(), Known({"orders": orders}), SETTINGS, NOW) == Checked(orders, "NORMAL")


def test_a_chosen_queue_must_be_one_of_the_topics_here():
    orders = TopicConfig("orders", 7, 4)
    known = Known({"orders": orders})
    for qid in (0, 3):
        assert check_send(msg(queue_id=qid), known, SETTINGS, NOW, queue_chosen=True) == Checked(orders, "NORMAL")
    for qid in (4, -1):
        with pytest.raises(BrokerError) as e:
            check_send(msg(queue_id=qid), known, SETTINGS, NOW, queue_chosen=True)
        assert e.value.code == pb.BAD_REQUEST and f"queue_id {qid} is not a queue of topic 'orders'" in e.value.message
    assert check_send(msg(queue_id=9), known, SETTINGS, NOW) == Checked(orders, "NORMAL")  # not chosen: not looked at
    new = check_send(msg("fresh", queue_id=SETTINGS.default_queues - 1), Known(), SETTINGS, NOW, queue_chosen=True)
    assert new.target == NewTopic("fresh", SETTINGS.default_queues)  # a topic auto-creation makes: its queues count


def test_dead_letter_topics_take_no_sends_known_or_not():
    dlq = TopicConfig("%DLQ%billing", 3, 1)
    assert refused(msg("%DLQ%billing")) == "FORBIDDEN"
    assert refused(msg("%DLQ%billing"), Known({dlq.name: dlq})) == "FORBIDDEN"
    assert refused(msg("%DLQ%billing", body=b"")) == "FORBIDDEN"  # whatever else is wrong


@pytest.mark.parametrize("m, code", [
    (msg(message_id=""), "ILLEGAL_MESSAGE_ID"),
    (msg("bad topic"), "ILLEGAL_TOPIC"),
    (msg(body=b""), "MESSAGE_BODY_EMPTY"),
    (msg(body=b"x" * (SETTINGS.max_body_size + 1)), "MESSAGE_BODY_TOO_LARGE"),
    (msg(tag="a|b"), "ILLEGAL_MESSAGE_TAG"),
    (msg(tag=" "), "ILLEGAL_MESSAGE_TAG"),
    (msg(message_group=" "), "ILLEGAL_MESSAGE_GROUP"),
    (msg(message_type=pb.FIFO), "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE"),
    (msg(message_type=pb.DELAY), "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE"),
    (msg(delivery_ms=NOW + (SETTINGS.max_delay_s + 1) * 1000), "ILLEGAL_DELIVERY_TIME"),
])
def test_each_rule(m, code):
    assert refused(m) == code


def test_keys_and_properties():
    m = msg()
    m.system_properties.keys.append(" ")
    assert refused(m) == "ILLEGAL_MESSAGE_KEY"
    m = msg()
    m.user_properties[""] = "v"
    assert refused(m) == "ILLEGAL_MESSAGE_PROPERTY_KEY"
    m = msg()
    m.user_properties["k"] = "v" * SETTINGS.max_properties_size
    assert refused(m) == "MESSAGE_PROPERTIES_TOO_LARGE"


def test_a_topic_accepts_only_its_message_types():
    fifo_only = TopicConfig("orders", 7, 2, ["FIFO"])
    assert refused(msg(), Known({"orders": fifo_only})) == "MESSAGE_PROPERTY_CONFLICT_WITH_TYPE"
    assert check_send(msg(message_group="g"), Known({"orders": fifo_only}), SETTINGS, NOW).message_type == "FIFO"


def test_auto_creation_settings():
    no_topics = Settings(auto_create_topics=False)
    assert refused(msg(), settings=no_topics) == "TOPIC_NOT_FOUND"
    # A group's retry topic comes with its group, and has one queue.
    assert topic_or_new("%RETRY%g", Known(), no_topics) == NewTopic("%RETRY%g", 1, "g")
    assert topic_or_new("%RETRY%g", Known(groups={"g": GroupConfig("g", 4)}), no_topics) == NewTopic("%RETRY%g", 1)
    with pytest.raises(BrokerError, match="does not exist"):
        topic_or_new("%RETRY%g", Known(), Settings(auto_create_groups=False))
    # Routing to a dead-letter topic not made yet plans one queue; writing to it is refused.
    assert topic_or_new("%DLQ%g", Known(), SETTINGS) == NewTopic("%DLQ%g", 1)
    with pytest.raises(BrokerError, match="dead-letter"):
        topic_for_write("%DLQ%g", Known(), SETTINGS)


def test_a_spent_send_back_goes_to_the_dead_letter_topic():
    known = Known(groups={"g": GroupConfig("g", 4, max_attempts=3)})
    early = msg("%RETRY%g", delivery_ms=NOW + 1000)
    early.user_properties[RECONSUME_TIMES] = "2"
    assert check_send(early, known, SETTINGS, NOW) == Checked(NewTopic("%RETRY%g", 1), "DELAY")
    spent = msg("%RETRY%g", delivery_ms=NOW + 1000)
    spent.user_properties[RECONSUME_TIMES] = "3"
    assert check_send(spent, known, SETTINGS, NOW) == Checked(NewTopic("%DLQ%g", 1), "NORMAL", dead_letter=True)
    assert spent.system_properties.HasField("delivery_timestamp")  # pure: the message is left as it came
    spent.user_properties[RECONSUME_TIMES] = "many"
    assert refused(spent, known) == "ILLEGAL_MESSAGE_PROPERTY_KEY"


def test_staged_messages():
    m = msg()
    m.system_properties.body_digest.type = pb.SHA1
    m.system_properties.body_digest.checksum = hashlib.sha1(b"x").hexdigest().upper()
    check_staged(m, check_send(m, Known(), SETTINGS, NOW))
    m.system_properties.body_digest.checksum = "0" * 40
    with pytest.raises(BrokerError, match="digest"):
        check_staged(m, check_send(m, Known(), SETTINGS, NOW))
    with pytest.raises(BrokerError, match="transactional"):
        check_staged(m, Checked(NewTopic("orders", 8), "TRANSACTION"))
    back = msg("%RETRY%g")
    with pytest.raises(BrokerError, match="retry topic"):
        check_staged(back, check_send(back, Known(), SETTINGS, NOW))


@pytest.mark.parametrize("field_name, code", [("tag", "ILLEGAL_MESSAGE_TAG"), ("message_group", "ILLEGAL_MESSAGE_GROUP")])
def test_tags_and_groups_are_bounded_in_utf8_bytes(field_name, code):
    """At most MAX_TAG_BYTES / MAX_GROUP_BYTES (1,024) UTF-8 bytes: well within the record's 16-bit lengths."""
    limit = MAX_TAG_BYTES if field_name == "tag" else MAX_GROUP_BYTES
    assert check_send(msg(**{field_name: "é" * (limit // 2)}), Known(), SETTINGS, NOW)
    assert refused(msg(**{field_name: "é" * (limit // 2) + "x"})) == code
    assert refused(msg(**{field_name: "\U0001f600" * (limit // 4 + 1)})) == code
    assert refused(msg(**{field_name: "x" * 70_000})) == code


def test_keys_and_properties_count_together_in_utf8_bytes():
    limit = SETTINGS.max_properties_size
    m = msg()
    m.system_properties.keys.append("k" * (limit // 2))
    m.user_properties["p"] = "é" * (limit // 4 - 1)  # 2 bytes each: limit - 1 bytes in all
    assert check_send(m, Known(), SETTINGS, NOW)
    m.user_properties["qq"] = ""  # two bytes more: one over
    assert refused(m) == "MESSAGE_PROPERTIES_TOO_LARGE"
    many = msg()
    many.system_properties.keys.extend(["k" * 1000] * 17)
    assert refused(many) == "MESSAGE_PROPERTIES_TOO_LARGE"
