"""The overview's charts' memory: messages in, messages out and consumer lag over the last 15 minutes, as
a fixed ring of points (POINTS, a point every STEP_S): a chart has its history the moment someone opens
the page, and the memory never grows.

A broker hands in its cheap totals (`Sample`: sums of what it counts anyway, without the per-series work
of a scrape), read every STEP_S whether or not anyone looks; the lag, which asks the store where every
group stands (tens of ms with 1,000 groups), every LAG_EVERY points only (bench/ui_bench.py measures
what an idle broker pays). A `--workers` server has only its shards' scrapes: its points are the readings taken
while someone looks (routes.py). Pure but for the clock the caller passes."""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rockmq.ui.counters import rate

STEP_S = 5.0  # a point every this many seconds
SPAN_S = 15 * 60.0  # what the charts show
POINTS = int(SPAN_S / STEP_S) + 1  # the ring: the span's points and the one before its first interval
LAG_EVERY = 6  # a broker's lag on every this many points (every 30 s)


@dataclass(frozen=True)
class Totals:
    """What the broker counted up to now (user topics), and every group's lag now (None: not read this time)."""

    messages_in: float
    messages_out: float
    lag: float | None


Sample = Callable[[bool], Awaitable[Totals]]  # takes whether to read the lag


@dataclass(frozen=True)
class Point:
    at_ms: int  # wall-clock ms: what the time axis shows
    at: float  # monotonic s: what a rate divides by
    totals: Totals


@dataclass(frozen=True)
class Series:
    """Each chart's (wall-clock ms, value) points, oldest first: rates between consecutive points."""

    rate_in: list[tuple[int, float]]
    rate_out: list[tuple[int, float]]
    lag: list[tuple[int, float]]


class History:
    def __init__(self) -> None:
        self.points: deque[Point] = deque(maxlen=POINTS)

    def add(self, at_ms: int, at: float, totals: Totals) -> None:
        self.points.append(Point(at_ms, at, totals))

    def series(self) -> Series:
        ins, outs = [], []
        for old, new in zip(self.points, list(self.points)[1:]):
            span = new.at - old.at
            if span > 0:
                ins.append((new.at_ms, rate(old.totals.messages_in, new.totals.messages_in, span)))
                outs.append((new.at_ms, rate(old.totals.messages_out, new.totals.messages_out, span)))
        return Series(ins, outs, [(p.at_ms, p.totals.lag) for p in self.points if p.totals.lag is not None])
