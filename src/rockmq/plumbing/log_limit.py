"""A server's log stays bounded whatever clients send, and a flood cannot hide anyone else's line.

Each kind of line (its logger, level and message template) is written at most `BURST` times a
second per user and source (an audit line's `who` and `from`; log_escape.AUDIT_FIELDS), and at
most `SOURCE_BURST` times a second per source whatever users it names: fifty failures of one
stranger leave another user's failure (and the stranger's own first few) in the log (docs/security.md).
What is left out is counted, and every `SUMMARY_S` one line per source says how many lines were
left out and of which event and user, without waiting for more traffic to carry the count.
Installed on the log handlers of `rockmq serve` and `rockmq namesrv`, so it covers every logger
(ours, the audit's, gRPC's) in one place, with no check at each call site."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping

from rockmq.log_escape import AUDIT_FIELDS, clean, cut

WINDOW_S = 1.0
BURST = 5  # lines of one kind per user and source per window: a few distinct events still show, a flood does not
SOURCE_BURST = 4 * BURST  # lines of one kind per source per window, however many user names it claims
SUMMARY_S = 2.0  # how soon the lines left out are told
GRPC_CORE_LOGGER = "grpc._cython.cygrpc"
MAX_KINDS = 4096  # windows kept: templates are few (written in code), users and sources are not
MAX_SOURCES = 1024  # sources counted apart between two summaries; more count as OTHER_SOURCES
MAX_PER_SOURCE = 64  # (event, user) pairs counted apart per source; more count as OTHER_USERS
MAX_LISTED = 8  # (event, user) pairs a summary names; the rest it counts
OTHER_SOURCES, OTHER_USERS = "other sources", "other users"
SUMMARY = "lines_left_out"  # a record's attribute marking a summary: the limit lets it through
SUMMARY_EVENT = "lines-left-out"
OWN = None  # the "source" of a server's own lines (no audit fields): they are summed up together

Source = str | None
Kind = tuple[str, int, object]


class RateLimit(logging.Filter):
    """At most `burst` records per kind, user and source and `source_burst` per kind and source per
    `window_s`; `summaries()` gives the lines telling what was left out since it was last called."""

    def __init__(self, window_s: float = WINDOW_S, burst: int = BURST, source_burst: int = SOURCE_BURST,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window_s, self.burst, self.source_burst, self.clock = window_s, burst, source_burst, clock
        self._windows: dict[tuple[object, ...], list[float]] = {}  # key -> [window start, written]
        self._left_out: dict[Source, Counter[tuple[str, str]]] = {}  # source -> (event or template, user) -> lines
        self._lock = threading.Lock()  # records come from the event loop, gRPC's threads and executors

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, SUMMARY, False):
            return True
        kind: Kind = (record.name, record.levelno, record.msg)
        fields = getattr(record, AUDIT_FIELDS, None)
        user, source = _subject(fields)
        with self._lock:
            if self._admit(((kind, user, source), self.burst), ((kind, source), self.source_burst)):
                return True
            self._count(source, _label(record, fields), user)
        return False

    def _admit(self, *limits: tuple[tuple[object, ...], int]) -> bool:
        """Whether each key has room left in its window (then it is counted in each), windows that
        are over starting again."""
        now = self.clock()
        if len(self._windows) >= MAX_KINDS:
            self._forget_before(now)
        states = [self._windows.setdefault(key, [now, 0]) for key, _ in limits]
        for state in states:
            if now - state[0] >= self.window_s:
                state[0], state[1] = now, 0
        if any(state[1] >= burst for state, (_, burst) in zip(states, limits, strict=True)):
            return False
        for state in states:
            state[1] += 1
        return True

    def _forget_before(self, now: float) -> None:
        """Windows that are over hold nothing: dropped; if all are current (a flood of keys), all go."""
        current = {k: v for k, v in self._windows.items() if now - v[0] < self.window_s}
        self._windows = current if len(current) < MAX_KINDS // 2 else {}

    def _count(self, source: Source, label: str, user: str) -> None:
        if source not in self._left_out and len(self._left_out) >= MAX_SOURCES:
            source = OTHER_SOURCES
        counts = self._left_out.setdefault(source, Counter())
        if (label, user) not in counts and len(counts) >= MAX_PER_SOURCE:
            user = OTHER_USERS
        counts[label, user] += 1

    def summaries(self) -> list[logging.LogRecord]:
        """One line per source of lines left out since the last call (none if none was)."""
        with self._lock:
            left_out, self._left_out = self._left_out, {}
        return [summary(source, counts) for source, counts in left_out.items()]


def _subject(fields: Mapping[str, object] | None) -> tuple[str, Source]:
    """(user, source) an audit line is about; a server's own line is nobody's, from OWN."""
    if fields is None:
        return "", OWN
    return str(fields.get("who", "")), str(fields.get("from", ""))


def _label(record: logging.LogRecord, fields: Mapping[str, object] | None) -> str:
    """What kind of line was left out: the audit event, else the logger and template."""
    if fields is not None:
        return str(fields.get("event", ""))
    return f"{record.name}: {cut(str(record.msg), 80)}"


def summary(source: Source, counts: Counter[tuple[str, str]]) -> logging.LogRecord:
    """The line saying how many lines of `source` were left out, of which event and for whom (an
    audit line itself, its fields on the record); the server's own kinds under rockmq.plumbing.log_limit."""
    lines, of = sum(counts.values()), _listing(source, counts)
    line: dict[str, object]
    if source is OWN:
        line = {"name": "rockmq.plumbing.log_limit", "msg": f'{SUMMARY_EVENT} lines=%d of="%s"', "args": (lines, clean(of))}
    else:
        line = {"name": "rockmq.audit", "msg": f'{SUMMARY_EVENT} from="%s" lines=%d of="%s"',
                "args": (clean(source), lines, clean(of)),
                AUDIT_FIELDS: {"event": SUMMARY_EVENT, "from": source, "lines": lines, "of": of}}
    return logging.makeLogRecord({**line, "levelno": logging.WARNING, "levelname": "WARNING", SUMMARY: True})


