"""POP consumption: receive, ack, change of invisible time, forwarding to the dead-letter topic.

State per (group, topic, queue): a pop offset (next entry to hand out) in the offsets family.
Every receive writes one checkpoint for the messages it hands out (pop/checkpoints.py, which also
verifies receipt handles); ack settles its entries, ChangeInvisibleDuration moves one. Expired ones come back through the
retry family, served first by the next receive (pop/revive.py). All of it lives in RocksDB: a
backlog of in-flight messages costs no memory.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import NamedTuple, Protocol, cast

from rockmq.broker.clock import now_ms
from rockmq.broker.commit import Committer
from rockmq.broker.consume_mode import claim, refusal
from rockmq.broker.context import BrokerContext
from rockmq.broker.lanes import Route
from rockmq.broker.metadata import POP, GroupConfig, TopicConfig
from rockmq.broker.pop.checkpoints import Checkpoints
from rockmq.broker.pop.fifo import FifoLocks
from rockmq.broker.pop.renew import Renewals
from rockmq.broker.pop.revive import Reviver
from rockmq.broker.queues import by_offset
from rockmq.broker.subscriptions import Subscription, Subscriptions
from rockmq.filter.record_filter import accept_all
from rockmq.filter.tags import parse_tags
from rockmq.protocol import pb, records, rpc
from rockmq.protocol.errors import BrokerError
from rockmq.protocol.field_keys import ReceivedMessageFields
from rockmq.protocol.receipt import MAX_ACK_ENTRIES
from rockmq.store import keys
from rockmq.store.keys import POPPED
from rockmq.store.schema import Family

log = logging.getLogger(__name__)

# What frames each message handed out: the key of ReceiveMessageResponse.message, which is also
# that of BatchMessaging's ReceiveResponse.messages (consume_replies checks).
FRAME = ReceivedMessageFields.MESSAGE
BUSY_PAUSE_S = 1.0  # a receive beyond max_waiting_receives is held this long, then answered empty


class Receivers(Protocol):
    """How a consumer's receive is served: its filter and lane routing (broker/clients.py)."""

    def receiver(self, group: str, client_id: str, lane: str, expr: pb.FilterExpression,
                 renewed: bool) -> tuple[pb.FilterExpression, Route | None]: ...


class Deferred(NamedTuple):
    """A message a receive handed out but left to frame when its turn to be written comes (`PopService.frame`):
    a stream holds `max_bytes` of framed messages at a time, whatever its batch."""

    queue_id: int
    offset: int
    fields: bytes  # its delivery fields (receipt handle, attempt, invisible time): records.delivery_fields


