"""When the supervisor restarts a shard that died (pure: the caller keeps the clock).

The first death of a shard that served for a while is restarted at once: its port is free again,
and a quick restart keeps its queues in routes, so FIFO message groups stay where they were. A
shard that keeps dying waits longer each time, up to CAP_S, and one that never gets as far as
serving MAX_FAILED_STARTS times in a row is given up on: its store or settings need an operator.
"""

from __future__ import annotations

from dataclasses import dataclass

FIRST_S = 0.5
CAP_S = 30.0
STABLE_S = 60.0  # a shard that served this long counts as healthy again
MAX_FAILED_STARTS = 5


class GiveUp(Exception):
    """A shard failed to start too often; the message is the one line to show."""


@dataclass
class Restarts:
    shard: str
    crashes: int = 0  # deaths since it last served STABLE_S
    failed_starts: int = 0  # starts in a row that ended before it served

    def next_delay(self, served_s: float | None) -> float:
        """The wait before restarting a shard that just died; `served_s`: how long it served
        (None: it died before serving)."""
        if served_s is None:
            self.failed_starts += 1
            if self.failed_starts >= MAX_FAILED_STARTS:
                raise GiveUp(f"shard {self.shard} failed to start {self.failed_starts} times in a row; giving up")
        else:
            self.failed_starts = 0
            if served_s >= STABLE_S:
                self.crashes = 0
        delay = 0.0 if self.crashes == 0 else min(CAP_S, FIRST_S * 2 ** (self.crashes - 1))
        self.crashes += 1
        return delay
