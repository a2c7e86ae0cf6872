"""Typed messages, receipts and received messages, and their wire form. Pure, no I/O.

Delays are milliseconds (or a timedelta) and delivery times datetimes with a zone (a naive one is
refused with IllegalArgument: when.py); both reach the wire as a proper Timestamp (seconds and
nanos), never as milliseconds stuffed into the seconds field.

A message gets its id when it is first sent and keeps it: sending the same Message again (alone
or in a batch, say after a BatchSendError or a lost reply) is a retry, which the broker answers
with the first send's receipt and does not store again (within its de-dup window, 10 minutes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from rockmq.client.errors import IllegalArgument
from rockmq.protocol import pb
from rockmq.when import instant_ms


@dataclass
class Message:
    topic: str
    body: bytes
    tag: str | None = None
    keys: Sequence[str] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    message_group: str | None = None  # FIFO: messages of one group are consumed in order
    delay: timedelta | int | None = None  # milliseconds, or a timedelta
    deliver_at: datetime | None = None
    message_id: str | None = field(default=None, compare=False)  # set by the first send

    def due_ms(self, now_ms: int) -> int | None:
        """When the message is due, in ms since the epoch (None: at once)."""
        if self.delay is not None and self.deliver_at is not None:
            raise ValueError("give delay or deliver_at, not both")
        if self.delay is not None:
            ms = self.delay // timedelta(milliseconds=1) if isinstance(self.delay, timedelta) else int(self.delay)
            if ms < 0:
                raise ValueError(f"delay must not be negative, not {ms} ms")
            return now_ms + ms
        if self.deliver_at is not None:
            try:
                return instant_ms(self.deliver_at)
            except ValueError as e:
                raise IllegalArgument(f"deliver_at: {e}", code=pb.ILLEGAL_DELIVERY_TIME) from None
        return None

    @classmethod
    def from_pb(cls, m: pb.Message) -> Message:
        """The message as it was sent (a delayed one keeps its absolute delivery time): how a
        spooled send is handed back to the application."""
        sp = m.system_properties
        deliver_at = (datetime.fromtimestamp(sp.delivery_timestamp.ToMilliseconds() / 1000, UTC)
                      if sp.HasField("delivery_timestamp") else None)
        return cls(topic=m.topic.name, body=m.body, tag=sp.tag if sp.HasField("tag") else None, keys=tuple(sp.keys),
                   properties=dict(m.user_properties),
                   message_group=sp.message_group if sp.HasField("message_group") else None, deliver_at=deliver_at,
                   message_id=sp.message_id or None)

    def to_pb(self, message_id: str, born_host: str, now_ms: int, transactional: bool = False) -> pb.Message:
        m = pb.Message(topic=pb.Resource(name=self.topic), body=self.body, user_properties=dict(self.properties))
        sp = m.system_properties
        sp.message_id = message_id
        sp.born_host = born_host
        sp.born_timestamp.FromMilliseconds(now_ms)
        sp.body_encoding = pb.IDENTITY
        if self.tag is not None:
            sp.tag = self.tag
        sp.keys.extend(self.keys)
        due = self.due_ms(now_ms)
        if self.message_group is not None:
            if due is not None:
                raise ValueError("a FIFO message (message_group) cannot be delayed")
            sp.message_group = self.message_group
        if due is not None:
            sp.delivery_timestamp.FromMilliseconds(due)
        if transactional:
            sp.message_type = pb.TRANSACTION
        elif self.message_group is not None:
            sp.message_type = pb.FIFO
        elif due is not None:
            sp.message_type = pb.DELAY
        else:
            sp.message_type = pb.NORMAL
        return m


@dataclass(frozen=True)
class SendReceipt:
    message_id: str
    topic: str
    broker: str
    offset: int
    transaction_id: str = ""
    recall_handle: str = ""  # delayed messages: cancel with producer.recall(topic, recall_handle)
    spooled: bool = False  # kept in the producer's spool, to be resent (broker "", offset -1)


@dataclass(frozen=True)
class ReceivedMessage:
    topic: str
    body: bytes
    message_id: str
    tag: str | None
    keys: tuple[str, ...]
    properties: dict[str, str]
    message_group: str | None
    queue_id: int
    offset: int
    delivery_attempt: int
    born_ms: int
    store_ms: int
    receipt_handle: str
    broker: str
    endpoint: str  # where to ack it: the broker that handed it out

    @classmethod
    def from_pb(cls, m: pb.Message, broker: str, endpoint: str) -> ReceivedMessage:
        sp = m.system_properties
        return cls(topic=m.topic.name, body=m.body, message_id=sp.message_id,
                   tag=sp.tag if sp.HasField("tag") else None, keys=tuple(sp.keys),
                   properties=dict(m.user_properties),
                   message_group=sp.message_group if sp.HasField("message_group") else None,
                   queue_id=sp.queue_id, offset=sp.queue_offset, delivery_attempt=sp.delivery_attempt or 1,
                   born_ms=sp.born_timestamp.ToMilliseconds(), store_ms=sp.store_timestamp.ToMilliseconds(),
                   receipt_handle=sp.receipt_handle, broker=broker, endpoint=endpoint)
