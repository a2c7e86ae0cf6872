"""Wall-clock milliseconds: the broker's one notion of "now" for deadlines and timestamps."""

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000
