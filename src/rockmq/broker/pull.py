"""Offset-based consumption: PullMessage, UpdateOffset, GetOffset and QueryOffset.

The consumer owns its position: it reads a queue from an offset and commits offsets it has
processed. rockmq's own client and the Spark source read this way.

Lanes (broker/lanes.py): a pull skips the messages its consumer may not take; an offset-based
lane consumer keeps its offsets under `<group>%LANE%<lane>`. Such a lane group with no committed
offset starts where the group's base consumers are (their committed offset, or how far they
pulled): every earlier message of the lane was the base's (nobody was in the lane), so none
comes again. A lane group with stored offsets skips what the base took of its lane meanwhile
(broker/lane_fallback.py).
"""

from __future__ import annotations

import asyncio

from rockmq.broker.consume_mode import claim
from rockmq.broker.context import BrokerContext
from rockmq.broker.lane_fallback import (
    LaneShare,
    Ranges,
    TakenLedger,
    Zone,
    add,
    base_zone,
    lane_groups,
    lane_zone,
    taken_spans,
    trim,
)
from rockmq.broker.lanes import Consumers, Route, message_lane
from rockmq.broker.metadata import OFFSET, GroupConfig, TopicConfig, check_readable, is_lite
from rockmq.filter.record_filter import RecordFilter, accept_all
from rockmq.protocol import pb, records
from rockmq.protocol.conventions import base_group, check_name, lane_group
from rockmq.protocol.errors import BrokerError
from rockmq.store import keys
from rockmq.store.keys import COMMITTED, LITE_QUEUE_BASE
from rockmq.store.schema import Family

FETCH_SLICE = 1024  # records read between two turns of the event loop (a few ms)


