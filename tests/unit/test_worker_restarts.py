"""How the `--workers` supervisor paces restarts of a shard that dies, and when it gives up."""

from __future__ import annotations

import pytest

from rockmq.workers.restarts import CAP_S, FIRST_S, MAX_FAILED_STARTS, STABLE_S, GiveUp, Restarts


def test_a_first_death_restarts_at_once_then_backs_off_doubling_to_the_cap():
    r = Restarts("s-1")
    delays = [r.next_delay(1.0) for _ in range(10)]
    assert delays[:4] == [0.0, FIRST_S, 2 * FIRST_S, 4 * FIRST_S]
    assert delays[-1] == CAP_S and max(delays) == CAP_S


def test_a_shard_that_served_long_enough_starts_over_at_once():
    r = Restarts("s-1")
    for _ in range(5):
        r.next_delay(1.0)
    assert r.next_delay(STABLE_S) == 0.0
    assert r.next_delay(1.0) == FIRST_S


def test_starts_that_never_serve_give_up_after_a_bound():
    r = Restarts("s-1")
    for _ in range(MAX_FAILED_STARTS - 1):
        r.next_delay(None)
    with pytest.raises(GiveUp, match="s-1 failed to start"):
        r.next_delay(None)


def test_serving_once_resets_the_failed_starts():
    r = Restarts("s-1")
    for _ in range(MAX_FAILED_STARTS - 1):
        r.next_delay(None)
    r.next_delay(5.0)
    for _ in range(MAX_FAILED_STARTS - 1):
        r.next_delay(None)
