"""Whether the broker is ready to take traffic, and if not, why (pure logic over its parts).

One answer for every way it is asked: the `grpc.health.v1` service on the gRPC port
(broker/api/health.py) and `/readyz` on the HTTP port both serve `reasons()`: empty means ready.
A load balancer, Kubernetes or a client's health check then stops sending here while the broker
drains (SIGTERM: Broker.drain in broker/server.py), while a promoted replica has fenced it, while
a restarted primary waits to confirm it still is one, while its store is closed, or while a
replica is cut off from its primary or far behind it (its reads would be stale). Liveness (`/healthz`) is the process answering
at all: nothing here.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from rockmq.broker.cluster.fencing import Fence
from rockmq.broker.context import BrokerContext

# A replica this many batches behind its primary (as the primary last said) is not ready: its reads
# would be stale. A few batches are normal under load (each send is one), so a few are tolerated.
CAUGHT_UP_BATCHES = 1_000


class Following(Protocol):
    """What readiness reads of a replica's Follower (broker/cluster/replication.py)."""

    @property
    def behind(self) -> int: ...

    @property
    def connected(self) -> bool: ...


class Health:
    def __init__(self, ctx: BrokerContext, fence: Fence, follower: Following | None) -> None:
        """`follower`: a replica's (None on a primary)."""
        self.ctx = ctx
        self.fence = fence
        self.follower = follower
        self.drain_began = asyncio.Event()  # wakes whoever watches readiness (grpc.health.v1 Watch)

    @property
    def draining(self) -> bool:
        """Set by the drain: new sends and receives are refused (BrokerContext.refuse_if_draining)."""
        return self.ctx.draining

    @draining.setter
    def draining(self, value: bool) -> None:
        self.ctx.draining = value
        if value:
            self.drain_began.set()

    def reasons(self) -> list[str]:
        """Why the broker is not ready, most fundamental first; empty: ready."""
        if self.ctx.store.closed:
            return ["store not open"]
        out = ["draining"] if self.draining else []
        if self.fence.fenced:
            out.append("fenced: a newer primary exists")
        elif self.follower is None and not self.fence.confirmed:
            out.append("primary not yet confirmed by a name server or its replica")
        if self.follower is not None:
            out += _replica(self.follower)
        return out

    @property
    def ready(self) -> bool:
        return not self.reasons()


def _replica(follower: Following) -> list[str]:
    if not follower.connected:
        return ["replica not connected to its primary"]
    behind = follower.behind
    if behind > CAUGHT_UP_BATCHES:
        return [f"replica not caught up with its primary ({behind} batches behind)"]
    return []
