"""Page models: the admin calls' replies (and the counters' rates) turned into what each page shows,
cells already worded with their units. Pure, so each page's content is tested without a broker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote

from rockmq.protocol import admin
from rockmq.protocol.shards import shard_labels
from rockmq.units import MiB

PAGE_SIZE = 50  # rows a list page shows
DOWN_AFTER_MS = 30_000  # a broker the name servers last heard from longer ago shows as down


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: list[list[Cell]]


@dataclass(frozen=True)
class Cell:
    """A cell's text, and where it links to ("" for none)."""

    text: str
    href: str = ""


@dataclass(frozen=True)
class Overview:
    brokers: Table
    rate_in: str  # "12.5 msg/s"
    as_of: str


@dataclass(frozen=True)
class Listing:
    """A list page: its table, the filter it shows, and its page of how many."""

    table: Table
    filter: str
    page: int
    pages: int
    total: int


def href(kind: str, name: str) -> str:
    """A topic's or group's page ("topics" or "groups"); names such as %RETRY%G quoted."""
    return f"/ui/{kind}/{quote(name, safe='')}"


def format_time(ms: int) -> str:
    """A time with its zone (UTC: the same on every viewer's screen)."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def format_bytes(n: float) -> str:
    for unit, size in (("GiB", 1024 * MiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def format_rate(per_s: float) -> str:
    return f"{per_s:.1f} msg/s"


def format_count(n: int, unit: str = "msg") -> str:
    return f"{n:,} {unit}"


def format_seconds(ms: int) -> str:
    return f"{ms / 1000:.1f} s"


def overview(cluster: admin.ClusterInfo, rate_in: float, storage: dict[str, float], now_ms: int) -> Overview:
    """Every broker the answering one knows (itself alone without name servers), each primary followed
    by the replicas it registered: its role, its shard of a `--workers` server, whether it was heard
    from lately (a replica: how far behind it is), its disk use (known for the answering broker, or
    each shard of a `--workers` server), its epoch and endpoint."""
    rows, shard = [], shard_labels(cluster.brokers)
    for b in sorted(cluster.brokers, key=lambda b: b.name):
        up = b.last_seen_ms == 0 or now_ms - b.last_seen_ms <= DOWN_AFTER_MS
        disk = storage.get(b.name, storage.get("") if b.name == cluster.broker else None)
        rows.append([Cell(b.name), Cell("primary"), Cell(shard[b.name]), Cell("up" if up else "down"),
                     Cell("-" if disk is None else format_bytes(disk)), Cell(str(b.epoch)), Cell(b.endpoint)])
        rows.extend([Cell(b.name), Cell("replica"), Cell(shard[b.name]),
                     Cell(f"up, {format_count(r.lag_messages)} ({r.lag_seconds:.1f} s) behind"), Cell("-"),
                     Cell(str(b.epoch)), Cell(r.endpoint)] for r in b.replicas)
    return Overview(Table(("Broker", "Role", "Shard", "State", "Disk use", "Epoch", "Endpoint"), rows),
                    format_rate(rate_in), format_time(now_ms))


@dataclass(frozen=True)
class Page:
    """The names of one page of a list, which page it is (1-based) of how many, and how many names match."""

    names: list[str]
    number: int
    pages: int
    total: int


def page_of(names: Sequence[str], filter_text: str, page: int) -> Page:
    """The page asked (kept within the pages there are) of the names containing `filter_text`."""
    matching = [n for n in names if filter_text in n]
    pages = max(1, -(-len(matching) // PAGE_SIZE))
    page = min(max(page, 1), pages)
    return Page(matching[(page - 1) * PAGE_SIZE: page * PAGE_SIZE], page, pages, len(matching))


def topics(described: list[admin.TopicInfo], rates: dict[str, float], filter_text: str, page: Page) -> Listing:
    rows = [[Cell(t.name, href("topics", t.name)), Cell(str(t.queue_count)),
             Cell(format_count(sum(q.max_offset - q.min_offset for q in t.queues))),
             Cell(format_rate(rates.get(t.name, 0.0)))] for t in described]
    return Listing(Table(("Topic", "Queues", "Messages", "In/s"), rows), filter_text, page.number, page.pages, page.total)


def queues(topic: admin.TopicInfo) -> Table:
    rows = [[Cell(q.broker), Cell(str(q.queue_id)), Cell(str(q.min_offset)), Cell(str(q.max_offset)),
             Cell(format_count(q.max_offset - q.min_offset))]
            for q in sorted(topic.queues, key=lambda q: (q.broker, q.queue_id))]
    return Table(("Broker", "Queue", "Min offset", "Max offset", "Messages"), rows)


def topic_groups(topic: str, groups: list[admin.GroupInfo]) -> Table:
    """The groups with a position on `topic`, and their lag on it."""
    rows = []
    for g in sorted(groups, key=lambda g: g.name):
        on = [q for q in g.queues if q.topic == topic]
        if on:
            rows.append([Cell(g.name, href("groups", g.name)), Cell(format_count(sum(q.lag for q in on))),
                         Cell(format_seconds(max(q.lag_ms for q in on))), Cell(format_count(sum(q.inflight for q in on)))])
    return Table(("Group", "Lag", "Lag time", "In flight"), rows)


def groups(described: list[admin.GroupInfo], filter_text: str, page: Page) -> Listing:
    rows = [[Cell(g.name, href("groups", g.name)), Cell(format_count(sum(q.lag for q in g.queues))),
             Cell(format_seconds(max((q.lag_ms for q in g.queues), default=0))), Cell(format_count(g.inflight)),
             Cell(g.consume_mode or "-")] for g in described]
    return Listing(Table(("Group", "Lag", "Lag time", "In flight", "Consume mode"), rows), filter_text, page.number,
                   page.pages, page.total)


def lag(group: admin.GroupInfo) -> Table:
    rows = [[Cell(q.topic, href("topics", q.topic)), Cell(q.broker), Cell(str(q.queue_id)), Cell(str(q.pop_offset)),
             Cell("-" if q.committed_offset < 0 else str(q.committed_offset)), Cell(str(q.max_offset)),
             Cell(format_count(q.lag)), Cell(format_seconds(q.lag_ms)), Cell(format_count(q.inflight))]
            for q in sorted(group.queues, key=lambda q: (q.topic, q.broker, q.queue_id))]
    return Table(("Topic", "Broker", "Queue", "Pop offset", "Committed", "Max offset", "Lag", "Lag time", "In flight"),
                 rows)
