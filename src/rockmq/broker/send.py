"""SendMessage: validate, de-duplicate, choose the queue, append durably.

A request's messages go into one WriteBatch (log entries + dedup entries), written at once and
acknowledged after the group-committed fsync. Delayed messages go to the timer service, and
transactional ones to the transaction service as half messages.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from rockmq.broker import validate
from rockmq.broker.clock import now_ms
from rockmq.broker.context import BrokerContext
from rockmq.broker.errors import BrokerError
from rockmq.broker.metadata import TopicConfig
from rockmq.broker.timers import TimerService
from rockmq.broker.transactions import TransactionService
from rockmq.protocol import pb
from rockmq.store import keys


@dataclass(slots=True)
class SendResult:
    code: int
    message: str
    message_id: str
    offset: int = 0
    transaction_id: str = ""
    recall_handle: str = ""


class SendService:
    def __init__(self, ctx: BrokerContext, timers: TimerService, transactions: TransactionService) -> None:
        self.ctx = ctx
        self.timers = timers
        self.transactions = transactions
        self._expired_below: int | None = None  # dedup buckets below this one are dropped

    def _check(self, msg: pb.Message, now: int) -> tuple[TopicConfig, str] | BrokerError:
        """The message's topic (created now if it is new: every check passed) and type, or why not."""
        ctx = self.ctx
        try:
            target, mtype, dead_letter = validate.check_send(msg, ctx.meta, ctx.settings, now)
            topic = ctx.ensure_topic(target)
        except BrokerError as e:
            return e
        if dead_letter:  # due now, whatever the send-back asked
            sp = msg.system_properties
            sp.ClearField("delivery_timestamp")
            sp.message_type = pb.NORMAL
        return topic, mtype

    async def send(self, messages: list[pb.Message]) -> list[SendResult]:
        """Store a request's messages; each gets its own result. Durable when this returns."""
        ctx = self.ctx
        logs = ctx.logs
        now = now_ms()
        bucket = self._bucket(now)
        batch = ctx.store.batch()
        results: list[SendResult] = []
        touched: set[int] = set()
        seen: dict[tuple[int, str], SendResult] = {}
        allocated: dict[tuple[int, int], int] = {}
        checked = [self._check(msg, now) for msg in messages]
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
            due = validate.delivery_ms(sp.delivery_timestamp) if sp.HasField("delivery_timestamp") else 0
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
