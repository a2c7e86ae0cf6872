"""Names rockmq's broker and client agree on beyond the RocketMQ wire format: a header, message
properties and reserved topic names. Pure constants and helpers, no I/O.

- Environment lanes (docs/client.md): a consumer states its lane in the `x-rockmq-lane` header of
  its heartbeats and receives; a producer in a lane marks its messages with the user property `lane`.
- Queue choice (docs/protocol.md): a client whose SendMessage requests carry the header
  `x-rockmq-queue-choice: client` has chosen each message's queue, and the broker stores it in
  `SystemProperties.queue_id` of the topic on that broker (FIFO messages excepted: their group's
  hash places them). Without the header the broker places messages itself, as Apache RocketMQ's
  proxy does: official clients leave `queue_id` 0 (Python 5.1, Node.js) or fill it (Java).
- Offset-based consumers hand a message whose handler failed back to the broker by sending a copy,
  delayed by the backoff, to the group's retry topic `%RETRY%<group>`, with the properties below.
  The broker turns a copy that has used up the group's attempts into a dead letter instead.
- A message whose delivery failed is delivered again after RETRY_LADDER_S[attempt - 1] seconds
  (the last step repeats), at most DEFAULT_MAX_ATTEMPTS times unless its group says otherwise:
  RocketMQ's schedule, applied by the broker to POP consumers and by offset-based consumers
  themselves.
- A cluster-wide admin call that found nothing because brokers did not answer fails with
  UNAVAILABLE and a message led by BROKER_SAYS_UNREACHABLE, so a client tells it from not
  reaching the broker it asked.
- A replica refuses what it does not serve (writes, POP) with FAILED_PRECONDITION and a message led
  by NOT_THE_PRIMARY, so a client tells "send it to the primary" (retriable elsewhere) from a
  request that no broker would take.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError

MESSAGING_SERVICE = "apache.rocketmq.v2.MessagingService"  # the official clients' service
BATCH_SERVICE = "rockmq.messaging.v1.BatchMessaging"  # rockmq's own batch and Spark calls

LANE_RE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
LANE_HEADER = "x-rockmq-lane"
LANE_GROUP_SEPARATOR = "%LANE%"  # offset-based lane consumers keep their offsets under <group>%LANE%<lane>
LANE_PROPERTY = "lane"
QUEUE_CHOICE_HEADER = "x-rockmq-queue-choice"
CLIENT_CHOOSES = "client"  # its value from a client that chose the queue
# A call one broker makes to another on a client's behalf (a lite message sent to its owner, a lite
# subscription made known): the receiver acts on it here and passes it on to nobody.
FORWARDED_HEADER = "x-rockmq-forwarded"
# On a forwarded ReceiveMessage of a lite consumer: wait until its lite topics here may have a
# message, hand none out (broker/cluster/lite_relay.py).
LITE_WATCH_HEADER = "x-rockmq-lite-watch"


def lite_owner(lite_topic: str, brokers: Sequence[str]) -> str:
    """The broker that holds a lite topic, of the brokers holding its LITE topic (docs/lite-topics.md):
    a stable hash of its name over their names in order, so brokers and rockmq's client agree."""
    ordered = sorted(brokers)
    return ordered[zlib.crc32(lite_topic.encode()) % len(ordered)]

NAME_RE = re.compile(r"^[%a-zA-Z0-9_-]{1,127}$")  # a topic or group name (and what an ACL resource names)
RETRY_PREFIX = "%RETRY%"

DLQ_PREFIX = "%DLQ%"
ORIGIN_TOPIC = "RETRY_TOPIC"  # the topic the message was first sent to
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
RECONSUME_TIMES = "RECONSUME_TIME"  # failed deliveries so far (RocketMQ's property name)
# Where a dead letter came from, on its copy in %DLQ%<group>: what `rockmq dlq resend` sends back.
DLQ_ORIGIN_QUEUE = "DLQ_ORIGIN_QUEUE_ID"
DLQ_ORIGIN_OFFSET = "DLQ_ORIGIN_QUEUE_OFFSET"
DLQ_ATTEMPTS = "DLQ_DELIVERY_ATTEMPTS"  # deliveries to the group before it was dead-lettered
BROKER_SAYS_UNREACHABLE = "brokers did not answer"
NOT_THE_PRIMARY = "this broker is a replica"

RETRY_LADDER_S = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 180.0, 240.0, 300.0, 360.0, 420.0, 480.0, 540.0, 600.0, 1200.0,
                  1800.0, 3600.0, 7200.0)
DEFAULT_MAX_ATTEMPTS = 17


def retry_topic(group: str) -> str:
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_PREFIX + group


def group_of_retry_topic(topic: str) -> str | None:
    return topic[len(RETRY_PREFIX):] if topic.startswith(RETRY_PREFIX) else None


def check_lane(lane: str | None) -> str | None:
    """A lane name as given (None: the base lane), or ValueError."""
    if lane is not None and not LANE_RE.match(lane):
        raise ValueError(f"illegal lane {lane!r}: use 1-32 of [A-Za-z0-9_-]")
    return lane


def lane_group(group: str, lane: str | None) -> str:
    """The group under which an offset-based consumer of a lane keeps its offsets."""
    return group if lane is None else f"{group}{LANE_GROUP_SEPARATOR}{lane}"


def base_group(group: str) -> str:
    """The group a lane group belongs to (a group that is not a lane group: itself)."""
    return group.split(LANE_GROUP_SEPARATOR, 1)[0]


# A group's retry topic %RETRY%<group> and dead-letter topic %DLQ%<group> must be legal topic names.
MAX_GROUP_NAME = 127 - max(len(RETRY_PREFIX), len(DLQ_PREFIX))


def check_name(kind: str, name: str) -> None:
    """Refuse an illegal topic or group name; the refusal quotes at most one character past the
    limit of an overlong one (it is answered, and may be logged)."""
    longest = 127 if kind == "topic" else MAX_GROUP_NAME
    if len(name) > longest or not NAME_RE.match(name or ""):
        code = pb.ILLEGAL_TOPIC if kind == "topic" else pb.ILLEGAL_CONSUMER_GROUP
        raise BrokerError(code, f"illegal {kind} name {name[:longest + 1]!r}: use 1-{longest} of [A-Za-z0-9_%-]")