class PullService:
    def __init__(self, ctx: BrokerContext, consumers: Consumers) -> None:
        self.ctx = ctx
        self.consumers = consumers
        # (group, topic, queue) -> how far its pulls got, for lanes' fallback: the topic's own queues
        # only, never lite topics (a group may pull millions of them: the table would grow without end).
        self._pulled: dict[tuple[str, int, int], int] = {}
        self.taken = TakenLedger(ctx.store)
        self._lane_index: tuple[object, int, dict[str, dict[str, GroupConfig]]] = (None, 0, {})

    def forget_topic(self, topic_id: int) -> None:
        """A deleted topic's pull positions (its id is never used again)."""
        self._pulled = {k: v for k, v in self._pulled.items() if k[1] != topic_id}

    def forget_group(self, group_name: str, topic_id: int | None = None) -> None:
        """How far a group's pulls got (on one topic, or all): it was reset, or deleted."""
        self._pulled = {k: v for k, v in self._pulled.items() if k[0] != group_name or topic_id not in (None, k[1])}

    def _check_queue(self, topic: TopicConfig, queue_id: int) -> None:
        """A queue of the topic: one of its `queues`, or of a LITE topic a lite topic's (ListLiteTopics names them)."""
        if not 0 <= queue_id < topic.queues and not (queue_id >= LITE_QUEUE_BASE and is_lite(topic)):
            raise BrokerError(pb.BAD_REQUEST, f"topic {topic.name!r} has queues 0..{topic.queues - 1}, not {queue_id}")

    def _reader(self, group_name: str) -> None:
        """A pull names its group, which then consumes by offsets (broker/consume_mode.py). A
        group that does not exist and is not created here (a replica or a fenced primary, which
        a read never writes on, or no auto-creation) has no mode to check: a pull keeps no state
        of its own."""
        group = self.ctx.meta.groups.get(group_name)
        if group is None:
            check_name("group", group_name)
            if not self.ctx.writable or not self.ctx.settings.auto_create_groups:
                return
            group = self.ctx.group_for(group_name)
        claim(self.ctx.meta, group, OFFSET, not self.ctx.writable)

    async def pull(self, group_name: str, topic: TopicConfig, queue_id: int, offset: int, batch_size: int,
                   accept: RecordFilter, poll_s: float, max_bytes: int = 0, client_id: str = "",
                   lane: str = "") -> tuple[list[bytes], int]:
        """Messages from `offset` on -> (serialized v2 Messages, next offset). With `max_bytes`, no
        more bytes than that, but one message even if larger (a push consumer's room). The client's
        `lane` (its x-rockmq-lane header) decides which lanes' messages it takes (broker/lanes.py).
        `batch_size` 0: `receive_batch`; negative sizes are refused."""
        self.ctx.refuse_if_draining()
        check_readable(topic)
        if batch_size < 0 or max_bytes < 0:
            raise BrokerError(pb.BAD_REQUEST, "batch_size and max_bytes must not be negative")
        self._check_queue(topic, queue_id)
        self._reader(group_name)
        logs = self.ctx.logs
        lo, hi = logs.min_offset(topic.id, queue_id), logs.max_offset(topic.id, queue_id)
        if offset < lo or offset > hi:
            raise BrokerError(pb.ILLEGAL_OFFSET, f"offset {offset} is outside the queue's range [{lo}, {hi}]")
        s = self.ctx.settings
        batch_size = min(batch_size or s.receive_batch, s.max_receive_batch)
        budget = min(max_bytes, s.max_reply_bytes) if max_bytes > 0 else s.max_reply_bytes
        lanes = self.consumers.route(group_name, client_id, lane)
        zone = self._zone(group_name, topic.id, queue_id, offset, lane, lanes)
        scan_limit = s.pull_scan_limit
        if zone is not None:
            if zone.skip_to is not None:
                return [], zone.skip_to
            lanes = zone.route
            if zone.end is not None:
                scan_limit = min(scan_limit, zone.end - offset)
        wanted = accept
        if lanes is not None:
            accept = _and(accept, lanes.takes)
        loop = asyncio.get_running_loop()
        until = loop.time() + poll_s
        while True:
            arrival = logs.arrivals.queue(topic.id, queue_id)  # taken before looking: no lost wake-up
            out: list[bytes] = []
            size = 0
            position = offset
            for off, record in logs.scan(topic.id, queue_id, offset, scan_limit):
                if len(out) >= batch_size or size >= budget:
                    break
                view = records.view(record)
                if accept(view):
                    message = view.message()
                    if out and size + len(message) > budget:
                        break
                    out.append(message)
                    size += len(message)
                position = off + 1
            left = until - loop.time()
            if out or position != offset or left <= 0 or logs.arrivals.ended:
                key = (group_name, topic.id, queue_id)
                # Only groups that exist: a name made up for each pull (no auto-creation) would grow them without end.
                if group_name in self.ctx.meta.groups:
                    if queue_id < LITE_QUEUE_BASE and position > self._pulled.get(key, -1):
                        self._pulled[key] = position
                    if out:
                        self.ctx.tally.handed_out(topic.id, group_name, len(out), size)
                if zone is not None and zone.record and position > offset and self.ctx.writable:
                    self._took(group_name, zone.record, topic.id, queue_id, offset, position, wanted)
                return out, position
            await logs.arrivals.wait(arrival, left)

    def update_offset(self, group: GroupConfig, topic: TopicConfig, queue_id: int, offset: int) -> None:
        self._check_queue(topic, queue_id)
        claim(self.ctx.meta, group, OFFSET, self.ctx.read_only)
        hi = self.ctx.logs.max_offset(topic.id, queue_id)
        if not 0 <= offset <= hi:
            raise BrokerError(pb.ILLEGAL_OFFSET, f"offset {offset} is outside [0, {hi}]")
        batch = self.ctx.store.batch()
        batch.put(Family.OFFSETS, keys.offset_key(group.id, topic.id, queue_id, COMMITTED), keys.encode_u64(offset))
        self.ctx.store.write(batch)
        lanes = self._lanes_of(base_group(group.name))
        if lanes:
            self._trim(base_group(group.name), lanes, topic.id, queue_id)

    # --- lanes: what the base took of a lane in fallback (broker/lane_fallback.py) -----------------

    def _lanes_of(self, base: str) -> dict[str, GroupConfig] | None:
        """The base group's lanes that have stored state: {lane: lane group} (None: no lanes)."""
        meta = self.ctx.meta
        seen, count, index = self._lane_index
        if seen is not meta or count != len(meta.groups):  # groups are never removed: a new one changes the count
            index = {base: {lane: meta.groups[name] for lane, name in lanes.items()}
                     for base, lanes in lane_groups(meta.groups).items()}
            self._lane_index = (meta, len(meta.groups), index)
        return index.get(base)

    def _zone(self, group_name: str, topic_id: int, queue_id: int, offset: int, lane: str, route: Route | None) -> Zone | None:
        """How a pull of a group whose lanes have stored state routes lanes (None: as `route` says)."""
        if not lane:
            lanes = self._lanes_of(group_name)
            if lanes is None:
                return None
            live = route.live if route is not None else frozenset()
            return base_zone(offset, route, [LaneShare(name, name in live, self._position(config, topic_id, queue_id),
                                                       self.taken.ranges(config.id, topic_id, queue_id))
                                             for name, config in lanes.items()])
        base = base_group(group_name)
        config = (self._lanes_of(base) or {}).get(lane)
        if config is None or lane_group(base, lane) != group_name:
            return None
        taken = self.taken.ranges(config.id, topic_id, queue_id)
        return lane_zone(offset, route, LaneShare(lane, True, -1, taken)) if taken else None

    def _position(self, lane: GroupConfig, topic_id: int, queue_id: int) -> int:
        """Where a lane's own reading of a queue stands: its committed offset, or how far it pulled."""
        return max(self.committed(lane.id, topic_id, queue_id), self._pulled.get((lane.name, topic_id, queue_id), -1))

    def _keep_from(self, base: str, lane: GroupConfig, topic_id: int, queue_id: int) -> int:
        """Below this offset neither the lane nor the base reads again (the lower of their committed offsets)."""
        base_config = self.ctx.meta.groups.get(base)
        committed = [c for c in (self.committed(lane.id, topic_id, queue_id),
                                 self.committed(base_config.id, topic_id, queue_id) if base_config is not None else -1) if c >= 0]
        return min(committed, default=-1)

    def _took(self, base: str, lanes: tuple[str, ...], topic_id: int, queue_id: int, start: int, end: int,
              wanted: RecordFilter) -> None:
        """A base pull read [start, end) with its filter `wanted`, taking these lanes' messages by
        fallback: all of them (no filter: no message read), or those its filter accepted."""
        spans = {lane: [(start, end)] for lane in lanes}
        if wanted is not accept_all:
            marks: dict[str, list[tuple[int, bool]]] = {lane: [] for lane in lanes}
            for off, record in self.ctx.logs.scan(topic_id, queue_id, start, end - start):
                view = records.view(record)
                lane = message_lane(view)
                if lane in marks:
                    marks[lane].append((off, wanted(view)))
            spans = {lane: taken_spans(start, end, marks[lane]) for lane in lanes}
        configs = self._lanes_of(base) or {}
        changes: list[tuple[int, int, int, Ranges]] = []
        for lane in lanes:
            if not spans[lane]:
                continue
            config = configs[lane]
            ranges = self.taken.ranges(config.id, topic_id, queue_id)
            for lo, hi in spans[lane]:
                ranges = add(ranges, lo, hi)
            changes.append((config.id, topic_id, queue_id, trim(ranges, self._keep_from(base, config, topic_id, queue_id))))
        if changes:
            self.taken.update(changes)

    def _trim(self, base: str, lanes: dict[str, GroupConfig], topic_id: int, queue_id: int) -> None:
        """After a commit: drop what nobody reads again."""
        changes: list[tuple[int, int, int, Ranges]] = []
        for config in lanes.values():
            ranges = self.taken.ranges(config.id, topic_id, queue_id)
            kept = trim(ranges, self._keep_from(base, config, topic_id, queue_id))
            if kept != ranges:
                changes.append((config.id, topic_id, queue_id, kept))
        if changes:
            self.taken.update(changes)

    def committed(self, group_id: int, topic_id: int, queue_id: int) -> int:
        """The group's committed offset on a queue; -1: none."""
        raw = self.ctx.store.get(Family.OFFSETS, keys.offset_key(group_id, topic_id, queue_id, COMMITTED))
        return keys.decode_u64(raw) if raw is not None else -1

    def get_offset(self, group_name: str, topic: TopicConfig, queue_id: int) -> int:
        """The group's committed offset; for a lane group without one, where its base group is."""
        self._check_queue(topic, queue_id)
        group = self.ctx.meta.groups.get(group_name)
        offset = self.committed(group.id, topic.id, queue_id) if group is not None else -1
        base = base_group(group_name)
        if offset < 0 and base != group_name:
            base_config = self.ctx.meta.groups.get(base)
            committed = self.committed(base_config.id, topic.id, queue_id) if base_config is not None else -1
            offset = max(committed, self._pulled.get((base, topic.id, queue_id), -1))
        if offset < 0:
            if group is None:
                self.ctx.meta.group(group_name)  # CONSUMER_GROUP_NOT_FOUND
            raise BrokerError(pb.OFFSET_NOT_FOUND, f"group {group_name!r} has no committed offset for queue {queue_id}")
        return offset

    def query_offset(self, topic: TopicConfig, queue_id: int, policy: int, timestamp_ms: int | None) -> int:
        self._check_queue(topic, queue_id)
        logs = self.ctx.logs
        lo, hi = logs.min_offset(topic.id, queue_id), logs.max_offset(topic.id, queue_id)
        if policy == pb.BEGINNING:
            return lo
        if policy == pb.END:
            return hi
        if timestamp_ms is None:
            raise BrokerError(pb.BAD_REQUEST, "a TIMESTAMP query needs a timestamp")
        # First offset stored at or after the timestamp (store times grow with offsets).
        while lo < hi:
            mid = (lo + hi) // 2
            record = logs.read(topic.id, queue_id, mid)
            if record is not None and records.store_ms(record) < timestamp_ms:
                lo = mid + 1
            else:
                hi = mid
        return lo

    async def fetch(self, topic: TopicConfig, queue_id: int, offset: int, end_offset: int, max_records: int,
                    max_bytes: int) -> tuple[int, list[bytes], int, int]:
        """Stored records of a queue as they are, from `offset` up to `end_offset` (<= 0: the
        end) within the caps (0: the defaults) -> (offset of the first, records, min offset, max offset)."""
        self._check_queue(topic, queue_id)
        check_readable(topic)
        if max_records < 0 or max_bytes < 0:
            raise BrokerError(pb.BAD_REQUEST, "max_records and max_bytes must not be negative")
        logs = self.ctx.logs
        lo, hi = logs.min_offset(topic.id, queue_id), logs.max_offset(topic.id, queue_id)
        start = max(offset, lo)
        end = hi if end_offset <= 0 else min(end_offset, hi)
        if start >= end:
            return start, [], lo, hi
        first, values = await self._read_range(topic, queue_id, start, end, max_records, max_bytes)
        return first, values, lo, hi

    async def _read_range(self, topic: TopicConfig, qid: int, start: int, end: int, max_records: int,
                          max_bytes: int) -> tuple[int, list[bytes]]:
        """Records of [start, end) within the caps -> (offset of the first, records)."""
        s = self.ctx.settings
        limit = min(max_records or s.fetch_records, s.max_fetch_records, end - start)
        max_bytes = min(max_bytes or s.fetch_bytes, s.max_fetch_bytes)
        values: list[bytes] = []
        size = 0
        first = last = b""
        scan = self.ctx.store.scan(Family.LOG, keys.log_key(topic.id, qid, start), keys.log_key(topic.id, qid, end), limit)
        for i, (key, value) in enumerate(scan, 1):  # the iterator reads a snapshot: pausing in between is safe
            if values and size + len(value) > max_bytes:
                break
            if not values:
                first = key
            values.append(value)
            size += len(value)
            last = key
            if i % FETCH_SLICE == 0:
                await asyncio.sleep(0)  # a big fetch does not hold up every other client of the broker
        if not values:
            return start, values
        # Offsets are dense (retention removes a queue's oldest records only), so the first and
        # last keys vouch for every one between; a race with retention shows in the first.
        first_offset = keys.parse_log_key(first)[2]
        if keys.parse_log_key(last)[2] != first_offset + len(values) - 1:
            raise BrokerError(pb.INTERNAL_ERROR, f"queue {qid} of topic {topic.name!r} has a gap in its offsets")
        return first_offset, values


def _and(first: RecordFilter, second: RecordFilter) -> RecordFilter:
    return lambda view: first(view) and second(view)

