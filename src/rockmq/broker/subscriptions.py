"""Consumer subscriptions as the broker sees them, and the per-group index of matching offsets.

A group that consumes a topic through a filter (TAG or SQL92) is registered here, from its
consumers' Telemetry settings or its first receive. From then on every message appended to the
topic is matched once, at write time, against all the topic's registered filters through the
`MatchIndex` the queue logs hold (broker/matches.py: hash lookups on the tag and the configured
properties, then only the residual conditions of the candidates), and each matching group gets an entry in the `matches`
family: `group · topic · queue · offset`, written in the same batch as the message. A filtered
group's receive then reads its matches instead of scanning the log and evaluating every entry:
a group that wants 1 % of a topic reads 1 % of it.

Offsets below the registration (`indexed_from`, per queue) were written before the index knew
the group; receive scans and evaluates those. Changing a group's filter starts a new
registration: the old matches go (one range delete), the new filter applies from then on. Groups
that take everything are not registered and read the log directly.

Match entries go once the group consumed past them (`trim`), with the messages retention removes
(broker/retention.py), and all of a group's at once when it idles: a registration whose POP
position has not moved for `idle_group_matches_s` is dropped, and the group's next receive
registers it again, evaluating what came meanwhile. A registration that goes is retired in place
(nothing indexed): a receive still holding it scans and evaluates instead of reading matches.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from rockmq.bounded_cache import BoundedCache
from rockmq.broker.context import BrokerContext
from rockmq.broker.matches import MatchIndex
from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.filter.record_filter import IllegalExpression, RecordFilter, accept_all, compile_filter
from rockmq.filter.tags import MAX_LENGTH, check_size
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError, over_limit
from rockmq.store import keys
from rockmq.store.db import Batch
from rockmq.store.schema import Family

log = logging.getLogger(__name__)
UNINDEXED = 2**63  # `indexed_from` of a queue nothing is indexed for: scan and evaluate it all


# Compiled filters by (expression, sql). Bounded in bytes, not only in entries: a compiled filter
# keeps tens of bytes per character of its expression (tags' sets, SQL92's closures), measured
# with tracemalloc at up to ~54 for the largest expressions allowed (filter/tags.py MAX_LENGTH).
FILTER_CACHE_ENTRIES = 4096
FILTER_CACHE_BYTES = 16 << 20
_BYTES_PER_CHAR, _BYTES_PER_FILTER = 64, 1024


def _weight(key: tuple[str, bool], accept: RecordFilter) -> int:
    return _BYTES_PER_FILTER + _BYTES_PER_CHAR * len(key[0])


_cache: BoundedCache[tuple[str, bool], RecordFilter] = BoundedCache(FILTER_CACHE_ENTRIES, FILTER_CACHE_BYTES, _weight)


def _compiled(expression: str, sql: bool) -> RecordFilter:
    """The compiled filter, from the cache when one was compiled lately; its size checked first,
    so an oversized expression is never parsed nor held."""
    check_size(expression, tags=not sql)
    key = (expression, sql)
    accept = _cache.get(key)
    if accept is None:
        accept = compile_filter(expression, sql)
        _cache.put(key, accept)
    return accept


def record_filter(expr: pb.FilterExpression) -> RecordFilter:
    """A subscription's filter (TAG when no type is given), or ILLEGAL_FILTER_EXPRESSION saying
    what is wrong and where; it quotes the expression only when that is within MAX_LENGTH."""
    sql = expr.type == pb.SQL
    try:
        return _compiled(expr.expression, sql)
    except IllegalExpression as e:
        quoted = f" {expr.expression!r}" if len(expr.expression) <= MAX_LENGTH else ""
        raise BrokerError(pb.ILLEGAL_FILTER_EXPRESSION, f"bad {'SQL92' if sql else 'tag'} expression{quoted}: {e}") from None


@dataclass
class Subscription:
    group_id: int
    topic_id: int
    sql: bool
    expression: str
    indexed_from: list[int]  # per queue: the first offset whose matches are indexed
    accept: RecordFilter

    def same_filter(self, expr: pb.FilterExpression) -> bool:
        return self.sql == (expr.type == pb.SQL) and self.expression == expr.expression


class Subscriptions:
    def __init__(self, ctx: BrokerContext, matches: MatchIndex) -> None:
        self.ctx = ctx
        self.matches = matches  # the queue logs' index of appends: filled from the registrations
        self._subs: dict[tuple[int, int], Subscription] = {}
        self._per_group: dict[int, int] = {}  # group id -> its subscriptions (at most max_subscriptions_per_group)
        self._trimmed: dict[tuple[int, int, int], int] = {}  # (group, topic, queue) -> matches dropped below
        # (group, topic) -> its POP positions when `trim` last saw them move, and when (monotonic s)
        self._moved: dict[tuple[int, int], tuple[tuple[int, ...], float]] = {}
        for _, raw in ctx.store.scan_prefix(Family.META, keys.SUBSCRIPTION_PREFIX):
            data = json.loads(raw)
            try:
                accept = _compiled(data["expression"], data["sql"])
            except IllegalExpression:  # an expression a newer grammar refuses: drop it
                continue
            self._add(Subscription(data["group_id"], data["topic_id"], data["sql"], data["expression"],
                                   data["indexed_from"], accept))

    def __len__(self) -> int:
        return len(self._subs)

    def groups_by_topic(self) -> dict[int, list[int]]:
        """topic id -> the groups registered on it (whose matches it holds)."""
        out: dict[int, list[int]] = {}
        for gid, tid in self._subs:
            out.setdefault(tid, []).append(gid)
        return out

    def resolve(self, group: GroupConfig, topic: TopicConfig, expr: pb.FilterExpression) -> Subscription | None:
        """The group's subscription to the topic under `expr` (None: it takes everything),
        registering it, or replacing a different one, on the way."""
        current = self._subs.get((group.id, topic.id))
        if current is not None and current.same_filter(expr):
            return current
        accept = record_filter(expr)
        if not self.ctx.writable:  # a replica or a fenced primary registers nothing: filter as asked, without the index
            return None if accept is accept_all else Subscription(group.id, topic.id, expr.type == pb.SQL,
                                                                  expr.expression, [UNINDEXED] * topic.queues, accept)
        if accept is accept_all:
            if current is not None:
                self._unregister(current)
            return None
        most = self.ctx.settings.max_subscriptions_per_group
        if current is None and self._per_group.get(group.id, 0) >= most:
            raise over_limit(f"group {group.name!r} cannot subscribe to {topic.name!r} with a filter",
                             "max_subscriptions_per_group", most,
                             "subscribe without a filter, use another group, or raise max_subscriptions_per_group")
        indexed_from = [self.ctx.logs.max_offset(topic.id, q) for q in range(topic.queues)]
        sub = Subscription(group.id, topic.id, expr.type == pb.SQL, expr.expression, indexed_from, accept)
        batch = self.ctx.store.batch()
        if current is not None:
            self._remove(current)
            _drop_matches(batch, group.id, topic.id)
        _record(batch, sub)
        self.ctx.store.write(batch)
        self._add(sub)
        log.info("group %s subscribes to %s with %s %r", group.name, topic.name, "SQL92" if sub.sql else "tags",
                 sub.expression)
        return sub

    def grown(self, topic: TopicConfig) -> None:
        """The topic has more queues now (`rockmq topic update --queues`): its registrations cover them.
        A new queue's matches were indexed from its first append (the index is per topic): from offset 0."""
        batch = self.ctx.store.batch()
        for sub in [s for s in self._subs.values() if s.topic_id == topic.id and len(s.indexed_from) < topic.queues]:
            sub.indexed_from.extend([0] * (topic.queues - len(sub.indexed_from)))
            _record(batch, sub)
        self.ctx.store.write(batch)

    def forget_topic(self, topic_id: int) -> None:
        for sub in [s for s in self._subs.values() if s.topic_id == topic_id]:
            self._unregister(sub)

    def forget_group(self, group_id: int, topic_id: int | None = None) -> None:
        """A group's registrations (on one topic, or all) and what they matched: the group was
        deleted, or reset to where the trimmed matches no longer reach (its next receive registers
        again and evaluates what is below)."""
        for sub in [s for s in self._subs.values() if s.group_id == group_id and topic_id in (None, s.topic_id)]:
            self._unregister(sub)

    def _unregister(self, sub: Subscription) -> None:
        batch = self.ctx.store.batch()
        self._retire(batch, sub)
        self.ctx.store.write(batch)

    def _retire(self, batch: Batch, sub: Subscription) -> None:
        batch.delete(Family.META, keys.subscription_meta(sub.group_id, sub.topic_id))
        _drop_matches(batch, sub.group_id, sub.topic_id)
        self._remove(sub)

    def _add(self, sub: Subscription) -> None:
        self._subs[(sub.group_id, sub.topic_id)] = sub
        self._per_group[sub.group_id] = self._per_group.get(sub.group_id, 0) + 1
        self.matches.add(sub.topic_id, sub.group_id, sub.sql, sub.expression)

    def _remove(self, sub: Subscription) -> None:
        del self._subs[(sub.group_id, sub.topic_id)]
        left = self._per_group.pop(sub.group_id) - 1
        if left:
            self._per_group[sub.group_id] = left
        self.matches.remove(sub.topic_id, sub.group_id, sub.sql)
        self._moved.pop((sub.group_id, sub.topic_id), None)
        for qid in range(len(sub.indexed_from)):
            self._trimmed.pop((sub.group_id, sub.topic_id, qid), None)
        sub.indexed_from[:] = [UNINDEXED] * len(sub.indexed_from)  # retired: a receive holding it evaluates

    def trim(self, pop_offset: Callable[[int, int, int], int], now: float | None = None) -> None:
        """Drop match entries below each filtered group's pop offset: receive reads from there on
        (a seek, no tombstones to wade through), so the garbage is only space; one range delete
        per queue now and then keeps it small. A registration whose positions did not move for
        `idle_group_matches_s` (monotonic `now`) goes with all its matches."""
        now = time.monotonic() if now is None else now
        idle_s = self.ctx.settings.idle_group_matches_s
        batch = self.ctx.store.batch()
        for sub in list(self._subs.values()):
            positions = tuple(pop_offset(sub.group_id, sub.topic_id, qid) for qid in range(len(sub.indexed_from)))
            key = (sub.group_id, sub.topic_id)
            moved = self._moved.get(key)
            if moved is None or moved[0] != positions:
                self._moved[key] = (positions, now)
            elif now - moved[1] >= idle_s:
                if self.ctx.store.first_key(Family.MATCHES, *_match_range(*key)) is None:
                    self._moved[key] = (positions, now)  # idle, but nothing to free: it stays
                    continue
                group, topic = self.ctx.meta.groups_by_id.get(sub.group_id), self.ctx.meta.topics_by_id.get(sub.topic_id)
                log.info("group %s has not consumed %s for %d s: its filter's matches are dropped (indexed again from "
                         "its next receive)", group.name if group else sub.group_id, topic.name if topic else sub.topic_id,
                         now - moved[1])
                self._retire(batch, sub)
                continue
            for qid, upto in enumerate(positions):
                if upto > self._trimmed.get((sub.group_id, sub.topic_id, qid), 0):
                    batch.delete_range(Family.MATCHES, keys.match_key(sub.group_id, sub.topic_id, qid, 0),
                                       keys.match_key(sub.group_id, sub.topic_id, qid, upto))
                    self._trimmed[(sub.group_id, sub.topic_id, qid)] = upto
        self.ctx.store.write(batch)


def _match_range(group_id: int, topic_id: int) -> tuple[bytes, bytes]:
    """The key range of a group's matches in a topic."""
    prefix = keys.match_prefix(group_id, topic_id)
    return prefix, keys.prefix_end(prefix)


def _record(batch: Batch, sub: Subscription) -> None:
    """Put the registration into `batch` (read back at start)."""
    batch.put(Family.META, keys.subscription_meta(sub.group_id, sub.topic_id), json.dumps({
        "group_id": sub.group_id, "topic_id": sub.topic_id, "sql": sub.sql, "expression": sub.expression,
        "indexed_from": sub.indexed_from}).encode())


def _drop_matches(batch: Batch, group_id: int, topic_id: int) -> None:
    batch.delete_range(Family.MATCHES, *_match_range(group_id, topic_id))
