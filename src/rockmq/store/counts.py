"""Exact counts of what a family holds, without scanning it: each count lives in the meta family
and is written in the same WriteBatch as the change it counts, so it is as durable and as atomic
as that change (batches are written in order: the last one written holds the current value)."""

from __future__ import annotations

from collections.abc import Callable

from rockmq.store import keys
from rockmq.store.db import Batch, Store
from rockmq.store.schema import Family


class StoredCount:
    def __init__(self, store: Store, key: bytes, recount: Callable[[], int]) -> None:
        """`recount` counts the slow way, for a store written before the count was kept."""
        self._key = key
        raw = store.get(Family.META, key)
        self.value = keys.decode_u64(raw) if raw is not None else recount()

    def add(self, batch: Batch, delta: int) -> None:
        self.value += delta
        batch.put(Family.META, self._key, keys.encode_u64(self.value))
