"""Parsing delays and delivery times as people write them (`1500ms`, `30s`, `2h`, ISO 8601).

Pure functions, shared by the CLI and the client.
"""

from __future__ import annotations

import re
from datetime import datetime

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DELAY = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


def parse_delay_ms(text: str) -> int:
    """'1500ms', '30s', '2.5m', '2h', '1d' -> milliseconds. A unit is required."""
    m = _DELAY.fullmatch(text.strip().lower())
    if m is None:
        raise ValueError(f"invalid delay {text!r}: expected a number with a unit (ms, s, m, h, d), e.g. 1500ms, 30s, 2h")
    return round(float(m.group(1)) * _UNITS_MS[m.group(2)])


def parse_instant_ms(text: str) -> int:
    """An ISO 8601 date and time -> ms since the epoch. Without a zone it is local time."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"invalid time {text!r}: expected ISO 8601, e.g. 2026-11-22T18:30:00.250+01:00") from None
    return round(when.timestamp() * 1000)
