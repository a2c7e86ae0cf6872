"""How hard `tests/chaos/` pushes: a short variant in CI, the issue's full figures with `scripts/chaos`.

A chaos test takes its sizes from `scaled(short, full)`: CI runs the short one (seconds per test);
`ROCKMQ_CHAOS_FULL=1` (what `scripts/chaos` sets) runs the figures the reliability promises name.
"""

from __future__ import annotations

import os

FULL = os.environ.get("ROCKMQ_CHAOS_FULL") == "1"


def scaled(short: int, full: int) -> int:
    """`full` under `scripts/chaos`, else `short`."""
    return full if FULL else short