class PopService:
    def __init__(self, ctx: BrokerContext, checkpoints: Checkpoints, fifo: FifoLocks, reviver: Reviver,
                 renewals: Renewals, committer: Committer, subscriptions: Subscriptions, receivers: Receivers) -> None:
        self.ctx = ctx
        self.receivers = receivers
        self.subscriptions = subscriptions
        self.checkpoints = checkpoints
        self.fifo = fifo
        self.reviver = reviver
        self.renewals = renewals
        self.durable = committer.durable
        self._pop_offsets: dict[tuple[int, int, int], int] = {}
        self._cursor: dict[tuple[int, int], int] = {}
        self.waiting = 0
        self._rebuild_fifo_locks()

    # --- state -----------------------------------------------------------------------------

    def _rebuild_fifo_locks(self) -> None:
        """After a restart: the FIFO groups' in-flight and waiting messages hold their queues."""
        for group in self.ctx.meta.groups.values():
            if not group.fifo:
                continue
            prefix = keys.group_prefix(group.id)
            for tid, qid in self.checkpoints.in_flight(group.id):
                self.fifo.delivered((group.id, tid, qid), first_time=True)
            for key, value in self.ctx.store.scan_prefix(Family.RETRY, prefix):
                gid, tid, _ = keys.parse_retry_key(key)
                qid = keys.parse_retry_value(value)[0]
                self.fifo.delivered((gid, tid, qid), first_time=True)
                self.fifo.revived((gid, tid, qid))

    def pop_offset(self, group_id: int, topic_id: int, queue_id: int) -> int:
        k = (group_id, topic_id, queue_id)
        off = self._pop_offsets.get(k)
        if off is None:
            raw = self.ctx.store.get(Family.OFFSETS, keys.offset_key(group_id, topic_id, queue_id, POPPED))
            # A new group starts at the earliest retained message.
            off = keys.decode_u64(raw) if raw else self.ctx.logs.min_offset(topic_id, queue_id)
            self._pop_offsets[k] = off
        return off

    def forget_topic(self, topic_id: int) -> None:
        """A deleted topic's positions (its id is never used again)."""
        self._pop_offsets = {k: v for k, v in self._pop_offsets.items() if k[1] != topic_id}
        self._cursor = {k: v for k, v in self._cursor.items() if k[1] != topic_id}

    def inflight_count(self, group_id: int) -> dict[tuple[int, int], int]:
        """Checkpoints + waiting redeliveries of a group per (topic, queue) (admin view)."""
        counts: dict[tuple[int, int], int] = {}
        for tid, qid in self.checkpoints.in_flight(group_id):
            counts[(tid, qid)] = counts.get((tid, qid), 0) + 1
        for key, value in self.ctx.store.scan_prefix(Family.RETRY, keys.group_prefix(group_id)):
            tid = keys.parse_retry_key(key)[1]
            qid = keys.parse_retry_value(value)[0]
            counts[(tid, qid)] = counts.get((tid, qid), 0) + 1
        return counts

    # --- receive ---------------------------------------------------------------------------

    async def receive(self, group: GroupConfig, topic: TopicConfig, expr: pb.FilterExpression, batch_size: int,
                      invisible_ms: int | None, poll_s: float, client_id: str = "", lane: str = "",
                      auto_renew: bool = False) -> list[bytes]:
        """`receive_deferring` with every message framed (at most `max_reply_bytes`, plus the last one)."""
        return cast(list[bytes], await self.receive_deferring(group, topic, expr, batch_size, invisible_ms, poll_s,
                                                              client_id, lane, auto_renew))

    async def receive_deferring(self, group: GroupConfig, topic: TopicConfig, expr: pb.FilterExpression,
                                batch_size: int, invisible_ms: int | None, poll_s: float, client_id: str = "",
                                lane: str = "", auto_renew: bool = False,
                                max_bytes: int = 0) -> list[bytes | Deferred]:
        """Hand out up to batch_size messages the group's filter `expr` accepts, waiting up to
        poll_s for the first one. `batch_size` 0: `receive_batch`; above `max_receive_batch`: that
        many; negative: refused (official clients never send less than 1).

        Returns serialized v2 Messages (receipt handle and attempt set), each framed as a reply's
        message field (`FRAME`): ReceiveMessage streams them as they are, Receive joins them. With
        `max_bytes`, those past that many bytes are `Deferred`, framed (`frame`) as they are written:
        one pop and one checkpoint for the batch, but a reply never holds more. With `auto_renew` and no
        invisible time, the broker keeps extending the invisible time while the client is alive.
        A refused receive writes nothing (no mode, no subscription). The client's `lane` (its
        x-rockmq-lane header) decides which lanes' messages it takes (broker/lanes.py; not for FIFO groups).
        """
        if batch_size < 0:
            raise BrokerError(pb.BAD_REQUEST, f"batch_size must not be negative, not {batch_size}")
        renew_for = client_id if auto_renew and invisible_ms is None else None
        expr, lanes = self.receivers.receiver(group.name, client_id, lane, expr, renew_for is not None)
        if invisible_ms is None:
            if renew_for is None:
                raise BrokerError(pb.ILLEGAL_INVISIBLE_TIME, "invisible_duration is required unless auto_renew is set")
            invisible_ms = self.renewals.invisible_ms
        else:
            renew_for = None  # the consumer chose its invisible time: nothing to renew
        s = self.ctx.settings
        if not 0 < invisible_ms <= s.max_invisible_ms:
            raise BrokerError(pb.ILLEGAL_INVISIBLE_TIME,
                              f"invisible duration must be in (0, {s.max_invisible_ms}] ms, not {invisible_ms} ms")
        refused = refusal(group, POP)
        if refused is not None:
            raise refused
        sub = self.subscriptions.resolve(group, topic, expr)  # a bad expression is refused before it registers
        claim(self.ctx.meta, group, POP, self.ctx.read_only)
        batch_size = min(batch_size or s.receive_batch, s.max_receive_batch)
        if group.fifo:
            lanes = None
        arrivals = self.ctx.logs.arrivals
        waits_for = None if sub is None or sub.sql else parse_tags(sub.expression)  # SQL92: any arrival may match
        loop = asyncio.get_running_loop()
        until = loop.time() + poll_s
        while True:
            arrival = arrivals.tags(topic.id, waits_for)  # taken before looking: no lost wake-up
            out, advanced = self._receive_once(group, topic, sub, batch_size, invisible_ms, renew_for, lanes, max_bytes)
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
                await arrivals.wait(arrival, left)
            finally:
                self.waiting -= 1

    def _receive_once(self, group: GroupConfig, topic: TopicConfig, sub: Subscription | None, batch_size: int,
                      invisible_ms: int, renew_for: str | None = None, lanes: Route | None = None,
                      max_bytes: int = 0) -> tuple[list[bytes | Deferred], bool]:
        """One look at the retries and the queues -> (messages, whether any state advanced); past
        `max_bytes` (if above 0) of framed messages, the rest `Deferred`.

        With `lanes`, a message this consumer may not take is left in the retry family for the
        consumers it belongs to (another lane's, or the base lane's): it is neither skipped nor
        handed out twice.

        All of it is one WriteBatch; in-memory state (pop offsets, FIFO locks, renewals)
        follows only once that batch is written.
        """
        ctx = self.ctx
        deadline = now_ms() + invisible_ms
        batch = ctx.store.batch()
        issue = self.checkpoints.issue(group.id, topic.id, deadline)
        out: list[bytes | Deferred] = []
        size = framed = 0
        after: list[Callable[[], None]] = []
        gid, tid = group.id, topic.id
        fifo = self.fifo if group.fifo else None
        accept = sub.accept if sub is not None else accept_all
        max_reply_bytes = ctx.settings.max_reply_bytes
        frame_bytes = max_bytes or max_reply_bytes  # max_reply_bytes: all framed (the batch stops there)
        plain = fifo is None and accept is accept_all and lanes is None  # nothing reads a new message's header

        def full() -> bool:
            return len(out) >= batch_size or size >= max_reply_bytes

        def deliver(qid: int, offset: int, view: records.RecordView, attempt: int) -> None:
            nonlocal size, framed
            fields = records.delivery_fields(issue.add(qid, offset, attempt), attempt, invisible_ms)
            if framed < frame_bytes:
                message = view.message(fields, FRAME)
                out.append(message)
                framed += len(message)
                size += len(message)
            else:
                out.append(Deferred(qid, offset, fields))
                size += len(view.rest) + len(view.system_properties) + len(fields)
            if fifo is not None:
                after.append(partial(fifo.delivered, (gid, tid, qid), first_time=attempt == 1))

        left: list[int] = []

        def leave(qid: int, offset: int) -> None:
            self.reviver.requeue(batch, gid, tid, qid, offset, 0)
            left.append(offset)

        # 1. Messages whose invisible time ran out (or left by another lane) come back first.
        scan = None if fifo else 4 * batch_size if lanes is None else ctx.settings.pop_scan_limit
        retries = list(ctx.store.scan_prefix(Family.RETRY, keys.retry_prefix(gid, tid), scan))
        if fifo is not None:  # per queue, in offset order, only once nothing of the queue is in flight
            retries = [r for r in retries if fifo.redeliverable((gid, tid, keys.parse_retry_value(r[1])[0]))]
            retries.sort(key=lambda r: keys.parse_retry_value(r[1])[:2])
        taken = False
        for key, value in retries:
            if full():
                break
            qid, offset, attempt = keys.parse_retry_value(value)
            record = ctx.logs.read(tid, qid, offset)
            view = records.view(record) if record is not None else None
            if view is not None and lanes is not None and not lanes.takes(view):
                continue  # another lane's: it stays
            batch.delete(Family.RETRY, key)
            taken = True
            if view is None or not accept(view):  # removed by retention, or no longer subscribed
                if fifo is not None:
                    after.append(partial(fifo.settled, (gid, tid, qid), was_inflight=False))
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
                    Family.MATCHES, keys.match_key(gid, tid, qid, begin), keys.match_key(gid, tid, qid, end), room + 1)]
                position = found[room] if len(found) > room else end
                for offset, record in zip(found[:room], ctx.logs.read_many(tid, qid, found[:room])):
                    if full():
                        position = offset
                        break
                    if record is None:  # removed by retention
                        continue
                    view = records.view(record)
                    if lanes is None or lanes.takes(view):
                        deliver(qid, offset, view, 1)
                    else:
                        leave(qid, offset)
            else:  # scan the log and evaluate (no index, or entries written before it)
                position = begin
                run = ctx.logs.scan_keyed(tid, qid, begin, ctx.settings.pop_scan_limit)
                if plain and framed < frame_bytes:  # the run that goes out as it is: framed in one compiled call
                    token, entry = issue.next_entry()
                    offsets: list[int] = []
                    added, stopped = records.frame_run(
                        run, keys.log_offset, token, entry, records.delivery_tail(invisible_ms, 1), FRAME, batch_size - len(out),
                        min(max_reply_bytes - size, frame_bytes - framed), indexed_from, out, offsets)
                    issue.add_run(qid, offsets, 1)
                    size += added
                    framed += added
                    if offsets:
                        position = offsets[-1] + 1
                    if stopped is not None:  # the rest, as below
                        run = itertools.chain((stopped,), run)
                for offset, record in by_offset(run):
                    if len(out) >= batch_size or size >= max_reply_bytes or offset >= indexed_from:  # full(), inline
                        break
                    position = offset + 1
                    view = records.view(record)
                    if not accept(view):  # a filtered-out message counts as consumed
                        continue
                    if lanes is None or lanes.takes(view):
                        deliver(qid, offset, view, 1)
                    else:
                        leave(qid, offset)
            if position != begin:
                positions[(gid, tid, qid)] = position
                batch.put(Family.OFFSETS, keys.offset_key(gid, tid, qid, POPPED), keys.encode_u64(position))
        issue.write(batch)
        ctx.store.write(batch)
        self._pop_offsets.update(positions)
        for apply in after:
            apply()
        if left:  # wake the consumers these are for
            ctx.logs.arrivals.receives(tid)
        if out:
            self.reviver.note(deadline)
            if renew_for is not None:
                self.renewals.track(renew_for, issue.key)
        return out, bool(positions) or taken

    # --- ack, change invisible time, dead letter -------------------------------------------

    def ack(self, group: GroupConfig, topic: TopicConfig, handles: list[str],
            runs: Sequence[tuple[str, Sequence[int]]] = ()) -> list[BrokerError | None]:
        """Acknowledge deliveries, named by their handles and by `runs` ((token, entries): the handles
        of one receive in short); one result per handle, then per entry of the runs (None = OK).
        More than `receipt.MAX_ACK_ENTRIES` in all: BAD_REQUEST, nothing acknowledged."""
        named = len(handles) + sum(len(entries) for _, entries in runs)
        if named > MAX_ACK_ENTRIES:
            raise BrokerError(pb.BAD_REQUEST, f"an ack names at most {MAX_ACK_ENTRIES} deliveries, not {named}: "
                                              "send them in several requests")
        batch = self.ctx.store.batch()
        results, queues = self.checkpoints.acknowledge(batch, group.id, topic.id, handles, runs)
        self.ctx.store.write(batch)
        self._release(group, topic, queues)  # only once written: a failed write leaves them in flight, their queues held
        return results

    def _release(self, group: GroupConfig, topic: TopicConfig, queues: Sequence[int]) -> None:
        """Deliveries of these queues were just settled in the store: for a FIFO group they no longer
        hold their queues, and waiting receives look again. Right after the write, before any await
        (pop/fifo.py says why)."""
        if group.fifo and queues:
            for queue_id in queues:
                self.fifo.settled((group.id, topic.id, queue_id), was_inflight=True)
            self.ctx.logs.arrivals.receives(topic.id)

    def change_invisible(self, group: GroupConfig, topic: TopicConfig, handle: str, invisible_ms: int) -> str:
        """Move a delivery's visibility deadline to now + invisible_ms; returns the new handle."""
        limit = self.ctx.settings.max_invisible_ms
        if not 0 <= invisible_ms <= limit:
            raise BrokerError(pb.ILLEGAL_INVISIBLE_TIME, f"invisible duration must be in [0, {limit}] ms, not {invisible_ms} ms")
        found = self.checkpoints.verify(group.id, topic.id, handle)
        new_deadline = now_ms() + invisible_ms
        batch = self.ctx.store.batch()
        new_handle = self.checkpoints.move(batch, found, new_deadline)
        self.ctx.store.write(batch)
        self.reviver.note(new_deadline)
        return new_handle

    def frame(self, topic: TopicConfig, message: Deferred) -> bytes | None:
        """A deferred message framed as `receive_deferring` frames the others (None: retention removed it
        since; its delivery is settled when it is revived)."""
        record = self.ctx.logs.read(topic.id, message.queue_id, message.offset)
        return None if record is None else records.view(record).message(message.fields, FRAME)

    def release(self, group: GroupConfig, topic: TopicConfig, first: bytes) -> None:
        """The deliveries of a receive (`first`: its first message) whose reply never reached the
        client become visible again at once (and stop being auto-renewed: renewal leaves an expired
        checkpoint to revive)."""
        now = now_ms()
        handle = rpc.ReceiveMessageResponse.FromString(first).message.system_properties.receipt_handle
        if self.checkpoints.release(handle, now):
            self.reviver.note(now)

    async def forward_to_dlq(self, group: GroupConfig, topic: TopicConfig, handle: str) -> None:
        found = self.checkpoints.verify(group.id, topic.id, handle)
        batch = self.ctx.store.batch()
        self.checkpoints.settle(batch, [found])
        self.reviver.dead_letter(batch, group, topic, found.queue_id, found.offset)
        self.ctx.store.write(batch)
        # Released before the wait for durability: a call cancelled there (its client went away) or
        # an fsync that failed left the queue held for a delivery the store had settled.
        self._release(group, topic, [found.queue_id])
        await self.durable(batch)
