"""POP consumption: receive, ack, change of invisible time, dead-lettering and revive.

State per (group, topic, queue): a pop offset (next entry to hand out) in the offsets family.
Every message handed out gets a checkpoint: `checkpoints` maps the message to its deadline,
attempt and version (what a receipt handle is checked against), and `inflight` holds the same
checkpoint keyed by deadline. Ack deletes it, ChangeInvisibleDuration moves it (new version,
new handle), auto-renew extends it (same handle). The revive loop sleeps until the earliest
deadline and moves expired checkpoints to the retry family (served first by the next receive,
with delivery_attempt + 1) or, once the group's max attempts were delivered, to
`%DLQ%<group>`. All of it lives in RocksDB: a backlog of in-flight messages costs no memory.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from rockmq.broker.clock import now_ms
from rockmq.broker.commit import Committer
from rockmq.broker.context import BrokerContext
from rockmq.broker.deadlines import DeadlineLoop
from rockmq.broker.errors import BrokerError
from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.broker.pop.fifo import FifoLocks
from rockmq.broker.pop.renew import Renewals
from rockmq.broker.subscriptions import Subscription
from rockmq.filter.record_filter import accept_all
from rockmq.protocol import pb, receipt, records, tokens
from rockmq.store import keys
from rockmq.store.keys import POPPED

log = logging.getLogger(__name__)

MAX_INVISIBLE_MS = 12 * 3600 * 1000
SCAN_LIMIT = 2048  # log entries one receive may skip per queue (filtered out)
REVIVE_BATCH = 1000
MAX_REPLY_BYTES = 16 * 1024 * 1024  # one receive hands out at most this much (at least one message)
BUSY_PAUSE_S = 1.0  # a receive beyond max_waiting_receives is held this long, then answered empty
PARK_MS = 60_000  # a checkpoint revive could not handle is looked at again this much later


class PopService:
    def __init__(self, ctx: BrokerContext, committer: Committer) -> None:
        self.ctx = ctx
        self.commit = committer.commit
        self.fifo = FifoLocks()
        self._pop_offsets: dict[tuple[int, int, int], int] = {}
        self._cursor: dict[tuple[int, int], int] = {}
        self._retry_seq = ctx.sequence_start
        self.reviver = DeadlineLoop("revive", self.revive_due, REVIVE_BATCH)
        self._version = (ctx.epoch << 20) & 0xFFFFFFFF
        self.renewals = Renewals(self, ctx.settings.auto_renew_invisible_ms, ctx.settings.client_silence_s)
        self.waiting = 0
        self._rebuild_fifo_locks()

    # --- state -----------------------------------------------------------------------------

    def _rebuild_fifo_locks(self) -> None:
        """After a restart: the FIFO groups' in-flight and waiting messages hold their queues."""
        for group in self.ctx.meta.groups.values():
            if not group.fifo:
                continue
            prefix = keys.group_prefix(group.id)
            for key, _ in self.ctx.store.scan_prefix("checkpoints", prefix):
                gid, tid, qid, _ = keys.parse_checkpoint_key(key)
                self.fifo.delivered((gid, tid, qid), first_time=True)
            for key, value in self.ctx.store.scan_prefix("retry", prefix):
                gid, tid, _ = keys.parse_retry_key(key)
                qid = keys.parse_retry_value(value)[0]
                self.fifo.delivered((gid, tid, qid), first_time=True)
                self.fifo.revived((gid, tid, qid))

    def pop_offset(self, group_id: int, topic_id: int, queue_id: int) -> int:
        k = (group_id, topic_id, queue_id)
        off = self._pop_offsets.get(k)
        if off is None:
            raw = self.ctx.store.get("offsets", keys.offset_key(group_id, topic_id, queue_id, POPPED))
            # A new group starts at the earliest retained message.
            off = keys.decode_u64(raw) if raw else self.ctx.logs.min_offset(topic_id, queue_id)
            self._pop_offsets[k] = off
        return off

    def inflight_count(self, group_id: int) -> dict[tuple[int, int], int]:
        """Checkpoints + waiting redeliveries of a group per (topic, queue) (admin view)."""
        counts: dict[tuple[int, int], int] = {}
        for key, _ in self.ctx.store.scan_prefix("checkpoints", keys.group_prefix(group_id)):
            _, tid, qid, _ = keys.parse_checkpoint_key(key)
            counts[(tid, qid)] = counts.get((tid, qid), 0) + 1
        for key, value in self.ctx.store.scan_prefix("retry", keys.group_prefix(group_id)):
            tid = keys.parse_retry_key(key)[1]
            qid = keys.parse_retry_value(value)[0]
            counts[(tid, qid)] = counts.get((tid, qid), 0) + 1
        return counts

    # --- receive ---------------------------------------------------------------------------

    async def receive(self, group: GroupConfig, topic: TopicConfig, sub: Subscription | None, batch_size: int,
                      invisible_ms: int, poll_s: float, renew_for: str | None = None) -> list[bytes]:
        """Hand out up to batch_size messages, waiting up to poll_s for the first one. `sub`:
        the group's filtered subscription (None: everything).

        Returns serialized v2 Messages (receipt handle and attempt set). With `renew_for` (a
        client id), the broker keeps extending the invisible time while that client is alive.
        """
        if not 0 < invisible_ms <= MAX_INVISIBLE_MS:
            raise BrokerError(pb.ILLEGAL_INVISIBLE_TIME, f"invisible duration must be in (0, 12 h], not {invisible_ms} ms")
        batch_size = max(1, min(batch_size, 1024))
        loop = asyncio.get_running_loop()
        until = loop.time() + poll_s
        while True:
            arrival = self.ctx.logs.signal(topic.id)  # taken before looking: no lost wake-up
            out, advanced = self._receive_once(group, topic, sub, batch_size, invisible_ms, renew_for)
            left = until - loop.time()
            if out or left <= 0:
                return out
            if advanced:  # only filtered-out messages so far: look further at once
                await asyncio.sleep(0)
                continue
            if self.waiting >= self.ctx.settings.max_waiting_receives:  # hold, but do not spin
                await asyncio.sleep(min(left, BUSY_PAUSE_S))
                return out
            self.waiting += 1
            try:
                await asyncio.wait_for(arrival.wait(), left)
            except TimeoutError:
                pass
            finally:
                self.waiting -= 1

    def _receive_once(self, group: GroupConfig, topic: TopicConfig, sub: Subscription | None, batch_size: int,
                      invisible_ms: int, renew_for: str | None = None) -> tuple[list[bytes], bool]:
        """One look at the retries and the queues -> (messages, whether any state advanced).

        All of it is one WriteBatch; in-memory state (pop offsets, FIFO locks, renewals)
        follows only once that batch is written.
        """
        ctx = self.ctx
        deadline = now_ms() + invisible_ms
        batch = ctx.store.batch()
        out: list[bytes] = []
        size = 0
        after: list[Callable[[], None]] = []
        gid, tid = group.id, topic.id
        fifo = self.fifo if group.fifo else None
        accept = sub.accept if sub is not None else accept_all

        def full() -> bool:
            return len(out) >= batch_size or size >= MAX_REPLY_BYTES

        def deliver(qid: int, offset: int, view: records.RecordView, attempt: int) -> None:
            nonlocal size
            version = self._next_version()
            self._put_checkpoint(batch, gid, tid, qid, offset, deadline, attempt, version)
            handle = receipt.encode(receipt.Receipt(gid, tid, qid, offset, attempt, version), ctx.secret)
            out.append(view.message(records.delivery_fields(handle, attempt, invisible_ms)))
            size += len(out[-1])
            if fifo is not None:
                after.append(lambda k=(gid, tid, qid), first=attempt == 1: fifo.delivered(k, first_time=first))
            if renew_for is not None:
                key = keys.checkpoint_key(gid, tid, qid, offset)
                after.append(lambda k=key, v=version: self.renewals.track(renew_for, k, v))

        # 1. Messages whose invisible time ran out come back first.
        retries = list(ctx.store.scan_prefix("retry", keys.retry_prefix(gid, tid), None if fifo else 4 * batch_size))
        if fifo is not None:  # per queue, in offset order, only once nothing of the queue is in flight
            retries = [r for r in retries if fifo.redeliverable((gid, tid, keys.parse_retry_value(r[1])[0]))]
            retries.sort(key=lambda r: keys.parse_retry_value(r[1])[:2])
        for key, value in retries:
            if full():
                break
            qid, offset, attempt = keys.parse_retry_value(value)
            batch.delete("retry", key)
            record = ctx.logs.read(tid, qid, offset)
            view = records.view(record) if record is not None else None
            if view is None or not accept(view):  # removed by retention, or no longer subscribed
                if fifo is not None:
                    after.append(lambda k=(gid, tid, qid): fifo.settled(k, was_inflight=False))
                continue
            deliver(qid, offset, view, attempt + 1)

        # 2. New messages, rotating fairly over the topic's queues.
        n = topic.queues
        start = self._cursor.get((gid, tid), 0)
        self._cursor[(gid, tid)] = (start + 1) % n
        positions: dict[tuple[int, int, int], int] = {}
        for i in range(n):
            if full():
                break
            qid = (start + i) % n
            if fifo is not None and fifo.held((gid, tid, qid)):
                continue
            begin = self.pop_offset(gid, tid, qid)
            end = ctx.logs.max_offset(tid, qid)
            if begin >= end:
                continue
            indexed_from = sub.indexed_from[qid] if sub is not None else end
            if begin >= indexed_from:  # read the group's matches: every other entry is filtered out
                room = batch_size - len(out)
                found = [keys.match_offset(k) for k, _ in ctx.store.scan(
                    "matches", keys.match_key(gid, tid, qid, begin), keys.match_key(gid, tid, qid, end), room + 1)]
                position = found[room] if len(found) > room else end
                for offset, record in zip(found[:room], ctx.logs.read_many(tid, qid, found[:room])):
                    if full():
                        position = offset
                        break
                    if record is not None:  # else removed by retention
                        deliver(qid, offset, records.view(record), 1)
            else:  # scan the log and evaluate (no index, or entries written before it)
                position = begin
                for offset, record in ctx.logs.scan(tid, qid, begin, SCAN_LIMIT):
                    if full() or offset >= indexed_from:
                        break
                    position = offset + 1
                    view = records.view(record)
                    if accept(view):  # a filtered-out message counts as consumed
                        deliver(qid, offset, view, 1)
            if position != begin:
                positions[(gid, tid, qid)] = position
                batch.put("offsets", keys.offset_key(gid, tid, qid, POPPED), keys.encode_u64(position))
        ctx.store.write(batch)
        self._pop_offsets.update(positions)
        for apply in after:
            apply()
        if out:
            self.reviver.note(deadline)
        return out, bool(positions) or bool(retries)

    # --- checkpoints -----------------------------------------------------------------------

    def _next_version(self) -> int:
        self._version = (self._version + 1) & 0xFFFFFFFF
        return self._version

    @staticmethod
    def _put_checkpoint(batch, gid: int, tid: int, qid: int, offset: int, deadline: int, attempt: int, version: int) -> None:
        batch.put("checkpoints", keys.checkpoint_key(gid, tid, qid, offset), keys.checkpoint_value(deadline, attempt, version))
        batch.put("inflight", keys.inflight_key(deadline, gid, tid, qid, offset), b"")

    @staticmethod
    def _delete_checkpoint(batch, gid: int, tid: int, qid: int, offset: int, deadline: int) -> None:
        batch.delete("checkpoints", keys.checkpoint_key(gid, tid, qid, offset))
        batch.delete("inflight", keys.inflight_key(deadline, gid, tid, qid, offset))

    def _checkpoint(self, group: GroupConfig, topic: TopicConfig, handle: str) -> tuple[receipt.Receipt, int]:
        """The live checkpoint a handle names: -> (receipt, deadline), or INVALID_RECEIPT_HANDLE."""
        found = self._checkpoints(group, topic, [handle])[0]
        if isinstance(found, BrokerError):
            raise found
        return found

    def _checkpoints(self, group: GroupConfig, topic: TopicConfig,
                     handles: list[str]) -> list[tuple[receipt.Receipt, int] | BrokerError]:
        """`_checkpoint` for many handles, with one multi-get."""
        decoded: list[receipt.Receipt | BrokerError] = []
        for handle in handles:
            try:
                r = receipt.decode(handle, self.ctx.secret)
            except (tokens.InvalidToken, ValueError) as e:
                decoded.append(BrokerError(pb.INVALID_RECEIPT_HANDLE, f"malformed receipt handle: {e}"))
                continue
            if r.group_id != group.id or r.topic_id != topic.id:
                decoded.append(BrokerError(pb.INVALID_RECEIPT_HANDLE, "receipt handle belongs to another group or topic"))
            else:
                decoded.append(r)
        valid = [r for r in decoded if not isinstance(r, BrokerError)]
        raws = iter(self.ctx.store.get_many("checkpoints", [
            keys.checkpoint_key(r.group_id, r.topic_id, r.queue_id, r.offset) for r in valid]))
        now = now_ms()
        out: list[tuple[receipt.Receipt, int] | BrokerError] = []
        for r in decoded:
            if isinstance(r, BrokerError):
                out.append(r)
                continue
            raw = next(raws)
            if raw is None:
                out.append(BrokerError(pb.INVALID_RECEIPT_HANDLE,
                                       "receipt handle is stale: the message was acknowledged or redelivered"))
                continue
            deadline, attempt, version = keys.parse_checkpoint_value(raw)
            if (attempt, version) != (r.attempt, r.version):
                out.append(BrokerError(pb.INVALID_RECEIPT_HANDLE,
                                       "receipt handle is stale: a newer one was issued for this message"))
            elif deadline <= now:
                out.append(BrokerError(pb.INVALID_RECEIPT_HANDLE, "receipt handle expired: the invisible time ran out"))
            else:
                out.append((r, deadline))
        return out

    # --- ack, change invisible time, dead letter -------------------------------------------

    def ack(self, group: GroupConfig, topic: TopicConfig, handles: list[str]) -> list[BrokerError | None]:
        """Acknowledge deliveries; one result per handle (None = OK)."""
        batch = self.ctx.store.batch()
        results: list[BrokerError | None] = []
        done: set[tuple[int, int]] = set()
        released = False
        for found in self._checkpoints(group, topic, handles):
            if isinstance(found, BrokerError):
                results.append(found)
                continue
            r, deadline = found
            if (r.queue_id, r.offset) in done:
                results.append(BrokerError(pb.INVALID_RECEIPT_HANDLE, "receipt handle acknowledged twice in one request"))
                continue
            done.add((r.queue_id, r.offset))
            self._delete_checkpoint(batch, group.id, topic.id, r.queue_id, r.offset, deadline)
            if group.fifo:
                self.fifo.settled((group.id, topic.id, r.queue_id), was_inflight=True)
                released = True
            results.append(None)
        self.ctx.store.write(batch)
        if released:
            self.ctx.logs.notify(topic.id)
        return results

    def change_invisible(self, group: GroupConfig, topic: TopicConfig, handle: str, invisible_ms: int) -> str:
        """Move a delivery's visibility deadline to now + invisible_ms; returns the new handle."""
        if not 0 <= invisible_ms <= MAX_INVISIBLE_MS:
            raise BrokerError(pb.ILLEGAL_INVISIBLE_TIME, f"invisible duration must be in [0, 12 h], not {invisible_ms} ms")
        r, deadline = self._checkpoint(group, topic, handle)
        new_deadline = now_ms() + invisible_ms
        batch = self.ctx.store.batch()
        self._delete_checkpoint(batch, r.group_id, r.topic_id, r.queue_id, r.offset, deadline)
        version = self._next_version()
        self._put_checkpoint(batch, r.group_id, r.topic_id, r.queue_id, r.offset, new_deadline, r.attempt, version)
        self.ctx.store.write(batch)
        self.reviver.note(new_deadline)
        return receipt.encode(r._replace(version=version), self.ctx.secret)

    def release(self, group: GroupConfig, topic: TopicConfig, messages: list[bytes]) -> None:
        """Deliveries whose reply never reached the client become visible again at once (and
        stop being auto-renewed: their version changes)."""
        for raw in messages:
            try:
                self.change_invisible(group, topic, pb.Message.FromString(raw).system_properties.receipt_handle, 0)
            except BrokerError:
                pass  # acked or revived meanwhile

    def extend(self, checkpoint_key: bytes, version: int, invisible_ms: int, ahead_ms: int) -> bool:
        """Auto-renew: push a live checkpoint's deadline to now + invisible_ms when it is due
        within ahead_ms. The handle the client holds stays valid. False once the delivery is
        gone or was nacked (ChangeInvisibleDuration gave it a new version)."""
        raw = self.ctx.store.get("checkpoints", checkpoint_key)
        if raw is None:
            return False
        deadline, attempt, current = keys.parse_checkpoint_value(raw)
        if current != version:
            return False
        now = now_ms()
        if deadline <= now:
            return False  # expired already: revive owns it
        if deadline - now > ahead_ms:
            return True
        gid, tid, qid, offset = keys.parse_checkpoint_key(checkpoint_key)
        batch = self.ctx.store.batch()
        self._delete_checkpoint(batch, gid, tid, qid, offset, deadline)
        self._put_checkpoint(batch, gid, tid, qid, offset, now + invisible_ms, attempt, version)
        self.ctx.store.write(batch)
        return True

    async def forward_to_dlq(self, group: GroupConfig, topic: TopicConfig, handle: str) -> None:
        r, deadline = self._checkpoint(group, topic, handle)
        batch = self.ctx.store.batch()
        self._delete_checkpoint(batch, group.id, topic.id, r.queue_id, r.offset, deadline)
        self._dead_letter(batch, group, topic, r.queue_id, r.offset)
        await self.commit(batch)
        if group.fifo:
            self.fifo.settled((group.id, topic.id, r.queue_id), was_inflight=True)
            self.ctx.logs.notify(topic.id)

    def _dead_letter(self, batch, group: GroupConfig, topic: TopicConfig, queue_id: int, offset: int) -> int:
        """Copy a message to the group's dead-letter topic in `batch`; -> bytes copied."""
        record = self.ctx.logs.read(topic.id, queue_id, offset)
        if record is None:  # removed by retention: nothing left to keep
            return 0
        msg = records.decode(record)
        message_id = msg.system_properties.message_id
        msg.system_properties.dead_letter_queue.topic = topic.name
        msg.system_properties.dead_letter_queue.message_id = message_id
        dlq = self.ctx.dlq_topic(group)
        self.ctx.logs.append_record(batch, dlq, 0, self.ctx.logs.seal(dlq, msg))
        log.info("message %s of %s moved to %s", message_id, topic.name, dlq.name)
        return len(record)

    # --- revive ----------------------------------------------------------------------------

    def revive_due(self) -> tuple[int, int | None]:
        """Move up to REVIVE_BATCH expired checkpoints; -> (moved, next deadline or None).

        One entry that cannot be handled is parked for PARK_MS and logged; it never holds up
        the others. In-memory FIFO state changes only once the batch is written.
        """
        ctx = self.ctx
        batch = ctx.store.batch()
        touched: set[int] = set()
        settled: list[Callable[[], None]] = []
        moved = dead_bytes = 0
        now = now_ms()
        for key, _ in self.reviver.due(ctx.store, "inflight", now, REVIVE_BATCH):
            if dead_bytes >= MAX_REPLY_BYTES:  # DLQ copies so far: the rest comes next round
                break
            moved += 1
            deadline, gid, tid, qid, offset = keys.parse_inflight_key(key)
            raw = ctx.store.get("checkpoints", keys.checkpoint_key(gid, tid, qid, offset))
            group, topic = ctx.meta.groups_by_id.get(gid), ctx.meta.topics_by_id.get(tid)
            if group is None or topic is None or raw is None:
                self._delete_checkpoint(batch, gid, tid, qid, offset, deadline)
                continue
            _, attempt, version = keys.parse_checkpoint_value(raw)
            try:
                if attempt >= group.max_attempts:
                    dead_bytes += self._dead_letter(batch, group, topic, qid, offset)
                    if group.fifo:
                        settled.append(lambda k=(gid, tid, qid): self.fifo.settled(k, was_inflight=True))
                else:
                    self._retry_seq += 1
                    batch.put("retry", keys.retry_key(gid, tid, self._retry_seq), keys.retry_value(qid, offset, attempt))
                    if group.fifo:
                        settled.append(lambda k=(gid, tid, qid): self.fifo.revived(k))
            except Exception:
                log.exception("cannot revive %s:%d:%d for group %s; retrying in %d s",
                              topic.name, qid, offset, group.name, PARK_MS // 1000)
                self._delete_checkpoint(batch, gid, tid, qid, offset, deadline)
                self._put_checkpoint(batch, gid, tid, qid, offset, now + PARK_MS, attempt, version)
                continue
            self._delete_checkpoint(batch, gid, tid, qid, offset, deadline)
            touched.add(tid)
        ctx.store.write(batch)
        for apply in settled:
            apply()
        for tid in touched:
            ctx.logs.notify(tid)
        return moved, self.reviver.earliest(ctx.store, "inflight")
