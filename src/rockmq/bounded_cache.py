"""A cache bounded in bytes as well as in entries, for caches keyed by what clients send.

A cap on entries alone lets a client that sends large keys (a long filter expression, a long
name) make each entry as big as it likes: the memory is entries x the largest key. Here each
entry is weighed when it goes in (`weigh`: an estimate of the bytes the key and value keep alive)
and the oldest entries go until both the count and the total weight are within bounds; an entry
heavier than the whole budget is not kept at all.

A dict itself, so a hit is one `dict.get` in C (the authorization path asks on every request);
eviction is oldest-inserted first, which needs no bookkeeping on a hit. Not thread-safe: the
broker uses it from its event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(dict[K, V], Generic[K, V]):
    def __init__(self, max_entries: int, max_bytes: int, weigh: Callable[[K, V], int]) -> None:
        super().__init__()
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.weight = 0  # of the entries held, by `weigh`
        self._weigh = weigh
        self._weights: dict[K, int] = {}

    def put(self, key: K, value: V) -> None:
        """Remember `value` under `key`, forgetting the oldest entries as needed to stay in bounds."""
        weight = self._weigh(key, value)
        if weight > self.max_bytes:
            return
        self.forget(key)
        while self and (len(self) >= self.max_entries or self.weight + weight > self.max_bytes):
            self.forget(next(iter(self)))
        self[key] = value
        self._weights[key] = weight
        self.weight += weight

    def forget(self, key: K) -> None:
        """Drop `key`'s entry, if any."""
        if self.pop(key, _MISSING) is not _MISSING:
            self.weight -= self._weights.pop(key)

    def clear(self) -> None:
        super().clear()
        self._weights.clear()
        self.weight = 0


_MISSING = object()
