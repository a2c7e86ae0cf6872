"""The overview's live charts: a series of (time, value) points in, an inline SVG line out, with its axes'
labels (units, and times with their zone) as HTML beside it, so the text stays readable however wide the
screen (the SVG stretches: a phone's 390 px as a laptop's).

The served page already holds each chart (no script needed to see it); the overview's script polls
/ui/api/overview, whose `charts` carry each chart's `points` and its labels (`json`), and sets them:
the drawing is computed here only, the script copies it in. Pure."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from html import escape

from rockmq.ui.history import SPAN_S, Series
from rockmq.ui.models import format_count, format_rate

WIDTH = int(SPAN_S)  # the SVG's user units across: one a second
HEIGHT = 100


@dataclass(frozen=True)
class Chart:
    """A chart's id and title; the rest is what the script sets, by the class of the element showing it."""

    id: str
    title: str
    points: str  # the SVG polyline's points
    last: str  # the newest value, with its unit
    top: str  # the value axis's top, with its unit
    start: str  # the time axis's ends, with their zone
    end: str

    def json(self) -> dict[str, str]:
        """What /ui/api/overview carries of it (all but id and title)."""
        return {k: v for k, v in asdict(self).items() if k not in ("id", "title")}


def nice_top(value: float) -> float:
    """The value axis's top: 1, 2 or 5 times a power of ten, at least `value` (1 for an empty chart)."""
    if value <= 1:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(float(m * power) for m in (1, 2, 5, 10) if m * power >= value)


def clock(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M UTC")


def chart(id_: str, title: str, values: list[tuple[int, float]], now_ms: int, unit: Callable[[float], str]) -> Chart:
    """The last SPAN_S before `now_ms` of `values`, right-aligned on now; `unit` words a value."""
    start_ms = now_ms - int(SPAN_S * 1000)
    shown = [(at, v) for at, v in values if at >= start_ms]
    top = nice_top(max((v for _, v in shown), default=0.0))
    points = " ".join(f"{(at - start_ms) / 1000:.0f},{HEIGHT - v / top * HEIGHT:.1f}" for at, v in shown)
    last = unit(shown[-1][1]) if shown else "-"
    return Chart(id_, title, points, last, unit(top), clock(start_ms), clock(now_ms))


def charts(series: Series, now_ms: int) -> list[Chart]:
    """The overview's three: messages in and out per second, and the lag of every group summed."""
    return [chart("chart-in", "Messages in", series.rate_in, now_ms, format_rate),
            chart("chart-out", "Messages out", series.rate_out, now_ms, format_rate),
            chart("chart-lag", "Consumer lag", series.lag, now_ms, lambda v: format_count(int(v)))]


def html(c: Chart) -> str:
    return (f'<figure class="chart" id="{c.id}"><figcaption>{escape(c.title)} <span class="last">{escape(c.last)}'
            f'</span></figcaption><div class="plot"><span class="top">{escape(c.top)}</span>'
            f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" preserveAspectRatio="none" role="img" '
            f'aria-label="{escape(c.title)}, the last 15 minutes">'
            f'<line x1="0" y1="{HEIGHT / 2:g}" x2="{WIDTH}" y2="{HEIGHT / 2:g}"/>'
            f'<polyline points="{c.points}"/></svg><span class="zero">0</span></div>'
            f'<div class="axis"><span class="start">{escape(c.start)}</span><span class="end">{escape(c.end)}</span>'
            f"</div></figure>")