def _listing(source: Source, counts: Counter[tuple[str, str]]) -> str:
    """`EVENT by USER: N; ...`, most first, at most MAX_LISTED named and the rest summed."""
    listed = counts.most_common(MAX_LISTED)
    of = "; ".join(f"{label}: {n}" if source is OWN else f"{label} by {user or 'nobody'}: {n}" for (label, user), n in listed)
    if len(counts) > MAX_LISTED:
        of += f"; {len(counts) - MAX_LISTED} more: {sum(counts.values()) - sum(n for _, n in listed)}"
    return of


class ClientGone(logging.Filter):
    """gRPC logs a frame it could not write because the stream's client went away (its deadline
    passed, it hung up) as an ERROR with a traceback (core's ExecuteBatchError). No fault of the
    server's and nothing to debug: one WARNING line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.name == GRPC_CORE_LOGGER and type(record.exc_info[1]).__name__ == "ExecuteBatchError":
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg = f"{record.msg}: the client went away mid-stream"
        return True


def tell_left_out(limit: RateLimit, handler: logging.Handler, every_s: float = SUMMARY_S) -> threading.Thread:
    """A thread writing `limit`'s summaries to `handler` every `every_s`: the count of a flood shows
    within seconds even when no more lines come to carry it."""

    def run() -> None:
        while True:
            time.sleep(every_s)
            for record in limit.summaries():
                handler.handle(record)

    thread = threading.Thread(target=run, name="log-left-out", daemon=True)
    thread.start()
    return thread


def limit_handlers(logger: logging.Logger) -> None:
    """Rate-limit every handler of `logger` (the root logger: everything a server writes), gRPC's
    lines for a client gone mid-stream made one line first, and tell what was left out."""
    for handler in logger.handlers:
        limit = RateLimit()
        handler.addFilter(ClientGone())
        handler.addFilter(limit)
        tell_left_out(limit, handler)
