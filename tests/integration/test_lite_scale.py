"""20,000 lite topics of one message each on one real broker (issue 29 §5; the million is
tests/chaos/test_chaos_lite_scale.py): created at a sane fraction of the plain produce rate, broker
RSS within the store's budget plus a fixed allowance, a subscribed consumer woken within the
long-poll wake time, and every one of them expired with its keys (tests/lite_scale.py)."""

from __future__ import annotations

from pathlib import Path

from lite_scale import WAKE_S, rss_bound_mib, run

COUNT = 20_000
MIN_RATE_RATIO = 0.25  # a sanity bound only: the figure is reported (docs/lite-topics.md), the 2 cores are shared


def test_twenty_thousand_lite_topics(tmp_path: Path) -> None:
    figures = run(tmp_path, COUNT, rounds=2)
    print("\n" + figures.report())
    assert figures.rate_ratio > MIN_RATE_RATIO, figures.report()
    assert figures.rss_peak_mib < rss_bound_mib(), figures.report()
    assert max(figures.wakes_s) < WAKE_S, figures.report()
    assert figures.left == {"log": 0, "trace": 0, "lite names": 0, "lite queues": 0}, figures.report()
