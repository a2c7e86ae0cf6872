"""POP consumption: receive, ack, change of invisible time, forwarding to the dead-letter topic.

State per (group, topic, queue): a pop offset (next entry to hand out; pop/offsets.py). Each look
of a receive at the retries and the queues is a `Take` (pop/take.py), which writes one checkpoint
for the messages it hands out (pop/checkpoints.py, which also verifies receipt handles); ack
settles its entries, ChangeInvisibleDuration moves one. Expired ones come back through the retry
family, served first by the next receive (pop/revive.py). All of it lives in RocksDB: a backlog
of in-flight messages costs no memory.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Sequence
from typing import Protocol, cast

from rockmq.broker.clock import now_ms
from rockmq.broker.commit import Committer
from rockmq.broker.consume_mode import claim, refusal
from rockmq.broker.context import BrokerContext
from rockmq.broker.lanes import Route
from rockmq.broker.lite.subscriptions import LiteSubscriptions
from rockmq.broker.lite.take import LiteTake
from rockmq.broker.metadata import POP, GroupConfig, TopicConfig, check_readable, is_lite
from rockmq.broker.pop.checkpoints import Checkpoints
from rockmq.broker.pop.fifo import FifoLocks, in_order
from rockmq.broker.pop.offsets import PopOffsets
from rockmq.broker.pop.renew import Renewals
from rockmq.broker.pop.revive import Reviver
from rockmq.broker.pop.take import FRAME as FRAME  # re-exported, as Deferred: what receive_deferring returns
from rockmq.broker.pop.take import Deferred as Deferred
from rockmq.broker.pop.take import Take
from rockmq.broker.subscriptions import Subscription, Subscriptions
from rockmq.broker.trace import Event, coalesce
from rockmq.filter.tags import parse_tags
from rockmq.protocol import pb, records, rpc
from rockmq.protocol.errors import BrokerError
from rockmq.protocol.receipt import MAX_ACK_ENTRIES
from rockmq.store.keys import LITE_QUEUE_BASE

log = logging.getLogger(__name__)

BUSY_PAUSE_S = 1.0  # a receive beyond max_waiting_receives is held this long, then answered empty


def _needs_client(client_id: str) -> None:
    if not client_id:
        raise BrokerError(pb.CLIENT_ID_REQUIRED, "a lite consumer's receive needs its x-mq-client-id header")


class Receivers(Protocol):
    """How a consumer's receive is served: its filter and lane routing (broker/clients.py)."""

    def receiver(self, group: str, client_id: str, lane: str, expr: pb.FilterExpression,
                 renewed: bool) -> tuple[pb.FilterExpression, Route | None]: ...


