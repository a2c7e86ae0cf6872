"""SendMessage: validate, de-duplicate, choose the queue, append durably.

A request's messages go into one WriteBatch (log entries + dedup entries), written at once and
acknowledged after the group-committed fsync. Delayed messages go to the timer service, and
transactional ones to the transaction service as half messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rockmq.broker.clock import now_ms
from rockmq.broker.context import BrokerContext
from rockmq.broker.errors import BrokerError
from rockmq.broker.metadata import TopicConfig
from rockmq.broker.timers import TimerService
from rockmq.broker.transactions import TransactionService
from rockmq.protocol import pb
from rockmq.protocol.conventions import DLQ_PREFIX, RECONSUME_TIMES, RETRY_PREFIX
from rockmq.store import keys

_TYPE_NAMES = {pb.NORMAL: "NORMAL", pb.FIFO: "FIFO", pb.DELAY: "DELAY", pb.TRANSACTION: "TRANSACTION"}


@dataclass(slots=True)
class SendResult:
    code: int
    message: str
    message_id: str
    offset: int = 0
    transaction_id: str = ""
    recall_handle: str = ""


def delivery_ms(ts) -> int:
    """A delivery timestamp in ms. rocketmq-python-client 5.1.x writes milliseconds into the
    seconds field; no real date in seconds exceeds 1e11 (year 5138), so such values are ms."""
    if ts.seconds > 100_000_000_000:
        return ts.seconds + ts.nanos // 1_000_000
    return ts.seconds * 1000 + ts.nanos // 1_000_000


def message_type(sp: pb.SystemProperties) -> str:
    if sp.message_type in _TYPE_NAMES:
        return _TYPE_NAMES[sp.message_type]
    if sp.HasField("message_group"):
        return "FIFO"
    if sp.HasField("delivery_timestamp"):
        return "DELAY"
    return "NORMAL"


class SendService:
    def __init__(self, ctx: BrokerContext, timers: TimerService, transactions: TransactionService) -> None:
        self.ctx = ctx
        self.timers = timers
        self.transactions = transactions
        self._expired_below: int | None = None  # dedup buckets below this one are dropped

    def _validate(self, msg: pb.Message, topics: dict[str, TopicConfig]) -> tuple[TopicConfig, str]:
        """The message's topic and type, or a BrokerError naming what is wrong. Hot path."""
        s = self.ctx.settings
        sp = msg.system_properties
        mid = sp.message_id
        if not mid or len(mid) > 128:
            raise BrokerError(pb.ILLEGAL_MESSAGE_ID, "message_id must be 1-128 characters")
        name = msg.topic.name
        topic = topics.get(name)
        if topic is None:
            topic = topics[name] = self.ctx.topic_for_write(name)
            if name.startswith(DLQ_PREFIX):
                raise BrokerError(pb.FORBIDDEN, f"topic {name!r} is a dead-letter topic: it takes no sends")
        size = len(msg.body)
        if not size:
            raise BrokerError(pb.MESSAGE_BODY_EMPTY, "message body is empty")
        if size > s.max_body_size:
            raise BrokerError(pb.MESSAGE_BODY_TOO_LARGE, f"message body is {size} bytes, over the {s.max_body_size}-byte limit")
        if sp.HasField("tag") and (not sp.tag.strip() or "|" in sp.tag):
            raise BrokerError(pb.ILLEGAL_MESSAGE_TAG, f"illegal tag {sp.tag!r}: must be non-blank without '|'")
        if sp.keys and any(not k.strip() for k in sp.keys):
            raise BrokerError(pb.ILLEGAL_MESSAGE_KEY, "message keys must not be blank")
        grouped = sp.HasField("message_group")
        if grouped and not sp.message_group.strip():
            raise BrokerError(pb.ILLEGAL_MESSAGE_GROUP, "message group must not be blank")
        props = msg.user_properties
        if props:
            if sum(len(k) + len(v) for k, v in props.items()) > s.max_properties_size:
                raise BrokerError(pb.MESSAGE_PROPERTIES_TOO_LARGE,
                                  f"user properties are over the {s.max_properties_size}-byte limit")
            if "" in props:
                raise BrokerError(pb.ILLEGAL_MESSAGE_PROPERTY_KEY, "user property keys must not be empty")
        mtype = message_type(sp)
        if mtype not in topic.message_types:
            raise BrokerError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                              f"topic {name!r} does not accept {mtype} messages (accepts {', '.join(topic.message_types)})")
        if mtype == "FIFO" and not grouped:
            raise BrokerError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "a FIFO message needs a message group")
        delayed = sp.HasField("delivery_timestamp")
        if mtype == "DELAY" and not delayed:
            raise BrokerError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "a DELAY message needs a delivery timestamp")
        if delayed and delivery_ms(sp.delivery_timestamp) - now_ms() > s.max_delay_s * 1000:
            raise BrokerError(pb.ILLEGAL_DELIVERY_TIME, f"delivery time is more than the maximum delay ({s.max_delay_s} s) away")
        if name.startswith(RETRY_PREFIX):
            return self._dead_letter_if_spent(msg, topic, mtype)
        return topic, mtype

    def _dead_letter_if_spent(self, msg: pb.Message, topic: TopicConfig, mtype: str) -> tuple[TopicConfig, str]:
        """A consumer's send-back that has used up the group's attempts goes to the dead-letter
        topic instead of the retry topic, at once: the group's max_attempts is decided here."""
        group = self.ctx.group_for(topic.name[len(RETRY_PREFIX):])
        raw = msg.user_properties.get(RECONSUME_TIMES, "0")
        if not raw.isdigit():
            raise BrokerError(pb.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property {RECONSUME_TIMES} must be a count, not {raw!r}")
        if int(raw) < group.max_attempts:
            return topic, mtype
        sp = msg.system_properties
        sp.ClearField("delivery_timestamp")
        sp.message_type = pb.NORMAL
        return self.ctx.dlq_topic(group), "NORMAL"

    async def send(self, messages: list[pb.Message]) -> list[SendResult]:
        """Store a request's messages; each gets its own result. Durable when this returns."""
        ctx = self.ctx
        logs = ctx.logs
        now = now_ms()
        bucket = self._bucket(now)
        batch = ctx.store.batch()
        results: list[SendResult] = []
        topics: dict[str, TopicConfig] = {}
        touched: set[int] = set()
        seen: dict[tuple[int, str], SendResult] = {}
        allocated: dict[tuple[int, int], int] = {}
        checked: list[tuple[TopicConfig, str] | BrokerError] = []
        for msg in messages:
            try:
                checked.append(self._validate(msg, topics))
            except BrokerError as e:
                checked.append(e)
        stored = self._dedup_lookups(bucket, [(c[0].id, m.system_properties.message_id)
                                              for m, c in zip(messages, checked, strict=True) if isinstance(c, tuple)])
        for msg, check in zip(messages, checked, strict=True):
            sp = msg.system_properties
            mid = sp.message_id
            if isinstance(check, BrokerError):
                results.append(SendResult(check.code, check.message, mid))
                continue
            topic, mtype = check
            previous = next(stored)
            earlier = seen.get((topic.id, mid))
            if earlier is not None:
                results.append(earlier)
                continue
            if previous is not None:  # a client retry of a message we already stored
                _, offset, txn_id, recall = keys.parse_dedup_value(previous)
                results.append(SendResult(pb.OK, "OK", mid, offset, txn_id, recall))
                continue
            result = SendResult(pb.OK, "OK", mid)
            queue_id = -1
            due = delivery_ms(sp.delivery_timestamp) if sp.HasField("delivery_timestamp") else 0
            if mtype == "TRANSACTION":
                result.transaction_id = self.transactions.prepare(batch, topic, msg, due)
            elif due > now:
                result.recall_handle = self.timers.schedule(batch, topic, msg, due)
            else:
                queue_id = logs.choose_queue(topic, sp.message_group if sp.HasField("message_group") else None)
                result.offset = logs.append_record(batch, topic, queue_id, logs.seal(topic, msg), now, msg.user_properties,
                                                   allocated)
                touched.add(topic.id)
            batch.put("dedup", keys.dedup_key(bucket, topic.id, mid),
                      keys.dedup_value(queue_id & 0xFFFFFFFF, result.offset, result.transaction_id, result.recall_handle))
            seen[(topic.id, mid)] = result
            results.append(result)
        logs.write_appends(batch, allocated, touched)
        # Written entries stay whatever the fsync says (a retry must find them, not a reused
        # offset); a failed fsync fails these sends. Even a request that was all duplicates
        # waits for the fsync covering the originals.
        if ctx.settings.flush == "sync":
            await ctx.store.sync()
        if ctx.settings.replication == "sync" and ctx.replicator is not None:
            await ctx.replicator.confirm(batch.seq)
        return results

    # --- de-duplication: entries live in buckets one window long; the last two are checked --

    def _bucket(self, ms: int) -> int:
        return ms // (self.ctx.settings.dedup_window_s * 1000)

    def _dedup_lookups(self, bucket: int, ids: list[tuple[int, str]]) -> Iterator[bytes | None]:
        """For each (topic id, message id), its stored position if it was sent in this window or
        the last; one multi-get for the whole request."""
        found = self.ctx.store.get_many("dedup", [keys.dedup_key(b, tid, mid) for tid, mid in ids for b in (bucket, bucket - 1)])
        return (found[i] or found[i + 1] for i in range(0, len(found), 2))

    def expire_dedup(self) -> bool:
        """Drop buckets older than the last window: one range tombstone each time a bucket ends
        (every lookup pays for the tombstones it must skip, so never write one twice)."""
        oldest_kept = self._bucket(now_ms()) - 1
        if oldest_kept == self._expired_below:
            return False
        batch = self.ctx.store.batch()
        batch.delete_range("dedup", b"", keys.dedup_bucket_start(oldest_kept))
        self.ctx.store.write(batch)
        self._expired_below = oldest_kept
        return True
