"""Parsing delays and points in time as people write them (`1500ms`, `30s`, `2h`, ISO 8601).

Pure functions, the one parser of the CLI, the client and the Spark source. A time without a zone
is refused everywhere: read as local time by one and as UTC by another, the same text named two
instants (and a machine's zone is rarely what the writer had in mind).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DELAY = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
ZONE_HINT = "add a zone: Z for UTC or an offset such as +01:00"


def parse_delay_ms(text: str) -> int:
    """'1500ms', '30s', '2.5m', '2h', '1d' -> milliseconds. A unit is required."""
    m = _DELAY.fullmatch(text.strip().lower())
    if m is None and text.strip().startswith("-"):
        raise ValueError(f"invalid delay {text!r}: a delay cannot be negative (a time in the past: --deliver-at)")
    if m is None:
        raise ValueError(f"invalid delay {text!r}: expected a number with a unit (ms, s, m, h, d), e.g. 1500ms, 30s, 2h")
    return round(float(m.group(1)) * _UNITS_MS[m.group(2)])


def instant_ms(when: datetime) -> int:
    """A datetime with a zone -> ms since the epoch (sub-millisecond digits cut, as stores do)."""
    if when.utcoffset() is None:
        raise ValueError(f"time {when.isoformat()} has no zone; {ZONE_HINT}")
    return (when - _EPOCH) // _MS


def parse_instant_ms(text: str) -> int:
    """An ISO 8601 date and time with a zone ('Z' or '+01:00') -> ms since the epoch."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"invalid time {text!r}: expected ISO 8601 with a zone, e.g. 2026-11-22T18:30:00.250+01:00") from None
    if when.utcoffset() is None:
        raise ValueError(f"time {text.strip()!r} has no zone; {ZONE_HINT}")
    return instant_ms(when)
