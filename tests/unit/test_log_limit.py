"""log_limit.RateLimit: each kind of line at most BURST times a window, then a count of those left out;
log_limit.ClientGone: gRPC's traceback for a frame written to a stream whose client went away, one line."""

from __future__ import annotations

import logging
import sys

from grpc._cython import cygrpc

from rockmq.log_limit import GRPC_CORE_LOGGER, ClientGone, RateLimit


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
