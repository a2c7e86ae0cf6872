"""An admin change made on the broker called, handed on to every other live broker of the cluster
(users, ACLs), so that it holds wherever a client signs in — the shards of `--workers N` too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from rockmq.broker.cluster.routes import RPC_TIMEOUT_S, Cluster
from rockmq.protocol import pb
from rockmq.protocol.conventions import BROKER_SAYS_UNREACHABLE
from rockmq.protocol.errors import BrokerError, relayed

_UNREACHABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


async def hand_on(cluster: Cluster | None, stub: Callable[[grpc.aio.Channel], Any], method: str, request: Any,
                  done_already: grpc.StatusCode | None = None) -> None:
    """Call `method` of `stub`'s service with `request` (marked `local`) on every other live broker,
    signed with the inner credentials; refusals name them. `done_already`: the answer of a broker
    that has the change already (not an error). A request marked `local` is one handed on: done."""
    if cluster is None or not cluster.enabled or request.local:
        return
    request.local = True
    unreachable, refused = [], []
    first_refusal: grpc.aio.AioRpcError | None = None
    for broker, endpoint in sorted((await cluster.live()).items()):
        if broker == cluster.name:
            continue
        try:
            await getattr(cluster.service(endpoint, stub), method)(request, timeout=RPC_TIMEOUT_S)
        except grpc.aio.AioRpcError as e:
            if e.code() in _UNREACHABLE:
                unreachable.append(broker)
            elif e.code() != done_already:
                refused.append(f"{broker} ({e.details()})")
                first_refusal = first_refusal or e
    if unreachable or refused:
        lines = ([f"{BROKER_SAYS_UNREACHABLE}: {', '.join(unreachable)}"] if unreachable else []) + \
                ([f"refused by {', '.join(refused)}"] if refused else [])
        message = f"{'; '.join(lines)}: the change is made here (and on the others); repeat it for those"
        if unreachable or first_refusal is None:
            raise BrokerError(pb.PROXY_TIMEOUT, message)
        raise relayed(first_refusal, message)  # the other broker's kind of refusal, not INTERNAL_ERROR
