"""The retry topic's conventions on the client side, pure: how a message pulled from `%RETRY%<group>`
is shown to its handler, the copy of a failed message that goes there, and how long a failure waits
before its next attempt."""

from __future__ import annotations

from collections.abc import Sequence

from rockmq.client.message import Message, ReceivedMessage
from rockmq.protocol.conventions import ORIGIN_MESSAGE_ID, ORIGIN_TOPIC, RECONSUME_TIMES, RETRY_PREFIX, retry_topic

INTERNAL_PROPERTIES = (ORIGIN_TOPIC, ORIGIN_MESSAGE_ID, RECONSUME_TIMES)


def presented(message: ReceivedMessage) -> ReceivedMessage:
    """A pulled message as its handler should see it: from a retry topic, with its first topic and
    id and the delivery attempt counted across send-backs."""
    props = message.properties
    if not message.topic.startswith(RETRY_PREFIX) or ORIGIN_TOPIC not in props:
        return message
    failures = props.get(RECONSUME_TIMES, "0")
    return message.replace(topic=props[ORIGIN_TOPIC], message_id=props.get(ORIGIN_MESSAGE_ID, message.message_id),
                           delivery_attempt=(int(failures) if failures.isdigit() else 0) + 1,
                           properties={k: v for k, v in props.items() if k not in INTERNAL_PROPERTIES})


def send_back_copy(message: ReceivedMessage, group: str, failures: int, delay_ms: int) -> Message:
    """The copy of a failed message that goes to the group's retry topic (the broker decides when
    it is a dead letter instead)."""
    props = dict(message.properties)
    props.update({ORIGIN_TOPIC: message.topic, ORIGIN_MESSAGE_ID: message.message_id, RECONSUME_TIMES: str(failures)})
    return Message(retry_topic(group), message.body, tag=message.tag, keys=message.keys, properties=props, delay=delay_ms)


def backoff_s(ladder: Sequence[float], failures: int) -> float:
    """The wait after a message's `failures`-th failure: its step of the ladder, the last one beyond it."""
    return ladder[min(failures, len(ladder)) - 1]
