"""Offset arithmetic of the Spark source, pure (no Spark, no network): option parsing, where a
read starts and ends, read limits spread over queues, and ranges split into partitions.

An offset is a JSON-able dict, the form Spark keeps in its checkpoint and the form the
`startingOffsets` / `endingOffsets` options take: `{"topic": {"broker:queueId": offset}}`.
A queue is named by its broker and id because queue ids are per broker (every broker of a cluster
has its own queue 0 of a topic).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from rockmq.when import parse_instant_ms

EARLIEST, LATEST = -2, -1  # in a JSON map, as Kafka's source spells them
Offsets = dict[str, dict[str, int]]


def queue_key(broker: str, queue_id: int) -> str:
    return f"{broker}:{queue_id}"


def parse_queue_key(key: str) -> tuple[str, int]:
    broker, sep, qid = key.rpartition(":")
    if not sep or not broker or not qid.lstrip("-").isdigit():
        raise ValueError(f"a queue is named 'broker:queueId', not {key!r}")
    return broker, int(qid)


@dataclass(frozen=True)
class QueueState:
    """One queue of a topic as a broker reported it: it holds offsets [min_offset, max_offset)."""

    topic: str
    broker: str
    queue_id: int
    endpoint: str
    min_offset: int
    max_offset: int
    lite_topic: str | None = None  # a LITE topic's queues are its lite topics (docs/spark.md)

    @property
    def key(self) -> str:
        return queue_key(self.broker, self.queue_id)


@dataclass(frozen=True)
class OffsetSpec:
    """A parsed startingOffsets / endingOffsets option."""

    kind: str  # "earliest", "latest", "timestamp" or "json"
    timestamp_ms: int | None = None
    per_queue: Offsets | None = None


_MS = re.compile(r"^\d+$")


def parse_spec(value: str | None, default: str, option: str) -> OffsetSpec:
    """`earliest`, `latest`, ms since the epoch, an ISO-8601 time with a zone, or a JSON map
    `{"topic": {"broker:queueId": offset}}` (-2 = earliest, -1 = latest)."""
    text = (value if value is not None else default).strip()
    low = text.lower()
    if low in ("earliest", "latest"):
        return OffsetSpec(low)
    if text.startswith("{"):
        try:
            raw = json.loads(text)
        except ValueError as e:
            raise ValueError(f"{option}: not valid JSON ({e}): {text!r}") from None
        if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
            raise ValueError(f'{option}: expected {{"topic": {{"broker:queueId": offset, ...}}}}, got {text!r}')
        per_queue: Offsets = {}
        for topic, queues in raw.items():
            per_queue[topic] = {}
            for key, off in queues.items():
                if isinstance(off, bool) or not isinstance(off, int) or off < EARLIEST:
                    raise ValueError(f"{option}: offset of {topic}/{key} must be an integer >= -2, not {off!r}")
                per_queue[topic][str(key)] = off
        return OffsetSpec("json", per_queue=per_queue)
    if _MS.match(text):
        return OffsetSpec("timestamp", timestamp_ms=int(text))
    try:
        return OffsetSpec("timestamp", timestamp_ms=parse_instant_ms(text))
    except ValueError as e:
        raise ValueError(f"{option}: use earliest, latest, a JSON per-queue map, ms since the epoch or an ISO-8601 time "
                         f"with a zone ({e})") from None


def _json_offset(per_queue: Offsets, q: QueueState) -> int | None:
    """The offset a JSON map gives a queue: by 'broker:queueId', or by bare queue id when the
    topic lives on one broker only (then ids are unambiguous)."""
    queues = per_queue.get(q.topic)
    if queues is None:
        return None
    if q.key in queues:
        return queues[q.key]
    return queues.get(str(q.queue_id))


def check_json_queues(spec: OffsetSpec, queues: list[QueueState], option: str) -> None:
    """A JSON map naming a queue that does not exist is a typo, not a request: refuse it."""
    if spec.kind != "json":
        return
    known: dict[str, set[str]] = {}
    brokers: dict[str, set[str]] = {}
    for q in queues:
        known.setdefault(q.topic, set()).add(q.key)
        brokers.setdefault(q.topic, set()).add(q.broker)
    for topic, per in (spec.per_queue or {}).items():
        if topic not in known:
            raise ValueError(f"{option} names topic {topic!r}, which is not read (option topic) or has no queues")
        for key in per:
            bare = key.lstrip("-").isdigit()
            if bare and len(brokers[topic]) > 1:
                raise ValueError(f"{option}: topic {topic!r} has queues on several brokers; name queue {key} as 'broker:{key}'")
            if (f"{next(iter(brokers[topic]))}:{key}" if bare else key) not in known[topic]:
                raise ValueError(f"{option}: topic {topic!r} has no queue {key!r} (it has {sorted(known[topic])})")


def resolve(spec: OffsetSpec, queues: list[QueueState], at_time: Callable[[QueueState, int], int], unlisted: str) -> Offsets:
    """Concrete offsets for `queues`. `at_time(queue, ms)` asks the queue's broker for the first
    offset stored at or after ms; `unlisted` ("earliest"/"latest") is for queues a JSON map omits."""
    out: Offsets = {}
    for q in queues:
        if spec.kind == "earliest":
            off = q.min_offset
        elif spec.kind == "latest":
            off = q.max_offset
        elif spec.kind == "timestamp":
            assert spec.timestamp_ms is not None
            off = at_time(q, spec.timestamp_ms)
        else:
            listed = _json_offset(spec.per_queue or {}, q)
            if listed is None:
                listed = EARLIEST if unlisted == "earliest" else LATEST
            off = q.min_offset if listed == EARLIEST else q.max_offset if listed == LATEST else listed
        out.setdefault(q.topic, {})[q.key] = off
    return out


def rate_limit(start: Offsets, available: Offsets, max_rows: int | None) -> Offsets:
    """End offsets at most `max_rows` messages past `start`, spread over queues in proportion to
    their backlog (each queue gets its floor share; what rounding leaves goes one by one to the
    largest remainders, in queue order on ties). Deterministic, and never behind `start`."""
    backlog = {(t, k): max(0, end - start.get(t, {}).get(k, 0)) for t, qs in available.items() for k, end in qs.items()}
    total = sum(backlog.values())
    end = {t: dict(qs) for t, qs in available.items()}
    if max_rows is None or total <= max_rows:
        return end
    shares = {q: max_rows * b / total for q, b in backlog.items()}
    take = {q: math.floor(s) for q, s in shares.items()}
    left = max_rows - sum(take.values())
    for q in sorted(shares, key=lambda q: (-(shares[q] - take[q]), q))[:left]:
        take[q] += 1
    for (t, k), n in take.items():
        end[t][k] = max(0, start.get(t, {}).get(k, 0)) + n if backlog[(t, k)] else end[t][k]
    return end


def merge_forward(start: Offsets, end: Offsets) -> Offsets:
    """`end` plus every queue of `start` it lacks (a queue whose broker did not answer, or whose
    topic was deleted, keeps its position instead of disappearing from the checkpoint)."""
    out = {t: dict(qs) for t, qs in end.items()}
    for t, qs in start.items():
        for k, off in qs.items():
            out.setdefault(t, {}).setdefault(k, off)
    return out


def forget_gone(offsets: Offsets, listed_topics: set[str], queues: list[QueueState]) -> Offsets:
    """`offsets` without the positions of the lite topics that left a complete listing of their
    LITE topic (`listed_topics`): expired, their queue ids never reused, so a checkpoint keeps
    only the lite topics that exist, however many came and went."""
    present: dict[str, set[str]] = {}
    for q in queues:
        present.setdefault(q.topic, set()).add(q.key)
    return {t: {k: off for k, off in qs.items() if k in present.get(t, ())} if t in listed_topics else qs
            for t, qs in offsets.items()}


@dataclass(frozen=True)
class Range:
    """Messages [start, end) of one queue."""

    topic: str
    broker: str
    queue_id: int
    start: int
    end: int


def ranges(start: Offsets, end: Offsets, max_per_range: int) -> list[Range]:
    """The non-empty [start, end) per queue (a queue missing from `start` is new: it starts at 0,
    and a read finds out whether retention took some of that), each split into pieces of at most
    `max_per_range` messages. Queues whose end is behind their start (the queue was recreated) are
    left out: `behind` reports them."""
    out: list[Range] = []
    for topic in sorted(end):
        for key in sorted(end[topic], key=lambda k: parse_queue_key(k)):
            broker, qid = parse_queue_key(key)
            lo, hi = start.get(topic, {}).get(key, 0), end[topic][key]
            while lo < hi:
                step = min(hi, lo + max_per_range)
                out.append(Range(topic, broker, qid, lo, step))
                lo = step
    return out


def behind(start: Offsets, end: Offsets) -> list[tuple[str, str, int, int]]:
    """(topic, queue, start, end) of every queue whose end is below its start."""
    return [(t, k, start[t][k], e) for t, qs in end.items() for k, e in qs.items() if t in start and start[t].get(k, e) > e]


def lag(progress_source: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per-queue lag (latest - end) from one entry of a streaming query's progress `sources`
    (Spark shows the source's latest offsets there because the source reports them)."""
    def load(v: object) -> Offsets:
        return cast(Offsets, json.loads(v) if isinstance(v, str) else (v or {}))
    end, latest = load(progress_source.get("endOffset")), load(progress_source.get("latestOffset"))
    return {t: {k: max(0, off - end.get(t, {}).get(k, 0)) for k, off in qs.items()} for t, qs in latest.items()}
