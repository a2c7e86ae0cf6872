"""The overview's live parts (issue 31): the charts of the last 15 minutes (history.py, charts.py), the top
lagging groups and the alerts that would fire (panels.py, alerts.py), from the broker's own counters.

`Live` keeps the charts' ring and the alerts' baselines. With a broker's cheap totals (`sample`) it adds a
point every STEP_S for as long as the HTTP port serves, with the lag every LAG_EVERY points, or from the
last reading of the counters if one was taken within STEP_S (someone looks: that lag is computed already).
Without (a `--workers` server) each reading of the counters taken while someone looks is a point."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace

from aiohttp import web

from rockmq.ui import alerts, charts, panels, render
from rockmq.ui.counters import LAG, LAG_MS, Reading
from rockmq.ui.history import LAG_EVERY, STEP_S, History, Sample, Totals

log = logging.getLogger(__name__)
KEEP = alerts.METRICS | {LAG, LAG_MS}  # the samples a reading keeps for these parts


@dataclass
class Live:
    sample: Sample | None = None
    history: History = field(default_factory=History)
    baselines: alerts.Baselines = field(default_factory=alerts.Baselines)
    seen_lag: tuple[float, float] | None = None  # (monotonic s, lag) of the last reading of the counters

    def read(self, reading: Reading) -> None:
        """A reading of the counters: the alerts' baselines, and a point when no cheap totals come."""
        self.baselines.add(reading.at, reading.series)
        self.seen_lag = (reading.at, reading.lag)
        points = self.history.points
        if self.sample is None and (not points or reading.at - points[-1].at >= STEP_S):  # the ring's spacing
            self.history.add(_now_ms(), reading.at, Totals(reading.messages_in, reading.messages_out, reading.lag))

    async def sampling(self, app: web.Application) -> AsyncIterator[None]:
        """aiohttp's cleanup context: a point of the cheap totals every STEP_S (if there are any)."""

        async def loop(sample: Sample) -> None:
            for step in itertools.count():
                try:
                    totals = await sample(step % LAG_EVERY == 0)
                    now = time.monotonic()
                    if totals.lag is None and self.seen_lag and now - self.seen_lag[0] < STEP_S:
                        totals = replace(totals, lag=self.seen_lag[1])
                    self.history.add(_now_ms(), now, totals)
                except Exception:  # a broker being replaced now may serve next time: the loop goes on
                    log.exception("reading the totals for the dashboard's charts")
                await asyncio.sleep(STEP_S)

        task = asyncio.create_task(loop(self.sample)) if self.sample else None
        yield
        if task:
            task.cancel()

    def charts(self) -> list[charts.Chart]:
        return charts.charts(self.history.series(), _now_ms())

    def html(self, reading: Reading | None) -> str:
        """The overview's charts, top lagging groups and alerts (`reading`: the counters read lately)."""
        series = reading.series if reading else {}
        fired = alerts.firing(series, self.baselines, time.monotonic())
        return (f'<h2>Last 15 minutes</h2><div class="charts">{"".join(charts.html(c) for c in self.charts())}</div>'
                f'<h2>Top lagging groups</h2>{render.table("top-lag", panels.top_lag(series))}'
                f"<h2>Alerts that would fire</h2>"
                f'<p class="muted">The conditions of rockmq\'s alert rules (deploy/prometheus/rules.yml) that hold '
                f"now; Prometheus fires once one has held for its time.</p>"
                + (render.table("alerts", panels.alerts(fired)) if fired
                   else '<p id="no-alerts" class="done">No alert would fire.</p>'))

    def json(self) -> dict[str, dict[str, str]]:
        """What the overview's script sets: each chart's drawing and labels, by the chart's id."""
        return {c.id: c.json() for c in self.charts()}


def _now_ms() -> int:
    return int(time.time() * 1000)
