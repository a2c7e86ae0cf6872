"""Typed messages, receipts and received messages, and their wire form. Pure, no I/O.

Delays are milliseconds (or a timedelta) and delivery times datetimes with a zone (a naive one is
refused with IllegalArgument: when.py); both reach the wire as a proper Timestamp (seconds and
nanos), never as milliseconds stuffed into the seconds field.

A message with `lite_topic` goes to that lite topic of its LITE parent `topic` (message type
LITE); the protocol forbids it together with a message group, a delivery time or a priority,
and a transactional send: refused with IllegalArgument before anything is sent.

A message gets its id when it is first sent and keeps it: sending the same Message again (alone
or in a batch, say after a BatchSendError or a lost reply) is a retry, which the broker answers
with the first send's receipt and does not store again (within its de-dup window, 10 minutes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import FrozenInstanceError, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

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
    lite_topic: str | None = None  # a lite topic of the LITE topic `topic` (docs/client.md "Lite topics")
    priority: int | None = None  # to a PRIORITY topic: 0..its max_priority, higher goes first (docs/priority.md)

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
                   message_id=sp.message_id or None, lite_topic=sp.lite_topic if sp.HasField("lite_topic") else None,
                   priority=sp.priority if sp.HasField("priority") else None)

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
        if self.lite_topic is not None:
            self._check_lite(due, transactional)
            sp.lite_topic = self.lite_topic
            sp.message_type = pb.LITE
        elif self.priority is not None:
            if transactional or self.message_group is not None or due is not None:
                raise ValueError("a PRIORITY message (priority) cannot be transactional, FIFO or delayed")
            sp.priority = self.priority
            sp.message_type = pb.PRIORITY
        elif transactional:
            sp.message_type = pb.TRANSACTION
        elif self.message_group is not None:
            sp.message_type = pb.FIFO
        elif due is not None:
            sp.message_type = pb.DELAY
        else:
            sp.message_type = pb.NORMAL
        return m

    def _check_lite(self, due: int | None, transactional: bool) -> None:
        """What a lite message may not carry (the protocol's rule, as the broker applies it)."""
        clash = ("a message group" if self.message_group is not None else "a delivery time" if due is not None
                 else "a priority" if self.priority is not None else "a transaction" if transactional else None)
        if clash is not None:
            raise IllegalArgument(f"a message to lite topic {self.lite_topic!r} cannot have {clash}",
                                  code=pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE)


@dataclass(frozen=True)
class SendReceipt:
    message_id: str
    topic: str
    broker: str
    offset: int
    transaction_id: str = ""
    recall_handle: str = ""  # delayed messages: cancel with producer.recall(topic, recall_handle)
    spooled: bool = False  # kept in the producer's spool, to be resent (broker "", offset -1)
    queue_id: int = -1  # the broker's queue it was written to (-1: spooled, or a PRIORITY message: docs/priority.md)


def _ms(t: Timestamp) -> int:
    """Timestamp.ToMilliseconds without its checks (a third of the cost: the broker wrote it)."""
    ms: int = t.seconds * 1000 + t.nanos // 1_000_000
    return ms


# How each field of a received message is read from its wire form, when first asked for.
_DECODE: dict[str, Callable[[pb.Message], object]] = {
    "topic": lambda m: m.topic.name,
    "body": lambda m: m.body,
    "message_id": lambda m: m.system_properties.message_id,
    "tag": lambda m: m.system_properties.tag if m.system_properties.HasField("tag") else None,
    "keys": lambda m: tuple(m.system_properties.keys),
    "properties": lambda m: dict(m.user_properties),
    "message_group": lambda m: m.system_properties.message_group if m.system_properties.HasField("message_group") else None,
    "queue_id": lambda m: m.system_properties.queue_id,
    "offset": lambda m: m.system_properties.queue_offset,
    "delivery_attempt": lambda m: m.system_properties.delivery_attempt or 1,
    "born_ms": lambda m: _ms(m.system_properties.born_timestamp),
    "store_ms": lambda m: _ms(m.system_properties.store_timestamp),
    "receipt_handle": lambda m: m.system_properties.receipt_handle,
    "lite_topic": lambda m: m.system_properties.lite_topic if m.system_properties.HasField("lite_topic") else None,
    "priority": lambda m: m.system_properties.priority if m.system_properties.HasField("priority") else None,
}


class ReceivedMessage:
    """A received message: immutable (FrozenInstanceError on assignment), equal when its fields
    are, picklable; `replace(**changes)` makes a changed copy. One received off the wire decodes a
    field when it is first read (a consumer that only acks pays for its topic and receipt handle alone):
    building 15 fields eagerly cost ~5 µs per message, the bound of a consuming loop."""

    FIELDS = ("topic", "body", "message_id", "tag", "keys", "properties", "message_group", "queue_id", "offset",
              "delivery_attempt", "born_ms", "store_ms", "receipt_handle", "broker", "endpoint", "lite_topic",
              "priority")
    __slots__ = (*FIELDS, "_wire")

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
    lite_topic: str | None  # the lite topic of a LITE topic it came from (acks name it)
    priority: int | None  # a PRIORITY message's (None: it has none)
    _wire: pb.Message | None

    def __init__(self, topic: str, body: bytes, message_id: str, tag: str | None, keys: tuple[str, ...],
                 properties: dict[str, str], message_group: str | None, queue_id: int, offset: int, delivery_attempt: int,
                 born_ms: int, store_ms: int, receipt_handle: str, broker: str, endpoint: str,
                 lite_topic: str | None = None, priority: int | None = None) -> None:
        values = (topic, body, message_id, tag, keys, properties, message_group, queue_id, offset, delivery_attempt,
                  born_ms, store_ms, receipt_handle, broker, endpoint, lite_topic, priority)
        for name, value in zip(self.FIELDS, values, strict=True):
            _set(self, name, value)
        _set(self, "_wire", None)

    @classmethod
    def from_pb(cls, m: pb.Message, broker: str, endpoint: str) -> ReceivedMessage:
        return cls.many((m,), m.topic.name, broker, endpoint)[0]

    @classmethod
    def many(cls, wire: Iterable[pb.Message], topic: str, broker: str, endpoint: str) -> list[ReceivedMessage]:
        """`from_pb` of a reply's messages, all stored in `topic` (a receive's or pull's, which
        is also what their acks name). Only what an ack needs is read at once; the slots are
        set through their descriptors (measured: 0.59 µs per message, against 1.5 for a parse
        and a from_pb each)."""
        out = []
        for m in wire:
            self = _new(cls)
            _set_wire(self, m)
            _set_broker(self, broker)
            _set_endpoint(self, endpoint)
            _set_topic(self, topic)
            _set_handle(self, m.system_properties.receipt_handle)
            out.append(self)
        return out

    def __getattr__(self, name: str) -> object:
        """A field not read yet: decoded from the wire form now, and kept."""
        decode = _DECODE.get(name)
        wire = _get_wire(self)
        if decode is None or wire is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = decode(wire)
        _set(self, name, value)
        return value

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def replace(self, **changes: Any) -> ReceivedMessage:
        """A copy with some fields changed (like dataclasses.replace)."""
        unknown = changes.keys() - set(self.FIELDS)
        if unknown:
            raise TypeError(f"ReceivedMessage has no field {sorted(unknown)[0]!r}")
        return ReceivedMessage(**{name: changes.get(name, getattr(self, name)) for name in self.FIELDS})

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"ReceivedMessage({', '.join(f'{name}={getattr(self, name)!r}' for name in self.FIELDS)})"

    def __reduce__(self) -> tuple[type[ReceivedMessage], tuple[object, ...]]:
        return ReceivedMessage, self._values()


_new = object.__new__
_set = object.__setattr__
_get_wire: Callable[[ReceivedMessage], pb.Message | None] = ReceivedMessage.__dict__["_wire"].__get__
_set_wire, _set_broker, _set_endpoint, _set_topic, _set_handle = (
    ReceivedMessage.__dict__[name].__set__ for name in ("_wire", "broker", "endpoint", "topic", "receipt_handle"))
