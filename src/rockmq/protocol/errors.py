"""The one exception the broker's services raise for a request they refuse.

It carries the RocketMQ v2 status code the client must see; servicers turn it into a
`status{code, message}` reply (MessagingService) or a gRPC status (Admin).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import grpc

from rockmq.protocol import pb

NOT_FOUND_CODES = frozenset({pb.TOPIC_NOT_FOUND, pb.CONSUMER_GROUP_NOT_FOUND, pb.NOT_FOUND})


def status(code: int, message: str = "OK") -> pb.Status:
    """A RocketMQ `status{code, message}`."""
    return pb.Status(code=cast("pb.Code", code), message=message)


OK = status(pb.OK)


class BrokerError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def not_found(self) -> bool:
        """The topic, group or thing asked about does not exist (here)."""
        return self.code in NOT_FOUND_CODES

    def __repr__(self) -> str:
        return f"BrokerError({pb.Code.Name(self.code)}, {self.message!r})"


def over_limit(refused: str, setting: str, limit: int, remedy: str) -> BrokerError:
    """The refusal of what would add an entry to a table keyed by client input that is at its bound.
    TOO_MANY_REQUESTS is the quota status every official client knows (RocketMQ's own quota codes,
    LITE_*_QUOTA_EXCEEDED, are of its 429 family, which older clients do not know); Admin answers it
    RESOURCE_EXHAUSTED."""
    return BrokerError(pb.TOO_MANY_REQUESTS, f"{refused}: {setting} ({limit:,}) reached; {remedy}")


def listing(names: Sequence[str], shown: int = 10) -> str:
    """Names for a message, the first `shown` of them and how many more: an error about 100,000
    topics stays one readable line."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" ... and {more:,} more" if more > 0 else "")


class AlreadyExists(BrokerError):
    """Creating a topic or group that exists (the admin service answers ALREADY_EXISTS)."""

    def __init__(self, message: str) -> None:
        super().__init__(pb.BAD_REQUEST, message)


_GRPC_CODES = {
    **dict.fromkeys(NOT_FOUND_CODES, grpc.StatusCode.NOT_FOUND),
    pb.INTERNAL_ERROR: grpc.StatusCode.INTERNAL,
    pb.PROXY_TIMEOUT: grpc.StatusCode.UNAVAILABLE,
    pb.FORBIDDEN: grpc.StatusCode.FAILED_PRECONDITION,
    pb.PRECONDITION_FAILED: grpc.StatusCode.FAILED_PRECONDITION,
    pb.TOO_MANY_REQUESTS: grpc.StatusCode.RESOURCE_EXHAUSTED,
    pb.HA_NOT_AVAILABLE: grpc.StatusCode.FAILED_PRECONDITION,  # a fenced primary (cluster/fencing.py)
}
# Another broker's refusal, as this one answers it (`relayed`): the inverse of the table above.
_FROM_GRPC = {
    grpc.StatusCode.INVALID_ARGUMENT: pb.BAD_REQUEST,
    grpc.StatusCode.NOT_FOUND: pb.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION: pb.FORBIDDEN,
    grpc.StatusCode.PERMISSION_DENIED: pb.FORBIDDEN,
    grpc.StatusCode.UNAUTHENTICATED: pb.UNAUTHORIZED,
    grpc.StatusCode.RESOURCE_EXHAUSTED: pb.TOO_MANY_REQUESTS,
    grpc.StatusCode.UNAVAILABLE: pb.PROXY_TIMEOUT,
    grpc.StatusCode.DEADLINE_EXCEEDED: pb.PROXY_TIMEOUT,
}


def grpc_code(st: pb.Status) -> grpc.StatusCode:
    """The gRPC status Admin answers a refusal with."""
    return _GRPC_CODES.get(st.code, grpc.StatusCode.INVALID_ARGUMENT)


def relayed(error: grpc.aio.AioRpcError, message: str) -> BrokerError:
    """Another broker's refusal of a call made for this one's client (the admin fan-out), as this
    broker's refusal: its kind kept, so that a caller's mistake the other found stays one, and
    INTERNAL_ERROR only for the other's own bug."""
    return BrokerError(_FROM_GRPC.get(error.code(), pb.INTERNAL_ERROR), message)