class PopService:
    def __init__(self, ctx: BrokerContext, checkpoints: Checkpoints, fifo: FifoLocks, reviver: Reviver,
                 renewals: Renewals, committer: Committer, subscriptions: Subscriptions, receivers: Receivers,
                 lite: LiteSubscriptions) -> None:
        self.ctx = ctx
        self.lite = lite
        self.receivers = receivers
        self.subscriptions = subscriptions
        self.checkpoints = checkpoints
        self.fifo = fifo
        self.reviver = reviver
        self.renewals = renewals
        self.durable = committer.durable
        self.offsets = PopOffsets(ctx.store, ctx.logs)
        self.waiting = 0
        self._rebuild_fifo_locks()

    # --- state -----------------------------------------------------------------------------

    def _rebuild_fifo_locks(self) -> None:
        """After a restart: the FIFO groups' in-flight and waiting messages hold their queues, and
        every group's hold their lite topics."""
        lite_topics = any(is_lite(t) for t in self.ctx.meta.topics.values())
        for group in self.ctx.meta.groups.values():
            if not group.fifo and not lite_topics:
                continue
            for tid, qid, _ in self.checkpoints.in_flight(group.id):
                if in_order(group.fifo, qid):
                    self.fifo.delivered((group.id, tid, qid), first_time=True)
            for tid, qid, _ in self.reviver.queues_waiting(group.id):
                if in_order(group.fifo, qid):
                    self.fifo.delivered((group.id, tid, qid), first_time=True)
                    self.fifo.revived((group.id, tid, qid))

    def pop_offset(self, group_id: int, topic_id: int, queue_id: int) -> int:
        return self.offsets.get(group_id, topic_id, queue_id)

    def forget_topic(self, topic_id: int) -> None:
        """A deleted topic's positions (its id is never used again)."""
        self.offsets.forget_topic(topic_id)

    def inflight(self, group_id: int) -> dict[tuple[int, int], tuple[int, int]]:
        """A group's deliveries in flight and waiting for redelivery per (topic, queue) -> (how many,
        the lowest offset among them) (admin view, lag)."""
        found: dict[tuple[int, int], tuple[int, int]] = {}
        for tid, qid, offset in itertools.chain(self.checkpoints.in_flight(group_id), self.reviver.queues_waiting(group_id)):
            count, lowest = found.get((tid, qid), (0, offset))
            found[(tid, qid)] = (count + 1, min(lowest, offset))
        return found

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
        self.ctx.refuse_if_draining()
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
        check_readable(topic)
        sub = self.subscriptions.resolve(group, topic, expr)  # a bad expression is refused before it registers
        claim(self.ctx.meta, group, POP, self.ctx.read_only)
        batch_size = min(batch_size or s.receive_batch, s.max_receive_batch)
        if is_lite(topic):
            return await self._receive_lite(group, topic, batch_size, invisible_ms, poll_s, client_id, renew_for,
                                            max_bytes)
        if group.fifo:
            lanes = None
        arrivals = self.ctx.logs.arrivals
        waits_for = None if sub is None or sub.sql else parse_tags(sub.expression)  # SQL92: any arrival may match
        loop = asyncio.get_running_loop()
        until = loop.time() + poll_s
        while True:
            arrival = arrivals.tags(topic.id, waits_for)  # taken before looking: no lost wake-up
            out, advanced = self._receive_once(group, topic, sub, batch_size, invisible_ms, renew_for, lanes, max_bytes,
                                               client_id)
            left = until - loop.time()
            if out or left <= 0 or arrivals.ended:
                return out
            if advanced:  # only filtered-out messages so far: look further at once
                await asyncio.sleep(0)
                continue
            if not await self._wait(arrival, left):
                return out

    async def _wait(self, arrival: asyncio.Event, left: float) -> bool:
        """Wait for an arrival, at most `left` seconds -> False: too many receives wait already (this
        one was held `BUSY_PAUSE_S`, not to spin, and answers what it has)."""
        if self.waiting >= self.ctx.settings.max_waiting_receives:
            await asyncio.sleep(min(left, BUSY_PAUSE_S))
            return False
        self.waiting += 1
        try:
            await self.ctx.logs.arrivals.wait(arrival, left)
        finally:
            self.waiting -= 1
        return True

    def _receive_once(self, group: GroupConfig, topic: TopicConfig, sub: Subscription | None, batch_size: int,
                      invisible_ms: int, renew_for: str | None = None, lanes: Route | None = None,
                      max_bytes: int = 0, client_id: str = "") -> tuple[list[bytes | Deferred], bool]:
        """One look at the retries and the queues (pop/take.py) -> (messages, whether any state
        advanced); past `max_bytes` (if above 0) of framed messages, the rest `Deferred`. What it
        handed out is then due for revive at its deadline, and renewed for `renew_for`."""
        take = Take(self, group, topic, sub, batch_size, invisible_ms, lanes, max_bytes, client_id)
        advanced = take.run()
        self._handed_out(take, group, topic, renew_for)
        return take.out, advanced

    def _handed_out(self, take: Take, group: GroupConfig, topic: TopicConfig, renew_for: str | None) -> None:
        if take.out:
            self.ctx.tally.handed_out(topic.id, group.name, len(take.out), take.size)
            self.reviver.note(take.issue.deadline)
            if renew_for is not None:
                self.renewals.track(renew_for, take.issue.key)

    async def _receive_lite(self, group: GroupConfig, topic: TopicConfig, batch_size: int, invisible_ms: int,
                            poll_s: float, client_id: str, renew_for: str | None,
                            max_bytes: int) -> list[bytes | Deferred]:
        """A lite consumer's receive: whatever queue it named, the lite topics its client holds
        (broker/lite/), waiting for an arrival in one of them (only those wake it)."""
        _needs_client(client_id)
        arrivals = self.ctx.logs.arrivals
        loop = asyncio.get_running_loop()
        until = loop.time() + poll_s
        while True:
            reader = self.lite.reader(client_id, group, topic)
            arrival = reader.looked = arrivals.reader(topic.id, reader.key)  # taken before looking: no lost wake-up
            take = LiteTake(self, group, topic, reader, self.lite.topics, batch_size, invisible_ms, max_bytes, client_id)
            advanced = take.run()
            self._handed_out(take, group, topic, renew_for)
            left = until - loop.time()
            if take.out or left <= 0 or arrivals.ended:
                return take.out
            if advanced:
                await asyncio.sleep(0)
                continue
            if not await self._wait(arrival, left):
                return take.out

    async def watch_lite(self, group: GroupConfig, topic: TopicConfig, client_id: str, poll_s: float) -> None:
        """Wait until a lite consumer's receive here may find something (a message stored in a lite
        topic it holds, one released, a retry made visible: what wakes its receives), at most
        `poll_s`, handing nothing out: how another broker's relay learns of it
        (broker/cluster/lite_relay.py), which looked here just before. Woken since that look (the
        wake-up it took is gone), or with lite topics left to walk, it ends at once."""
        self.ctx.refuse_if_draining()
        _needs_client(client_id)
        reader = self.lite.reader(client_id, group, topic)
        arrival = self.ctx.logs.arrivals.reader(topic.id, reader.key)
        if reader.walk or reader.looked is not None and arrival is not reader.looked:
            return
        await self._wait(arrival, poll_s)

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
        results, acked = self.checkpoints.acknowledge(batch, group.id, topic.id, handles, runs)
        trace = self.ctx.logs.trace
        if trace.enabled:
            trace.ranges(batch, topic.id, coalesce(acked), Event.ACKED, group.id)
        self.ctx.store.write(batch)
        # Only once written: a failed write leaves them in flight, their queues held.
        self._release(group, topic, [queue_id for queue_id, _, _ in acked])
        return results

    def _release(self, group: GroupConfig, topic: TopicConfig, queues: Sequence[int]) -> None:
        """Deliveries of these queues were just settled in the store: for a FIFO group they no longer
        hold their queues, nor lite topics theirs, and waiting receives look again. Right after the
        write, before any await (pop/fifo.py says why)."""
        if not group.fifo and not is_lite(topic):  # nothing holds a queue: an ack of a plain group pays nothing
            return
        held = [q for q in queues if in_order(group.fifo, q)]
        if not held:
            return
        for queue_id in held:
            self.fifo.settled((group.id, topic.id, queue_id), was_inflight=True)
        lite = [q for q in held if q >= LITE_QUEUE_BASE]
        if lite:
            self.lite.released(topic.id, lite)
        if len(lite) < len(held):
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
        self.ctx.logs.trace.event(batch, topic.id, found.queue_id, found.offset, Event.INVISIBLE_CHANGED, group.id,
                                  found.attempt)
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
        try:
            released = self.checkpoints.release(handle, now)
        except ValueError:  # another broker's, passed on by the lite relay (broker/cluster/lite_relay.py)
            return
        if released:
            self.reviver.note(now)

    async def forward_to_dlq(self, group: GroupConfig, topic: TopicConfig, handle: str) -> None:
        found = self.checkpoints.verify(group.id, topic.id, handle)
        batch = self.ctx.store.batch()
        self.checkpoints.settle(batch, [found])
        self.reviver.dead_letter(batch, group, topic, found.queue_id, found.offset, found.attempt)
        self.ctx.store.write(batch)
        # Released before the wait for durability: a call cancelled there (its client went away) or
        # an fsync that failed left the queue held for a delivery the store had settled.
        self._release(group, topic, [found.queue_id])
        await self.durable(batch)
