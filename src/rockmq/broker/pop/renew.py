"""Auto-renew of invisible time for consumers that ask for it (PushConsumers).

A receive with `auto_renew` and no invisible duration gets `auto_renew_invisible_ms` (60 s),
and the broker keeps extending it while the receiving client is alive (heard from within
`client_silence_s`: it heartbeats every 10 s), so slow processing does not
cause a redelivery; the client's receipt handle stays valid. Once the client acks, nacks
(ChangeInvisibleDuration), terminates or goes silent, renewal stops and the normal invisible
time applies. Tracking is in memory and bounded; after a broker restart it is not renewed again
(the message is redelivered at its deadline: at least once).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

from rockmq.store.disk_space import log_failure

log = logging.getLogger(__name__)


class Extend(Protocol):
    """Push a live checkpoint's deadline out when it is due within ahead_ms; False once it is gone
    or expired (pop/checkpoints.py)."""

    def extend(self, renew_key: bytes, invisible_ms: int, ahead_ms: int) -> bool: ...


class Liveness(Protocol):
    """When a client was last heard from (broker/clients.py); None: unknown."""

    def last_seen(self, client_id: str) -> float | None: ...


class Renewals:
    def __init__(self, checkpoints: Extend, invisible_ms: int, client_silence_s: float, max_tracked: int) -> None:
        self.checkpoints = checkpoints
        self.invisible_ms = invisible_ms
        self.client_silence_s = client_silence_s
        self.max_tracked = max_tracked
        # Look four times per invisible time; extend what is due within the next third of it.
        self._check_every_s = invisible_ms / 4000
        self._ahead_ms = invisible_ms // 3
        self._tracked: dict[str, set[bytes]] = {}  # client -> keys of its receives' checkpoints
        self._count = 0

    def track(self, client_id: str, renew_key: bytes) -> None:
        """Renew the deliveries of this checkpoint (one receive's; a nacked one leaves it)."""
        if self._count >= self.max_tracked:
            return  # bounded: beyond this, messages rely on their invisible time alone
        keys = self._tracked.setdefault(client_id, set())
        if renew_key not in keys:
            self._count += 1
            keys.add(renew_key)

    def forget(self, client_id: str) -> None:
        self._count -= len(self._tracked.pop(client_id, ()))

    def renew_once(self, clients: Liveness) -> int:
        renewed = 0
        now = time.monotonic()
        for cid in list(self._tracked):
            seen = clients.last_seen(cid)
            if seen is None or now - seen > self.client_silence_s:
                self.forget(cid)
                continue
            keys = self._tracked[cid]
            for key in list(keys):
                if self.checkpoints.extend(key, self.invisible_ms, self._ahead_ms):
                    renewed += 1
                else:
                    keys.discard(key)
                    self._count -= 1
            if not keys:
                del self._tracked[cid]
        return renewed

    async def run(self, clients: Liveness) -> None:
        """Renew while `clients` (broker/clients.py, which tells this loop when one terminates) hear from them."""
        while True:
            await asyncio.sleep(self._check_every_s)
            try:
                self.renew_once(clients)
            except Exception as e:
                log_failure(log, e, "auto-renew failed")
