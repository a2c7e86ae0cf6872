"""A coordinated member serves reads only while its log is known to be the group's (issue 30 §3: no
member ever serves a message at an offset where another member holds a different one).

A primary that stepped down (its lease ran out: paused, cut off) may hold a tail its successor never
got, and writes other messages at the same offsets; a replica rebuilt to follow a new primary may
hold batches that primary lacks. Either drops that tail only once the new primary answered its
Follow (broker/cluster/truncation.py). Until then its message and offset reads are refused here with
UNAVAILABLE, which clients retry (rockmq's after fetching the route again, which names the primary).
The member knows it is "stepped down, not yet rejoined" in one predicate (`ReadFence.serves`, set
by the Broker for its role): a primary serves while it may write (its lease surely holds for the
others: the store's write gate, broker/commit.py), a replica while a Follow stream of its primary is
open on the history it holds (`Follower.attached`).

Only a coordinated member's server carries this interceptor: other brokers pay nothing. A member
pays one interceptor per call, and a read the `serves()` call (one time.monotonic() comparison on a
primary, an attribute on a replica).
"""

from __future__ import annotations

from collections.abc import Callable

import grpc

from rockmq.broker.api.read_only import refusing
from rockmq.plumbing.interceptors import Continuation, Handler

# The calls that hand out messages or offsets (the last two of a queue, a group's committed one):
# a tail would show in any of them.
READS = frozenset({
    "ReceiveMessage", "PullMessage", "QueryOffset", "GetOffset",  # apache.rocketmq.v2.MessagingService
    "Receive", "Pull", "Fetch",  # rockmq's batch service
    "GetMessage", "FindMessages", "ListMessages", "TraceMessage",  # rockmq.admin.v1.Messages
})
STREAMING = frozenset({"ReceiveMessage", "PullMessage"})


def _not_yet() -> bool:
    return False


class ReadFence(grpc.aio.ServerInterceptor):
    def __init__(self, broker_name: str) -> None:
        self.serves: Callable[[], bool] = _not_yet  # the Broker sets its role's test once it is built
        self.message = (f"this member of broker group {broker_name!r} is rejoining the group (its log may hold "
                        f"messages its primary does not): retry, the route names the group's primary")

    async def intercept_service(self, continuation: Continuation, details: grpc.HandlerCallDetails) -> Handler | None:
        method = details.method.rsplit("/", 1)[-1]
        if method not in READS or self.serves():
            return await continuation(details)
        return refusing(grpc.StatusCode.UNAVAILABLE, self.message, method in STREAMING)
