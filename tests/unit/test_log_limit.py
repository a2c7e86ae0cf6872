"""log_limit.RateLimit: each kind of line at most BURST times a window, then a count of those left out."""

from __future__ import annotations

import logging

from rockmq.log_limit import RateLimit


def _record(msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("rockmq.test", logging.WARNING, __file__, 1, msg, args, None)


def test_a_flood_of_one_kind_is_bounded_and_counted():
    limit = RateLimit(window_s=3600, burst=2)
    passed = [r for r in (_record("bad request from %s", i) for i in range(1000)) if limit.filter(r)]
    assert len(passed) == 2
    assert limit.filter(_record("another kind %s", 1))  # other kinds are not held back


def test_the_next_window_says_how_many_were_left_out():
    limit = RateLimit(window_s=0.0, burst=1)
    limit.window_s = 3600
    assert limit.filter(_record("x %s", 1))
    assert not limit.filter(_record("x %s", 2)) and not limit.filter(_record("x %s", 3))
    limit.window_s = 0.0
    shown = _record("x %s", 4)
    assert limit.filter(shown) and shown.getMessage() == "x 4 [2 more like this left out]"
