"""Figures from tallies, ratios to ceilings, and the lines `rockmq bench` prints (pure: no I/O)."""

from __future__ import annotations

import math
import statistics
from typing import Any

from rockmq.bench.jobs import Tally

Figures = dict[str, Any]
PERCENTILES = (("p50_ms", 0.50), ("p90_ms", 0.90), ("p99_ms", 0.99), ("max_ms", 1.0))
CEILING_NAMES = {"null": "null broker", "null_fsync": "null broker + fsync"}
SOAK_SAMPLE_S = 10.0
SUMMED = frozenset({"errors", "prefill_errors"})  # any failure in any round shows
HIGHEST = frozenset({"broker_rss_peak_mib", "max_ms"})  # a peak is the peak of every round


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else 0.0


def per_message_us(cpu_s: float | None, messages: int) -> float | None:
    """CPU µs per message (None when unknown or nothing went through)."""
    return None if cpu_s is None or messages <= 0 else round(cpu_s * 1e6 / messages, 2)


def figures_of(tally: Tally) -> Figures:
    """The numbers every scenario reports."""
    return {
        "messages": tally.ok,
        "seconds": round(tally.seconds, 3),
        "messages_per_s": round(tally.ok / tally.seconds, 1),
        "requests_per_s": round(tally.requests / tally.seconds, 1),
        "errors": tally.errors,
        "error_samples": tally.samples,
        "client_cpu_pct": round(tally.client_cpu_pct, 1),
        "broker_cpu_pct": None if tally.broker_cpu_pct is None else round(tally.broker_cpu_pct, 1),
        "broker_cpu_us_per_msg": per_message_us(tally.broker_cpu_s, tally.ok),
    }


def with_percentiles(figures: Figures, latencies_ms: list[float]) -> Figures:
    ordered = sorted(latencies_ms)
    return figures | {name: round(percentile(ordered, q), 3) for name, q in PERCENTILES}


def combined(rounds: list[Figures]) -> Figures:
    """One set of figures from repeated rounds of a scenario: the median of each number (errors
    summed, peaks the highest), nested figures likewise, other values from the first round; with
    more than one round the rounds themselves under `rounds`."""
    if len(rounds) == 1:
        return rounds[0]
    out: Figures = {}
    for key, first in rounds[0].items():
        values = [r.get(key) for r in rounds]
        numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        if key == "error_samples":
            out[key] = list(dict.fromkeys(sample for v in values for sample in v or ()))[:5]
        elif len(numbers) < len(values):  # not a number in every round (None, a list, a dict)
            out[key] = combined(values) if all(isinstance(v, dict) for v in values) else first  # type: ignore[arg-type]
        elif key in SUMMED:
            out[key] = sum(numbers)
        elif key in HIGHEST:
            out[key] = max(numbers)
        else:
            out[key] = round(statistics.median(numbers), 3)
    return out | {"rounds": rounds}


def ratio(value: float | None, ceiling: float | None) -> float | None:
    """value / ceiling, or None when either is unknown or the ceiling is zero."""
    if value is None or ceiling is None or ceiling <= 0:
        return None
    return round(value / ceiling, 3)


def ratios(figures: Figures, ceiling: Figures) -> Figures:
    """A scenario against its ceiling: rate (1.0 = as fast as the ceiling), broker CPU per message
    (1.0 = as cheap) and, for latency runs, p50 and p99 (1.0 = as quick)."""
    out = {"rate": ratio(figures["messages_per_s"], ceiling["messages_per_s"]),
           "cpu_per_msg": ratio(figures["broker_cpu_us_per_msg"], ceiling["broker_cpu_us_per_msg"])}
    for name in ("p50", "p99"):
        if f"{name}_ms" in figures and f"{name}_ms" in ceiling:
            out[name] = ratio(figures[f"{name}_ms"], ceiling[f"{name}_ms"])
    return out


def _x(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f}x"


def _us(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f} us"


