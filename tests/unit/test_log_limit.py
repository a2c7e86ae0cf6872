"""log_limit.RateLimit: each kind of line at most BURST times a window per user and source, and a
count of those left out told per source without waiting for more lines;
log_limit.ClientGone: gRPC's traceback for a frame written to a stream whose client went away, one line."""

from __future__ import annotations

import logging
import sys
import time

from grpc._cython import cygrpc

from rockmq.log_escape import AUDIT_FIELDS
from rockmq.plumbing.log_limit import GRPC_CORE_LOGGER, ClientGone, RateLimit, tell_left_out


def _record(msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("rockmq.test", logging.WARNING, __file__, 1, msg, args, None)


def test_a_flood_of_one_kind_is_bounded_and_counted():
    limit = RateLimit(window_s=3600, burst=2)
    passed = [r for r in (_record("bad request from %s", i) for i in range(1000)) if limit.filter(r)]
    assert len(passed) == 2
    assert limit.filter(_record("another kind %s", 1))  # other kinds are not held back


def _audit(event: str, user: str, source: str) -> logging.LogRecord:
    """An audit line as auth/audit.py makes it: its fields ride on the record."""
    line = logging.LogRecord("rockmq.audit", logging.WARNING, __file__, 1, f"{event} who=%s from=%s", (user, source), None)
    setattr(line, AUDIT_FIELDS, {"event": event, "who": user, "from": source})
    return line


def test_a_flood_of_one_user_hides_no_other_user_nor_source():
    """Issue 32 §13: one bucket per template let 5 anonymous failures a second hide everyone's."""
    limit = RateLimit(window_s=3600, burst=2, source_burst=4)
    flood = [limit.filter(_audit("authentication-failed", "anonymous", "10.0.0.9")) for _ in range(50)]
    assert flood.count(True) == 2
    assert limit.filter(_audit("authentication-failed", "bob", "10.0.0.9"))  # the same source, another user
    assert limit.filter(_audit("authentication-failed", "anonymous", "10.0.0.1"))  # the same user, another source


def test_many_claimed_user_names_from_one_source_stay_bounded():
    limit = RateLimit(window_s=3600, burst=2, source_burst=4)
    passed = [limit.filter(_audit("authentication-failed", f"user{i}", "10.0.0.9")) for i in range(100)]
    assert passed.count(True) == 4
    assert limit.filter(_audit("authentication-failed", "bob", "10.0.0.1"))  # another source still shows


def test_the_summary_says_per_source_how_many_were_left_out_and_for_whom():
    limit = RateLimit(window_s=3600, burst=1, source_burst=10)
    for _ in range(4):
        limit.filter(_audit("authentication-failed", "anonymous", "10.0.0.9"))
    for _ in range(3):
        limit.filter(_audit("authorization-refused", "bob", "10.0.0.9"))
    for i in range(3):
        limit.filter(_record("bad request from %s", i))
    told = limit.summaries()
    lines = {r.getMessage() for r in told}
    assert lines == {'lines-left-out from="10.0.0.9" lines=5 '
                     'of="authentication-failed by anonymous: 3; authorization-refused by bob: 2"',
                     'lines-left-out lines=2 of="rockmq.test: bad request from %s: 2"'}, lines
    assert limit.summaries() == []  # each told once
    assert all(limit.filter(r) for r in told)  # a summary is never held back itself


def test_left_out_lines_are_told_without_more_traffic():
    limit = RateLimit(window_s=3600, burst=1)
    told: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            told.append(record.getMessage())

    handler = Collect()
    handler.addFilter(limit)
    for _ in range(3):
        handler.handle(_audit("authentication-failed", "anonymous", "10.0.0.9"))
    tell_left_out(limit, handler, every_s=0.05)
    deadline = time.monotonic() + 5
    while len(told) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert told[1:] == ['lines-left-out from="10.0.0.9" lines=2 of="authentication-failed by anonymous: 2"'], told


def test_a_write_to_a_stream_whose_client_went_away_is_one_warning_line():
    """What gRPC logs when a server stream's client goes away as a frame is written (the fuzzer's
    Follow streams ending at their deadline): it was an ERROR with a traceback."""
    try:
        raise cygrpc.ExecuteBatchError("Failed \"execute_batch\"")
    except cygrpc.ExecuteBatchError:
        record = logging.LogRecord(GRPC_CORE_LOGGER, logging.ERROR, __file__, 1, "ExecuteBatchError raised in core by "
                                   "servicer method [%s]", ("/rockmq.replication.v1.Replication/Follow",), sys.exc_info())
    assert ClientGone().filter(record)
    text = logging.Formatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert text == ("WARNING grpc._cython.cygrpc: ExecuteBatchError raised in core by servicer method "
                    "[/rockmq.replication.v1.Replication/Follow]: the client went away mid-stream"), text
    other = logging.LogRecord(GRPC_CORE_LOGGER, logging.ERROR, __file__, 1, "boom", (), (ValueError, ValueError(), None))
    assert ClientGone().filter(other) and other.exc_info is not None  # any other error keeps its traceback
