"""The login form's throttle (auth on): wrong secrets are counted per client address and per access key,
each a bucket of MAX_FAILURES tries that refills one every REFILL_S. An empty bucket answers 429 without
asking the broker, so guessing runs at 5 a minute whether from one address at many keys or from many
addresses at one key. The table is bounded (MAX_ENTRIES, the least recently failed dropped first) and an
entry goes once its bucket is full again. Its cost: a key someone guesses at is locked for its owner too,
on the dashboard only (the CLI and clients sign each request and are not throttled here)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

MAX_FAILURES = 5  # wrong secrets in a row before the wait
REFILL_S = 12.0  # ... then one more try every 12 s
MAX_ENTRIES = 4096  # addresses and access keys tracked at once


def keys_of(address: str, access_key: str) -> tuple[str, str]:
    """The two buckets a login attempt draws on."""
    return f"address {address}", f"key {access_key}"


class LoginThrottle:
    def __init__(self, burst: int = MAX_FAILURES, refill_s: float = REFILL_S, limit: int = MAX_ENTRIES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.burst, self.refill_s, self.limit, self.clock = burst, refill_s, limit, clock
        self._left: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tries left, as of)

    def _tries(self, key: str, now: float) -> float:
        """Tries left in `key`'s bucket now (a full bucket's entry is dropped)."""
        left, at = self._left.get(key, (float(self.burst), now))
        left = min(float(self.burst), left + (now - at) / self.refill_s)
        if left >= self.burst:
            self._left.pop(key, None)
        return left

    def wait_s(self, keys: Sequence[str]) -> float:
        """Seconds until a try may be made on every one of `keys` (0: now)."""
        now = self.clock()
        return max((max(0.0, 1 - self._tries(k, now)) * self.refill_s for k in keys), default=0.0)

    def failed(self, keys: Sequence[str]) -> None:
        """A wrong secret: one try less in each bucket."""
        now = self.clock()
        for key in keys:
            self._left[key] = (self._tries(key, now) - 1, now)
            self._left.move_to_end(key)
        while len(self._left) > self.limit:
            self._left.popitem(last=False)

    def succeeded(self, keys: Sequence[str]) -> None:
        for key in keys:
            self._left.pop(key, None)
