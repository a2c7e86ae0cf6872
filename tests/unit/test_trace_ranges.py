"""Trace events cover ranges of consecutive offsets (broker/trace.py): an ack's settled deliveries
become as few ranges as they allow, never one that names a message not in them."""

from __future__ import annotations

from rockmq.broker.trace import coalesce


def test_one_receives_run_is_one_range() -> None:
    assert coalesce([(0, o, 1) for o in range(1000, 1032)]) == [(0, 1000, 1031, 1)]


def test_gaps_queues_and_attempts_split_ranges() -> None:
    assert coalesce([(0, 1, 1), (0, 2, 1), (0, 4, 1), (1, 5, 1), (1, 6, 2)]) == [
        (0, 1, 2, 1), (0, 4, 4, 1), (1, 5, 5, 1), (1, 6, 6, 2)]
    assert coalesce([(0, 1, 1), (0, 3, 1), (1, 2, 1), (0, 2, 1)]) == [
        (0, 1, 1, 1), (0, 3, 3, 1), (1, 2, 2, 1), (0, 2, 2, 1)]  # other queues' offsets fill no gap


def test_repeats_and_nothing() -> None:
    assert coalesce([(0, 5, 1), (0, 5, 1)]) == [(0, 5, 5, 1), (0, 5, 5, 1)]
    assert coalesce([]) == []
