"""A replica serves reads only: every other call is refused with FAILED_PRECONDITION, naming the
primary, until the replica is promoted. The message leads with NOT_THE_PRIMARY (protocol/conventions.py):
rockmq's client retries such a refusal elsewhere, as it does a fenced primary's HA_NOT_AVAILABLE."""

from __future__ import annotations

from typing import Any

import grpc

from rockmq.plumbing.interceptors import Continuation, Handler
from rockmq.plumbing.requests import Context
from rockmq.protocol.conventions import NOT_THE_PRIMARY

# Reads, client bookkeeping, and the admin calls that change nothing (plus Promote itself).
ALLOWED = frozenset({
    "QueryRoute", "Heartbeat", "QueryAssignment", "PullMessage", "QueryOffset", "GetOffset", "Telemetry",
    "NotifyClientTermination", "ListTopics", "DescribeTopic", "ListGroups", "DescribeGroup", "ListMembers",
    "GetTimerStats", "Pull", "Fetch", "Promote", "ListUsers", "ListAcls", "DescribeCluster", "ListDeadLetters",
    "ListClients", "GetConfig",
    "GetMessage", "FindMessages", "ListMessages", "TraceMessage",  # rockmq.admin.v1.Messages: the replicated store
    "Check", "Watch",  # grpc.health.v1: a replica says whether it is ready too
})
STREAMING = frozenset({"ReceiveMessage"})



class ReadOnly(grpc.aio.ServerInterceptor):
    def __init__(self, primary: str) -> None:
        self.message = f"{NOT_THE_PRIMARY} of {primary}: it serves reads only (send writes to the primary)"

    async def intercept_service(self, continuation: Continuation, details: grpc.HandlerCallDetails) -> Handler | None:
        method = details.method.rsplit("/", 1)[-1]
        if method in ALLOWED:
            return await continuation(details)
        return refusing(grpc.StatusCode.FAILED_PRECONDITION, self.message, method in STREAMING)


def refusing(code: grpc.StatusCode, message: str, streaming: bool) -> Handler:
    """A handler that ends the call with `code` and `message` before anything is read or served."""

    async def refuse(request: Any, context: Context) -> None:
        await context.abort(code, message)

    if streaming:  # a coroutine serves a stream too (it would write with context.write)
        return grpc.unary_stream_rpc_method_handler(refuse)
    return grpc.unary_unary_rpc_method_handler(refuse)
