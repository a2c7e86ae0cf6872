"""What the base consumers of an offset-based group took of a lane while it had no live member.

A lane consumer of an offset group reads from its own stored offsets (`<group>%LANE%<lane>`);
while its lane has no live member the group's base consumers take the lane's messages
(fallback, broker/lanes.py). So that a message is handled by one consumer of the group, lane or
base, whichever took it, the broker records per (lane group, topic, queue) the offset ranges a
base pull took the lane's messages while the lane was not live (the whole stretch it read; a
base filter that passes over some of them splits it there, so those stay the lane's), and then:

- a lane pull skips those ranges (their lane messages were the base's);
- a base pull still takes the lane's messages in those ranges (a base consumer that re-reads from
  its committed offset gets again what it took, even if the lane is live by then);
- a base pull in fallback takes no lane message below where the lane's own reading stands (its
  committed offset, or how far it pulled): those were the lane's.

Only groups whose lanes have stored state (a lane group exists) pay: everyone else's pull costs one
dict lookup. The ranges live in the offsets family under the lane group's id, kind `f`
(docs/storage.md). They stay bounded: adjacent and overlapping ranges merge (consecutive base pulls
make one range); ranges below both the lane's and the base's committed offsets are dropped (neither
reads there again); and a key holds at most `MAX_RANGES`: past that the oldest range is dropped, so
a lane member that reads that far back gets those messages again (at least once, never lost).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from rockmq.broker.lanes import Route
from rockmq.protocol.conventions import LANE_GROUP_SEPARATOR
from rockmq.store import keys
from rockmq.store.db import Store
from rockmq.store.schema import Family

TAKEN = b"f"  # offsets-family kind: ranges the base took in fallback
MAX_RANGES = 64
_RANGE = struct.Struct(">QQ")

Ranges = tuple[tuple[int, int], ...]  # sorted, disjoint, non-adjacent [start, end) offset ranges


def add(ranges: Ranges, start: int, end: int) -> Ranges:
    """The ranges with [start, end) added (merged with what it overlaps or touches); past
    MAX_RANGES the lowest go."""
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if hi < start or lo > end:
            out.append((lo, hi))
        else:
            start, end = min(lo, start), max(hi, end)
    bisect.insort(out, (start, end))
    return tuple(out[-MAX_RANGES:])


def trim(ranges: Ranges, below: int) -> Ranges:
    """The ranges that reach above `below` (nobody reads below it again)."""
    return tuple(r for r in ranges if r[1] > below)


def encode(ranges: Ranges) -> bytes:
    return b"".join(_RANGE.pack(lo, hi) for lo, hi in ranges)


def decode(raw: bytes | None) -> Ranges:
    return tuple(_RANGE.iter_unpack(raw)) if raw else ()


def containing(ranges: Ranges, offset: int) -> tuple[int, int] | None:
    i = bisect.bisect_right(ranges, (offset, 1 << 64)) - 1
    return ranges[i] if i >= 0 and ranges[i][1] > offset else None


def next_start(ranges: Ranges, offset: int) -> int | None:
    """Where the first range above `offset` starts (None: no range above)."""
    i = bisect.bisect_right(ranges, (offset, 1 << 64))
    return ranges[i][0] if i < len(ranges) else None


def taken_spans(start: int, end: int, marks: list[tuple[int, bool]]) -> list[tuple[int, int]]:
    """The parts of a base pull's [start, end) where the base took the lane's messages, from the
    lane's messages in it ((offset, taken?) in order): split at each one the base's filter passed
    over (it stays the lane's), keeping the parts where the base took one."""
    out: list[tuple[int, int]] = []
    lo, took = start, False
    for offset, taken in marks:
        if taken:
            took = True
            continue
        if took:
            out.append((lo, offset))
        lo, took = offset + 1, False
    if took:
        out.append((lo, end))
    return out


@dataclass(frozen=True)
class LaneShare:
    """One lane of a group, on one queue, as a pull of the group sees it."""

    lane: str
    live: bool
    position: int  # where the lane's own reading stands (committed offset or how far it pulled); -1: nowhere
    taken: Ranges  # what the base took of it in fallback


@dataclass(frozen=True)
class Zone:
    """How a pull from `offset` routes lanes, up to `end` (the next offset where that changes; None: the end)."""

    route: Route | None
    end: int | None = None
    skip_to: int | None = None  # a lane pull inside a range the base took: nothing to read before this
    record: tuple[str, ...] = field(default=())  # lanes whose messages this base pull takes by fallback


def lane_zone(offset: int, route: Route | None, share: LaneShare) -> Zone:
    """A lane consumer's pull: it skips what the base took of its lane."""
    taken = containing(share.taken, offset)
    if taken is not None:
        return Zone(route, skip_to=taken[1])
    return Zone(route, end=next_start(share.taken, offset))


def base_zone(offset: int, route: Route | None, shares: list[LaneShare]) -> Zone:
    """A base consumer's pull: a lane's message at `offset` is the base's if the base took it
    before; else, with the lane live, the lane's; else the lane's if below the lane's position;
    else the base's now (fallback, recorded)."""
    live = route.live if route is not None else frozenset()
    refused = set(live)
    ends: list[int] = []
    record: list[str] = []
    for share in shares:
        taken = containing(share.taken, offset)
        if taken is not None:
            refused.discard(share.lane)
            ends.append(taken[1])
            continue
        start = next_start(share.taken, offset)
        if start is not None:
            ends.append(start)
        if share.live:
            continue
        if offset < share.position:
            refused.add(share.lane)
            ends.append(share.position)
        else:
            record.append(share.lane)
    return Zone(Route("", frozenset(refused)) if refused else None, min(ends, default=None), record=tuple(record))


class TakenLedger:
    """The stored ranges, per (lane group id, topic id, queue id)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def ranges(self, lane_group_id: int, topic_id: int, queue_id: int) -> Ranges:
        return decode(self.store.get(Family.OFFSETS, keys.offset_key(lane_group_id, topic_id, queue_id, TAKEN)))

    def update(self, changes: list[tuple[int, int, int, Ranges]]) -> None:
        """Store (lane group id, topic id, queue id, ranges) in one write; empty ranges: none left."""
        batch = self.store.batch()
        for gid, tid, qid, ranges in changes:
            key = keys.offset_key(gid, tid, qid, TAKEN)
            if ranges:
                batch.put(Family.OFFSETS, key, encode(ranges))
            else:
                batch.delete(Family.OFFSETS, key)
        self.store.write(batch)


def lane_groups(group_names: Iterable[str]) -> dict[str, dict[str, str]]:
    """Base group -> {lane: lane group name} for the lane groups among these names."""
    out: dict[str, dict[str, str]] = {}
    for name in group_names:
        base, sep, lane = name.partition(LANE_GROUP_SEPARATOR)
        if sep and lane:
            out.setdefault(base, {})[lane] = name
    return out
