"""The nonces of control-plane calls accepted within the last window: each is taken once, so a
captured call cannot be played again (inner_signature.py). No I/O; callers pass `now`."""

from __future__ import annotations

from collections import OrderedDict

MAX_REMEMBERED = 65536  # far beyond what brokers' own calls reach in a window (a few per second each)


class SeenNonces:
    """Bounded: only calls whose signature verified are remembered (nobody without the inner secret
    adds one), each until its window passed; past MAX_REMEMBERED the oldest go first."""

    def __init__(self, window_s: float, limit: int = MAX_REMEMBERED) -> None:
        self.window_s = window_s
        self.limit = limit
        self._until: OrderedDict[str, float] = OrderedDict()  # nonce -> when it may be forgotten

    def take(self, nonce: str, now: float) -> bool:
        """Whether `nonce` is new (it is remembered from now on)."""
        while self._until and (next(iter(self._until.values())) < now or len(self._until) >= self.limit):
            self._until.popitem(last=False)
        if nonce in self._until:
            return False
        self._until[nonce] = now + 2 * self.window_s  # a date up to a window ahead stays valid a window longer
        return True
