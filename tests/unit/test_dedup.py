"""broker/dedup.py on a real store: what a retried send finds, for how long, and expiry by bucket."""

from __future__ import annotations

import pytest

from rockmq.broker.dedup import Dedup, Previous
from rockmq.store import Store

WINDOW_S = 10
W = WINDOW_S * 1000


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "data")
    yield s
    s.close()


def _record(store: Store, dedup: Dedup, now: int, topic_id: int, message_id: str, offset: int) -> None:
    batch = store.batch()
    dedup.record(batch, dedup.bucket(now), topic_id, message_id, 2, offset)
    store.write(batch)


def test_a_send_is_found_for_one_to_two_windows_then_expires(store):
    dedup = Dedup(store, WINDOW_S)
    t0 = 100 * W + 1
    _record(store, dedup, t0, 7, "m1", 41)
    _record(store, dedup, t0, 7, "m2", 42)
    assert dedup.lookup(dedup.bucket(t0), [(7, "m1"), (8, "m1"), (7, "m3")]) == [Previous(2, 41, "", ""), None, None]
    assert dedup.lookup(dedup.bucket(t0 + W), [(7, "m2")]) == [Previous(2, 42, "", "")]  # the window after: still found
    assert dedup.lookup(dedup.bucket(t0 + 2 * W), [(7, "m2")]) == [None]  # two windows on: not looked at
    assert dedup.expire(t0 + W) is True  # keeps the current and the last bucket
    assert dedup.lookup(dedup.bucket(t0 + W), [(7, "m1")]) == [Previous(2, 41, "", "")]
    assert dedup.expire(t0 + W + 1) is False  # one range delete per bucket, never twice
    assert dedup.expire(t0 + 2 * W) is True
    assert dedup.lookup(dedup.bucket(t0 + W), [(7, "m1"), (7, "m2")]) == [None, None]


def test_an_entry_not_in_a_queue_yet_keeps_its_handle(store):
    dedup = Dedup(store, WINDOW_S)
    batch = store.batch()
    dedup.record(batch, 5, 1, "delayed", -1, 0, recall_handle="handle")
    dedup.record(batch, 5, 1, "half", -1, 0, transaction_id="txn")
    store.write(batch)
    assert dedup.lookup(5, [(1, "delayed"), (1, "half")]) == [Previous(0xFFFFFFFF, 0, "", "handle"),
                                                            Previous(0xFFFFFFFF, 0, "txn", "")]
