"""Match one message against many subscriptions by hash lookups instead of one evaluation each.

Most subscriptions pin a field to a few values (`MessageType = 'OrderPaid' AND ...`, `TAGS IN (...)`,
a tag expression `a||b`). For an indexed field, such a subscription sits in one bucket per value,
holding the residual left once that value is substituted (SqlFilter.bind); a message then costs one
dict lookup per indexed field plus the residuals of its bucket, most of which are cheap or already
TRUE. Subscriptions that pin none of the indexed fields go to a list evaluated for every message.
Pure logic; not thread-safe (the broker calls it from its event loop).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from collections.abc import Set as AbstractSet

from rockmq.filter.sql import TAGS, SqlFilter
from rockmq.filter.tags import parse_tags

Props = Mapping[str, str]
Matcher = Callable[[Props, str | None], bool]
Subscription = SqlFilter | str | AbstractSet[str] | None
"""A compiled SQL92 filter, a tag expression (`a||b`, `*`), a set of tags, or None for everything."""


def _tag_set(subscription: str | AbstractSet[str] | None) -> frozenset[str] | None:
    if subscription is None or isinstance(subscription, str):
        return parse_tags(subscription or "")
    return frozenset(subscription)


def matcher(subscription: Subscription) -> Matcher:
    """A predicate on (props, tag) for any kind of subscription."""
    if isinstance(subscription, SqlFilter):
        return subscription.matches
    tags = _tag_set(subscription)
    if tags is None:
        return lambda props, tag: True
    return lambda props, tag: tag in tags


def naive_match(subscriptions: Mapping[Hashable, Subscription], props: Props, tag: str | None) -> list[Hashable]:
    """Every subscription evaluated in turn: the reference the index must agree with."""
    return [key for key, sub in subscriptions.items() if matcher(sub)(props, tag)]


_MISSING = object()


class _Bucket:
    """Subscriptions pinned to one value of one field, with match-ready lists rebuilt after changes."""

    __slots__ = ("residuals", "ready")

    def __init__(self) -> None:
        self.residuals: dict[Hashable, SqlFilter | None] = {}  # None: nothing left to check
        # (keys that match, (key, check) pairs left to evaluate); None: to rebuild
        self.ready: tuple[list[Hashable], list[tuple[Hashable, Matcher]]] | None = None

    def refresh(self) -> tuple[list[Hashable], list[tuple[Hashable, Matcher]]]:
        self.ready = ([k for k, r in self.residuals.items() if r is None or r.always_true],
                      [(k, r.matches) for k, r in self.residuals.items() if r is not None and not r.always_true])
        return self.ready


class SubscriptionIndex:
    """Subscriptions by key (e.g. consumer group); `match` gives the keys a message satisfies."""

    def __init__(self, indexed_fields: Iterable[str] = (TAGS,)) -> None:
        self._fields = tuple(dict.fromkeys(indexed_fields))
        self._buckets: dict[str, dict[str, _Bucket]] = {f: {} for f in self._fields}
        self._placed: dict[Hashable, tuple[str | None, tuple[str, ...]]] = {}  # key -> (field, values)
        self._everything: dict[Hashable, None] = {}  # keys that match any message
        self._scan: dict[Hashable, Matcher] = {}  # keys evaluated for every message
        self._scan_list: list[tuple[Hashable, Matcher]] | None = []
        self._lookups = [(f, f == TAGS, self._buckets[f]) for f in self._fields]

    def __len__(self) -> int:
        return len(self._placed)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._placed

    @property
    def indexed_fields(self) -> tuple[str, ...]:
        return self._fields

    def add(self, key: Hashable, subscription: Subscription) -> None:
        """Add or replace the subscription of `key`."""
        self.remove(key)
        if isinstance(subscription, SqlFilter):
            self._add_sql(key, subscription)
            return
        tags = _tag_set(subscription)
        if tags is None:
            self._everything[key] = None
            self._placed[key] = (None, ())
        elif TAGS in self._buckets:
            self._place(key, TAGS, {t: None for t in tags})
        else:
            self._add_scan(key, lambda props, tag: tag in tags)

    def _add_sql(self, key: Hashable, flt: SqlFilter) -> None:
        if flt.always_true:
            self._everything[key] = None
            self._placed[key] = (None, ())
            return
        best: tuple[str, frozenset[str]] | None = None
        for field in self._fields:  # the field pinned to the fewest values
            values = flt.index_values(field)
            if values is not None and (best is None or len(values) < len(best[1])):
                best = (field, values)
        if best is not None:
            field, values = best
            self._place(key, field, {v: flt.bind(field, v) for v in values})
        elif flt.never_true:
            self._placed[key] = (None, ())
        else:
            self._add_scan(key, flt.matches)

    def _place(self, key: Hashable, field: str, residuals: Mapping[str, SqlFilter | None]) -> None:
        buckets = self._buckets[field]
        for value, residual in residuals.items():
            if residual is not None and residual.never_true:
                continue  # that value cannot match after all
            bucket = buckets.get(value)
            if bucket is None:
                bucket = buckets[value] = _Bucket()
            bucket.residuals[key] = residual
            bucket.ready = None
        self._placed[key] = (field, tuple(residuals))

    def _add_scan(self, key: Hashable, fn: Matcher) -> None:
        self._scan[key] = fn
        self._scan_list = None
        self._placed[key] = (None, ())

    def remove(self, key: Hashable) -> bool:
        """Forget `key`'s subscription; False if there was none."""
        placed = self._placed.pop(key, None)
        if placed is None:
            return False
        field, values = placed
        if field is not None:
            buckets = self._buckets[field]
            for value in values:
                bucket = buckets.get(value)
                if bucket is not None and bucket.residuals.pop(key, _MISSING) is not _MISSING:
                    if bucket.residuals:
                        bucket.ready = None
                    else:
                        del buckets[value]
        elif self._scan.pop(key, None) is not None:
            self._scan_list = None
        else:
            self._everything.pop(key, None)
        return True

    def match(self, props: Props, tag: str | None = None) -> list[Hashable]:
        """The keys whose subscription the message satisfies, each once, in no particular order."""
        out = list(self._everything)
        for field, is_tag, buckets in self._lookups:
            value = tag if is_tag else props.get(field)
            if value is None:
                continue
            bucket = buckets.get(value)
            if bucket is None:
                continue
            hits, checks = bucket.ready or bucket.refresh()
            out += hits
            for key, fn in checks:
                if fn(props, tag):
                    out.append(key)
        scan = self._scan_list
        if scan is None:
            scan = self._scan_list = list(self._scan.items())
        for key, fn in scan:
            if fn(props, tag):
                out.append(key)
        return out

    def stats(self) -> dict[str, int]:
        """Sizes, for logs and the benchmark: how much of the set is indexed."""
        return {
            "subscriptions": len(self._placed),
            "everything": len(self._everything),
            "scanned": len(self._scan),
            "buckets": sum(len(b) for b in self._buckets.values()),
            "bucket_entries": sum(len(x.residuals) for b in self._buckets.values() for x in b.values()),
        }
