"""Broker fault-latency avoidance (origins 001, RocketMQ's MQFaultStrategy). Pure, clock injected.

Each send's latency to a broker maps to a pause through two tables: a latency at or above
LATENCY_MS[i] makes the broker unavailable for PAUSE_MS[i]; a failure counts as the worst
latency. Queue selection skips paused brokers unless nothing else is left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

LATENCY_MS = (50, 100, 550, 1800, 3000, 5000, 15000)
PAUSE_MS = (0, 0, 2000, 5000, 6000, 10000, 30000)


class FaultAvoidance:
    def __init__(self, clock_ms: Callable[[], float], latency_ms: Sequence[int] = LATENCY_MS,
                 pause_ms: Sequence[int] = PAUSE_MS) -> None:
        if len(latency_ms) != len(pause_ms):
            raise ValueError("latency and pause tables must have the same length")
        self._clock = clock_ms
        self._latency = tuple(latency_ms)
        self._pause = tuple(pause_ms)
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
