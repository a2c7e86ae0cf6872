"""The producer de-duplication table: where each (topic, message id) sent lately went.

A client that lost a SendMessage reply sends the message again with the same id; the broker
answers with the first send's position (and transaction id or recall handle) and stores nothing
new. Entries live in buckets one `dedup_window_s` long, keyed bucket first; a lookup checks the
current bucket and the one before, so an entry is found for one to two windows, and expiry is one
range delete per bucket that ends. SendMessage and the Spark sink's publish (broker/staging.py)
share it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from rockmq.store import Store, keys
from rockmq.store.db import Batch
from rockmq.store.schema import Family


class Previous(NamedTuple):
    """What the first send of a message got."""

    queue_id: int
    offset: int
    transaction_id: str
    recall_handle: str


class Dedup:
    def __init__(self, store: Store, window_s: int) -> None:
        self.store = store
        self.window_ms = window_s * 1000
        self._expired_below: int | None = None  # buckets below this one are dropped

    def bucket(self, now_ms: int) -> int:
        return now_ms // self.window_ms

    def lookup(self, bucket: int, ids: Sequence[tuple[int, str]]) -> list[Previous | None]:
        """For each (topic id, message id), what its first send got if that was in this window or
        the last; one multi-get for all of them."""
        prefixes: dict[int, tuple[bytes, bytes]] = {}  # a request's messages mostly share one topic
        wanted: list[bytes] = []
        for tid, mid in ids:
            pair = prefixes.get(tid)
            if pair is None:
                pair = prefixes[tid] = (keys.dedup_key(bucket, tid, ""), keys.dedup_key(bucket - 1, tid, ""))
            encoded = mid.encode()
            wanted += (pair[0] + encoded, pair[1] + encoded)
        found = self.store.get_many(Family.DEDUP, wanted)
        out: list[Previous | None] = []
        for i in range(0, len(found), 2):
            raw = found[i] or found[i + 1]
            out.append(None if raw is None else Previous(*keys.parse_dedup_value(raw)))
        return out

    def record(self, batch: Batch, bucket: int, topic_id: int, message_id: str, queue_id: int, offset: int,
               transaction_id: str = "", recall_handle: str = "") -> None:
        """Put a first send's entry into `batch` (`queue_id` -1: not in a queue yet)."""
        batch.put(Family.DEDUP, keys.dedup_key(bucket, topic_id, message_id),
                  keys.dedup_value(queue_id & 0xFFFFFFFF, offset, transaction_id, recall_handle))

    def expire(self, now_ms: int) -> bool:
        """Drop buckets older than the last window: one range tombstone each time a bucket ends
        (every lookup pays for the tombstones it must skip, so never write one twice)."""
        oldest_kept = self.bucket(now_ms) - 1
        if oldest_kept == self._expired_below:
            return False
        batch = self.store.batch()
        batch.delete_range(Family.DEDUP, b"", keys.dedup_bucket_start(oldest_kept))
        self.store.write(batch)
        self._expired_below = oldest_kept
        return True
