"""Broker fault-latency avoidance (RocketMQ's MQFaultStrategy; docs/client.md, "Producing"). Pure, clock injected.

Each send's latency to a broker maps to a pause through two tables: a latency at or above
latency_ms[i] makes the broker unavailable for pause_ms[i]; a failure counts as the worst
latency. Queue selection skips paused brokers unless nothing else is left. The producer takes
both tables (`fault_latency_ms=`, `fault_pause_ms=`); these are RocketMQ's defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

LATENCY_MS: tuple[float, ...] = (50, 100, 550, 1800, 3000, 5000, 15000)
PAUSE_MS: tuple[float, ...] = (0, 0, 2000, 5000, 6000, 10000, 30000)


def check_tables(latency_ms: Sequence[float], pause_ms: Sequence[float]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The tables as tuples; ValueError unless they are non-empty, of one length, non-negative and
    the latencies ascending (a latency's pause is the one of the largest bound it reaches)."""
    latency, pause = tuple(latency_ms), tuple(pause_ms)
    if not latency or len(latency) != len(pause):
        raise ValueError(f"fault latency and pause tables must be non-empty and of one length, got {latency} and {pause}")
    if min(*latency, *pause) < 0 or any(a >= b for a, b in zip(latency, latency[1:])):
        raise ValueError(f"fault latencies must ascend and no value may be negative, got {latency} and {pause}")
    return latency, pause


class FaultAvoidance:
    def __init__(self, clock_ms: Callable[[], float], latency_ms: Sequence[float] = LATENCY_MS,
                 pause_ms: Sequence[float] = PAUSE_MS) -> None:
        self._clock = clock_ms
        self._latency, self._pause = check_tables(latency_ms, pause_ms)
        self._until: dict[str, float] = {}  # broker -> available again at (ms)

    def record(self, broker: str, latency_ms: float, failed: bool = False) -> None:
        pause = self._pause[-1] if failed else 0
        if not failed:
            for bound, p in zip(reversed(self._latency), reversed(self._pause)):
                if latency_ms >= bound:
                    pause = p
                    break
        if pause:
            self._until[broker] = self._clock() + pause
        else:
            self._until.pop(broker, None)

    def available(self, broker: str) -> bool:
        until = self._until.get(broker)
        return until is None or self._clock() >= until
