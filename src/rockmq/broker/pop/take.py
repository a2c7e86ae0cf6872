"""One look of a POP receive at a group's retries and queues: the messages it hands out (`Take`).

A receive (`PopService.receive_deferring`) looks until it finds messages or its poll ends; each
look is one `Take`, whose steps run in this order:

1. `retried`: deliveries whose invisible time ran out, and messages another lane's consumer left,
   come back first; for a FIFO group only those of queues with nothing in flight, per queue in
   offset order;
2. `new`: new messages, rotating over the topic's queues from each one's pop offset (a FIFO-held
   queue hands out none): through the group's match index (`matched`), or by scanning the log and
   evaluating the filter (`scanned`), the run no filter, lane or FIFO rule reads framed in one
   compiled call (`framed_run`);
3. `write`: the checkpoint of what went out, the retries taken and the pop offsets advanced, one
   WriteBatch, each family through its one owner (pop/checkpoints.py, pop/revive.py,
   pop/offsets.py); in-memory state (pop offsets, FIFO locks) follows only once it is written.

With lanes, a message this consumer may not take is left in the retry family for the consumers
it belongs to (another lane's, or the base lane's): it is neither skipped nor handed out twice.
Past `max_bytes` of framed messages the rest go out `Deferred`, framed as they are written.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from functools import partial
from typing import NamedTuple, Protocol

from rockmq.broker import priority
from rockmq.broker.clock import now_ms
from rockmq.broker.context import BrokerContext
from rockmq.broker.lanes import Route
from rockmq.broker.metadata import PRIORITY, GroupConfig, TopicConfig
from rockmq.broker.pop.checkpoints import Checkpoints
from rockmq.broker.pop.fifo import FifoLocks
from rockmq.broker.pop.offsets import PopOffsets
from rockmq.broker.pop.revive import Reviver
from rockmq.broker.queues import by_offset
from rockmq.broker.subscriptions import Subscription
from rockmq.broker.trace import Event
from rockmq.filter.record_filter import accept_all
from rockmq.protocol import records
from rockmq.protocol.field_keys import ReceivedMessageFields
from rockmq.store import keys
from rockmq.store.schema import Family

# What frames each message handed out: the key of ReceiveMessageResponse.message, which is also
# that of BatchMessaging's ReceiveResponse.messages (consume_replies checks).
FRAME = ReceivedMessageFields.MESSAGE


class Deferred(NamedTuple):
    """A message a receive handed out but left to frame when its turn to be written comes (`PopService.frame`):
    a stream holds `max_bytes` of framed messages at a time, whatever its batch."""

    queue_id: int
    offset: int
    fields: bytes  # its delivery fields (receipt handle, attempt, invisible time): records.delivery_fields


class Sources(Protocol):
    """What a look takes messages from and writes through (PopService's parts)."""

    ctx: BrokerContext
    checkpoints: Checkpoints
    fifo: FifoLocks
    reviver: Reviver
    offsets: PopOffsets


def _queue_order(retry: tuple[bytes, bytes]) -> tuple[int, int]:
    """A FIFO group's retries go out per queue in offset order."""
    queue_id, offset, _ = keys.parse_retry_value(retry[1])
    return queue_id, offset


class Take:
    """One look for one receive: the messages (`out`) and the batch that records handing them out."""

    __slots__ = ("_ctx", "_offsets", "_reviver", "_fifo", "_sub", "_accept", "_lanes", "_group_id", "_topic_id",
                 "_queues", "_batch_size", "_invisible_ms", "_max_reply_bytes", "_frame_bytes", "_plain", "batch",
                 "issue", "out", "_size", "_framed", "_after", "_left", "_positions", "_taken", "_client_id",
                 "_max_priority")

    def __init__(self, sources: Sources, group: GroupConfig, topic: TopicConfig, sub: Subscription | None,
                 batch_size: int, invisible_ms: int, lanes: Route | None, max_bytes: int, client_id: str = "") -> None:
        """`lanes`: which lanes' messages the consumer takes (None: all; a FIFO group's receive has none);
        `max_bytes` (if above 0): framed messages past it go out `Deferred`; `client_id`: the
        consumer, for the trace."""
        ctx = self._ctx = sources.ctx
        deadline = now_ms() + invisible_ms
        self.batch = ctx.store.batch()
        self.issue = sources.checkpoints.issue(group.id, topic.id, deadline)
        self._offsets, self._reviver = sources.offsets, sources.reviver
        self._fifo = sources.fifo if group.fifo else None
        self._sub, self._lanes = sub, lanes
        self._accept = sub.accept if sub is not None else accept_all
        self._group_id, self._topic_id, self._queues = group.id, topic.id, topic.queues
        self._batch_size, self._invisible_ms = batch_size, invisible_ms
        self._max_reply_bytes = ctx.settings.max_reply_bytes
        self._frame_bytes = max_bytes or self._max_reply_bytes  # max_reply_bytes: all framed (the batch stops there)
        self._plain = self._fifo is None and self._accept is accept_all and lanes is None  # nothing reads a header
        self.out: list[bytes | Deferred] = []
        self._size = self._framed = 0  # bytes handed out; of them, framed
        self._after: list[Callable[[], None]] = []  # FIFO lock changes, in order, once the batch is written
        self._left = False  # a message was left for another lane's consumers
        self._positions: dict[tuple[int, int, int], int] = {}  # pop offsets advanced
        self._taken = False  # a retry was taken
        self._client_id = client_id
        self._max_priority = topic.max_priority if PRIORITY in topic.message_types else -1  # -1: not by level


    @property
    def size(self) -> int:
        """Bytes handed out (a deferred message's: its record's parts and delivery fields)."""
        return self._size
    def run(self) -> bool:
        """The three steps -> whether any state advanced (a look that only filtered messages out did)."""
        self.retried()
        self.new()
        return self.write()

    def full(self) -> bool:
        return len(self.out) >= self._batch_size or self._size >= self._max_reply_bytes

    # --- 1. retries ----------------------------------------------------------------------------

    def retried(self) -> None:
        """Messages whose invisible time ran out, or left by another lane, come back first."""
        gid, tid, fifo, lanes, logs = self._group_id, self._topic_id, self._fifo, self._lanes, self._ctx.logs
        for key, value in self._retries():
            if self.full():
                break
            qid, offset, attempt = keys.parse_retry_value(value)
            record = logs.read(tid, qid, offset)
            view = records.view(record) if record is not None else None
            if view is not None and lanes is not None and not lanes.takes(view):
                continue  # another lane's: it stays
            self._reviver.take(self.batch, key)
            self._taken = True
            if view is None or not self._accept(view):  # removed by retention, or no longer subscribed
                if fifo is not None:
                    self._after.append(partial(fifo.settled, (gid, tid, qid), was_inflight=False))
                continue
            self.deliver(qid, offset, view, attempt + 1)

    def _retries(self) -> list[tuple[bytes, bytes]]:
        """The retries this look may take, in the order it takes them. A FIFO group's are all read: only
        those of queues with nothing in flight may go, per queue in offset order; with lanes, as many
        as a scan may pass over (other lanes' stay)."""
        fifo = self._fifo
        limit = None if fifo else 4 * self._batch_size if self._lanes is None else self._ctx.settings.pop_scan_limit
        retries = list(self._reviver.waiting(self._group_id, self._topic_id, limit))
        if fifo is not None:
            gid, tid = self._group_id, self._topic_id
            retries = [r for r in retries if fifo.redeliverable((gid, tid, keys.parse_retry_value(r[1])[0]))]
            retries.sort(key=_queue_order)
        return retries

    # --- 2. new messages -----------------------------------------------------------------------

    def new(self) -> None:
        """New messages, rotating fairly over the topic's queues; a PRIORITY topic's from its highest
        level down, each level's lanes rotated (broker/priority.py)."""
        n, top = self._queues, self._max_priority
        if top >= 0:
            self._by_level(n, top)
            return
        start = self._offsets.rotate(self._group_id, self._topic_id, n)
        for i in range(n):
            if self.full():
                break
            self._queue((start + i) % n)

    def _by_level(self, n: int, top: int) -> None:
        """A PRIORITY topic's `n` queues of levels 0..`top`, highest level first: a lower level is
        looked at only once every higher one is empty (or filtered out) or the batch is full."""
        start_lane = self._offsets.rotate(self._group_id, self._topic_id, n // (top + 1))
        for qid in priority.visit_order(n, top, start_lane):
            if self.full():
                break
            self._queue(qid)

    def _queue(self, qid: int) -> None:
        """New messages of one queue from its pop offset, which moves past what was looked at."""
        gid, tid = self._group_id, self._topic_id
        if self._fifo is not None and self._fifo.held((gid, tid, qid)):
            return
        begin = self._offsets.get(gid, tid, qid)
        end = self._ctx.logs.max_offset(tid, qid)
        if begin >= end:
            return
        indexed_from = self._sub.indexed_from[qid] if self._sub is not None else end
        if begin >= indexed_from:
            position = self.matched(qid, begin, end)
        else:
            position = self.scanned(qid, begin, indexed_from)
        if position != begin:
            self._positions[(gid, tid, qid)] = position
            self._offsets.advance(self.batch, gid, tid, qid, position)

    def matched(self, qid: int, begin: int, end: int) -> int:
        """The group's matches from `begin` (every other entry is filtered out) -> the position after
        those looked at."""
        gid, tid = self._group_id, self._topic_id
        room = self._batch_size - len(self.out)
        found = [keys.match_offset(k) for k, _ in self._ctx.store.scan(
            Family.MATCHES, keys.match_key(gid, tid, qid, begin), keys.match_key(gid, tid, qid, end), room + 1)]
        for offset, record in zip(found[:room], self._ctx.logs.read_many(tid, qid, found[:room])):
            if self.full():
                return offset
            if record is not None:  # else removed by retention
                self._offer(qid, offset, records.view(record))
        return found[room] if len(found) > room else end

    def scanned(self, qid: int, begin: int, indexed_from: int) -> int:
        """The log from `begin`, each entry evaluated (no index, or entries written before it; a
        filtered-out message counts as consumed) -> the position after those looked at."""
        position = begin
        run = self._ctx.logs.scan_keyed(self._topic_id, qid, begin, self._ctx.settings.pop_scan_limit)
        if self._plain and self._framed < self._frame_bytes:
            run, position = self.framed_run(qid, run, indexed_from, position)
        accept = self._accept
        for offset, record in by_offset(run):
            if self.full() or offset >= indexed_from:
                break
            position = offset + 1
            view = records.view(record)
            if accept(view):
                self._offer(qid, offset, view)
        return position

    def framed_run(self, qid: int, run: Iterator[tuple[bytes, bytes]], indexed_from: int,
                   position: int) -> tuple[Iterator[tuple[bytes, bytes]], int]:
        """The run that goes out as it is, framed in one compiled call (`records.frame_run`) -> the rest
        of the scan, and the position after the run."""
        token, entry = self.issue.next_entry()
        offsets: list[int] = []
        added, stopped = records.frame_run(
            run, keys.log_offset, token, entry, records.delivery_tail(self._invisible_ms, 1), FRAME,
            self._batch_size - len(self.out), min(self._max_reply_bytes - self._size, self._frame_bytes - self._framed),
            indexed_from, self.out, offsets)
        self.issue.add_run(qid, offsets, 1)
        self._size += added
        self._framed += added
        if offsets:
            position = offsets[-1] + 1
        if stopped is not None:  # the rest, as the loop takes it
            run = itertools.chain((stopped,), run)
        return run, position

    # --- handing out -------------------------------------------------------------------------

    def _offer(self, qid: int, offset: int, view: records.RecordView) -> None:
        """A new message the filter accepts: handed out if the consumer's lane takes it, else left."""
        if self._lanes is None or self._lanes.takes(view):
            self.deliver(qid, offset, view, 1)
        else:
            self._reviver.requeue(self.batch, self._group_id, self._topic_id, qid, offset, 0)
            self._left = True

    def deliver(self, qid: int, offset: int, view: records.RecordView, attempt: int) -> None:
        """Hand a message out: its checkpoint entry, and framed while the framed bytes are below
        `max_bytes` (else `Deferred`)."""
        fields = records.delivery_fields(self.issue.add(qid, offset, attempt), attempt, self._invisible_ms)
        if self._framed < self._frame_bytes:
            message = view.message(fields, FRAME)
            self.out.append(message)
            self._framed += len(message)
            self._size += len(message)
        else:
            self.out.append(Deferred(qid, offset, fields))
            self._size += len(view.rest) + len(view.system_properties) + len(fields)
        if self._fifo is not None:
            self._after.append(partial(self._fifo.delivered, (self._group_id, self._topic_id, qid), first_time=attempt == 1))

    # --- 3. write ------------------------------------------------------------------------------

    def write(self) -> bool:
        """The look's one WriteBatch, then the in-memory state that follows it -> whether any state advanced."""
        self.issue.write(self.batch)
        self._ctx.logs.trace.ranges(self.batch, self._topic_id, self.issue.ranges, Event.DELIVERED, self._group_id,
                                    self._client_id)
        self._ctx.store.write(self.batch)
        self._offsets.advanced(self._positions)
        for apply in self._after:
            apply()
        if self._left:  # wake the consumers these are for
            self._ctx.logs.arrivals.receives(self._topic_id)
        return bool(self._positions) or self._taken
