"""This broker's answers to the Messages service (broker/api/messages.py; across the cluster:
broker/cluster/message_fanout.py): a stored message by id (the index's id entries), by key within
a time window (its key entries), by store time (a binary search of each queue's log, appended in
store-time order, then a scan), and its trace.

Each answer is at most `max` messages, oldest first, and says whether more matched. An index
entry whose message retention removed since is skipped: the log is the truth.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator

from rockmq.broker.clock import now_ms
from rockmq.broker.context import BrokerContext
from rockmq.broker.retention import first_to_keep
from rockmq.broker.trace import TraceEvent
from rockmq.protocol import messages, pb, records
from rockmq.protocol.errors import BrokerError

DEFAULT_MAX = 100
MAX_MESSAGES = 1000  # per answer: a reply stays bounded whatever `max` asks
MAX_EVENTS = 1000  # of one message's trace
Found = tuple[int, int, int]  # store_ms, queue, offset


def check_window(from_ms: int, to_ms: int, limit: int) -> tuple[int, int]:
    """(to_ms with 0 as now, max with 0 as DEFAULT_MAX), or why the request is refused."""
    to_ms = to_ms or now_ms()
    if from_ms < 0:
        raise BrokerError(pb.BAD_REQUEST, f"the time window cannot start before 1970 (the epoch): {from_ms} ms")
    if to_ms < from_ms:
        raise BrokerError(pb.BAD_REQUEST, f"the time window must not end before it starts ({from_ms} > {to_ms} ms)")
    if not 0 <= limit <= MAX_MESSAGES:
        raise BrokerError(pb.BAD_REQUEST, f"max must be in [1, {MAX_MESSAGES}], not {limit}")
    return to_ms, limit or DEFAULT_MAX


class MessageLookup:
    def __init__(self, ctx: BrokerContext, broker: str) -> None:
        self.ctx = ctx
        self.broker = broker

    def _stored(self, topic_id: int, found: list[Found], limit: int) -> messages.MessagesResponse:
        """The messages at these places that are still stored, at most `limit` (more: says so)."""
        reply = messages.MessagesResponse()
        logs = self.ctx.logs
        for _, queue_id, offset in found:
            record = logs.read(topic_id, queue_id, offset)
            if record is None:
                continue
            if len(reply.messages) == limit:
                reply.more = True
                break
            reply.messages.append(messages.StoredMessage(broker=self.broker, message=records.decode(record)))
        return reply

    def get(self, topic_name: str, message_id: str) -> messages.MessagesResponse:
        topic = self.ctx.meta.topic(topic_name)
        if not message_id:
            raise BrokerError(pb.BAD_REQUEST, "a message id is required")
        found = [(0, q, o) for q, o in self.ctx.logs.messages.by_id(topic.id, message_id, now_ms())]
        return self._stored(topic.id, found, MAX_MESSAGES)

    def by_key(self, request: messages.FindMessagesRequest) -> messages.MessagesResponse:
        topic = self.ctx.meta.topic(request.topic)
        if not request.key:
            raise BrokerError(pb.BAD_REQUEST, "a message key is required")
        to_ms, limit = check_window(request.from_ms, request.to_ms, request.max)
        found = self.ctx.logs.messages.by_key(topic.id, request.key, request.from_ms, to_ms, limit + 1)
        return self._stored(topic.id, found, limit)

    def by_time(self, request: messages.ListMessagesRequest) -> messages.MessagesResponse:
        topic = self.ctx.meta.topic(request.topic)
        to_ms, limit = check_window(request.from_ms, request.to_ms, request.max)
        queues = [self._stored_between(topic.id, q, request.from_ms, to_ms, limit + 1) for q in range(topic.queues)]
        merged = heapq.merge(*queues)  # lazily: each queue is read only as far as the answer needs
        return self._stored(topic.id, list(itertools.islice(merged, limit + 1)), limit)

    def _stored_between(self, topic_id: int, queue_id: int, from_ms: int, to_ms: int, limit: int) -> Iterator[Found]:
        """Up to `limit` places in the queue stored in [from_ms, to_ms], oldest first."""
        logs = self.ctx.logs
        lo, hi = logs.min_offset(topic_id, queue_id), logs.max_offset(topic_id, queue_id)

        def stored_at(offset: int) -> int | None:
            raw = logs.read(topic_id, queue_id, offset)
            return records.store_ms(raw) if raw is not None else None

        start = first_to_keep(stored_at, lo, hi, from_ms)
        for offset, record in logs.scan(topic_id, queue_id, start, limit):
            at = records.store_ms(record)
            if at > to_ms:
                return
            yield at, queue_id, offset

    def trace(self, topic_name: str, message_id: str) -> messages.TraceMessageResponse:
        """The message's events while in no queue (a transaction's checks, a recall), then for each
        stored copy its store and its events; oldest first."""
        found = self.get(topic_name, message_id)
        topic = self.ctx.meta.topic(topic_name)
        trace, store = self.ctx.logs.trace, self.ctx.store
        reply = messages.TraceMessageResponse()
        unplaced = messages.TraceEvent(broker=self.broker, queue_id=-1, offset=-1)
        for e in trace.unplaced_timeline(store, topic.id, message_id, now_ms(), MAX_EVENTS):
            self._add(reply, e, unplaced)
        for stored in found.messages:
            sp = stored.message.system_properties
            place = messages.TraceEvent(broker=self.broker, queue_id=sp.queue_id, offset=sp.queue_offset)
            reply.events.add(at_ms=sp.store_timestamp.ToMilliseconds(), kind="stored").MergeFrom(place)
            for e in trace.timeline(store, topic.id, sp.queue_id, sp.queue_offset, MAX_EVENTS):
                self._add(reply, e, place)
        reply.events.sort(key=lambda e: e.at_ms)
        return reply

    def _add(self, reply: messages.TraceMessageResponse, e: TraceEvent, place: messages.TraceEvent) -> None:
        group = self.ctx.meta.groups_by_id.get(e.group_id)
        reply.events.add(at_ms=e.at_ms, kind=e.kind.name.lower().replace("_", "-"), group=group.name if group else "",
                         client_id=e.client_id, attempt=e.attempt).MergeFrom(place)
