"""A million lite topics of one message each on one broker (issue 29 §5), under `scripts/chaos`
(`scripts/chaos -k lite_scale`: 15-25 minutes on 2 cores, most of it the expiry's walk of 2,048 lite
topics a second). CI runs the same at 20,000 (tests/integration/test_lite_scale.py), so this one
runs only at full size. The figures are printed (docs/lite-topics.md "Scale and cost" has them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from chaos_scale import FULL
from lite_scale import WAKE_S, rss_bound_mib, run

COUNT = 1_000_000
ROUNDS = 10  # of 100,000 plain messages, then 100,000 lite topics
MIN_RATE_RATIO = 0.25


@pytest.mark.skipif(not FULL, reason="a million lite topics run under scripts/chaos; CI runs 20,000 in tests/integration")
def test_a_million_lite_topics(tmp_path: Path) -> None:
    figures = run(tmp_path, COUNT, ROUNDS, processes=2)
    print("\n" + figures.report())
    assert figures.rate_ratio > MIN_RATE_RATIO, figures.report()
    assert figures.rss_peak_mib < rss_bound_mib(), figures.report()
    assert max(figures.wakes_s) < WAKE_S, figures.report()
    assert figures.left == {"log": 0, "trace": 0, "lite names": 0, "lite queues": 0}, figures.report()
