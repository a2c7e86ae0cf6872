"""A server's log stays bounded whatever clients send: each kind of line (its logger, level and
message template) is written at most `BURST` times a second, and the next one written says how many
like it were left out. Installed on the log handlers of `rockmq serve` and `rockmq namesrv`, so it
covers every logger (ours, the audit's, gRPC's) in one place, with no check at each call site."""

from __future__ import annotations

import logging
import time

WINDOW_S = 1.0
BURST = 5  # lines of one kind per window: a few distinct events still show, a flood does not
GRPC_CORE_LOGGER = "grpc._cython.cygrpc"
MAX_KINDS = 4096  # message templates are few (written in code); this bounds a template built from input


class RateLimit(logging.Filter):
    """At most `burst` records per kind per `window_s`; the next one passed carries the count left out."""

    def __init__(self, window_s: float = WINDOW_S, burst: int = BURST) -> None:
        super().__init__()
        self.window_s, self.burst = window_s, burst
        self._kinds: dict[tuple[str, int, object], list[float | int]] = {}  # kind -> [window start, written, left out]

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.name, record.levelno, record.msg)
        now = time.monotonic()
        state = self._kinds.get(kind)
        if state is None:
            if len(self._kinds) >= MAX_KINDS:
                self._kinds.clear()
            state = self._kinds[kind] = [now, 0, 0]
        elif now - state[0] >= self.window_s:
            state[0], state[1] = now, 0
        if state[1] >= self.burst:
            state[2] += 1
            return False
        state[1] += 1
        if state[2]:
            record.msg = f"{record.msg} [{state[2]} more like this left out]"
            state[2] = 0
        return True


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


def limit_handlers(logger: logging.Logger) -> None:
    """Rate-limit every handler of `logger` (the root logger: everything a server writes), gRPC's
    lines for a client gone mid-stream made one line first."""
    for handler in logger.handlers:
        handler.addFilter(ClientGone())
        handler.addFilter(RateLimit())