def ceiling_lines(figures: Figures) -> list[str]:
    """One line per ceiling the scenario was measured against."""
    lines = []
    for key, name in CEILING_NAMES.items():
        if key not in figures.get("ceilings", {}):
            continue
        c, r = figures["ceilings"][key], figures["vs"][key]
        line = (f"  vs {name}: {_x(r['rate'])} its rate ({c['messages_per_s']:,.0f} msg/s), broker CPU/msg "
                f"{_x(r['cpu_per_msg'])} its ({_us(figures['broker_cpu_us_per_msg'])} vs {_us(c['broker_cpu_us_per_msg'])})")
        for name in ("p50", "p99"):
            if name in r:
                line += f", {name} {_x(r[name])} its {c[f'{name}_ms']:.2f} ms"
        lines.append(line)
    return lines


def headline(name: str, f: Figures) -> str:
    """The scenario's main figure."""
    tail = f"{f['errors']:,} errors, {f['messages']:,} msgs in {f['seconds']:.1f} s"
    if "p99_ms" in f:
        rate = f" of {f['target_rate']:,.0f}" if "target_rate" in f else ""
        return (f"{name}: p50 {f['p50_ms']:.2f} ms, p90 {f['p90_ms']:.2f} ms, p99 {f['p99_ms']:.2f} ms, max {f['max_ms']:.2f} ms "
                f"({f['messages_per_s']:,.0f}{rate} msg/s, {tail})")
    if "consumed_per_s" in f:
        return f"{name}: produced {f['messages_per_s']:,.0f} msg/s and consumed {f['consumed_per_s']:,.0f} msg/s at once ({tail})"
    return f"{name}: {f['messages_per_s']:,.0f} msg/s ({f['requests_per_s']:,.0f} req/s, {tail})"


def render(name: str, f: Figures) -> list[str]:
    """Human-readable lines: the headline figure, the scenario's extras, CPU/RSS, ceilings, errors."""
    lines = [headline(name, f)]
    rss = f.get("rss_mib_samples")
    if rss:
        lines.append(f"  broker RSS MiB every {SOAK_SAMPLE_S:.0f} s: {', '.join(map(str, rss))} (max {max(rss)})")
    if "prefill_messages_per_s" in f:
        lines.append(f"  prefill: {f['prefill_messages_per_s']:,.0f} msg/s, {f['prefill_errors']:,} errors")
    if "send_batch" in f:
        b = f["send_batch"]
        vs = b.get("vs", {}).get("null")
        lines.append(f"  send_batch of {b['batch']}: {b['messages_per_s']:,.0f} msg/s; send / send_batch = "
                     f"{_x(f['send_vs_send_batch'])}; broker CPU/msg {_us(b['broker_cpu_us_per_msg'])}"
                     + (f" ({_x(vs['rate'])} the null broker's rate, {_x(vs['cpu_per_msg'])} its CPU/msg)" if vs else ""))
    resources = [f"client CPU {f['client_cpu_pct']:.0f}%"]
    if f["broker_cpu_pct"] is not None:
        resources.append(f"broker CPU {f['broker_cpu_pct']:.0f}% = {_us(f['broker_cpu_us_per_msg'])}/msg")
    if "broker_rss_mib" in f:
        before, after = f["broker_rss_mib"]
        resources.append(f"broker RSS {before:.1f} -> {after:.1f} MiB (peak {f['broker_rss_peak_mib']:.1f})")
    lines.append("  " + ", ".join(resources))
    lines.extend(ceiling_lines(f))
    lines.extend(f"  error: {sample}" for sample in f["error_samples"])
    return lines


def render_storage(f: Figures) -> str:
    return (f"ceiling rocksdb synced WriteBatch of {f['batch']}: {f['messages_per_s']:,.0f} msg/s "
            f"({f['requests_per_s']:,.0f} writes/s), {_us(f['server_cpu_us_per_msg'])}/msg CPU")
