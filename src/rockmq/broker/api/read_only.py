"""A replica serves reads only: every other call is refused with FAILED_PRECONDITION, naming the
primary, until the replica is promoted."""

from __future__ import annotations

import grpc

# Reads, client bookkeeping, and the admin calls that change nothing (plus Promote itself).
ALLOWED = frozenset({
    "QueryRoute", "Heartbeat", "QueryAssignment", "PullMessage", "QueryOffset", "GetOffset", "Telemetry",
    "NotifyClientTermination", "ListTopics", "DescribeTopic", "ListGroups", "DescribeGroup", "ListMembers",
    "GetTimerStats", "Pull", "Fetch", "Promote",
})
STREAMING = frozenset({"ReceiveMessage"})


class ReadOnly(grpc.aio.ServerInterceptor):
    def __init__(self, primary: str) -> None:
        self.message = f"this broker is a replica of {primary}: it serves reads only (send writes to the primary)"

    async def intercept_service(self, continuation, details):
        method = details.method.rsplit("/", 1)[-1]
        if method in ALLOWED:
            return await continuation(details)
        message = self.message

        async def refuse(request, context):
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, message)

        async def refuse_stream(request, context):
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, message)
            yield  # pragma: no cover - abort raises

        if method in STREAMING:
            return grpc.unary_stream_rpc_method_handler(refuse_stream)
        return grpc.unary_unary_rpc_method_handler(refuse)
