"""Every error rockmq's client raises, in one tree. Each says whether retrying may help.

    RockmqError                      base; `.retriable`, `.code` (RocketMQ status code or None)
    ├── ConnectionFailed             the broker could not be reached, or went away mid-call (retriable)
    │   └── Unimplemented            the broker lacks a method (rockmq's own services elsewhere)
    ├── Timeout                      no answer in time (retriable)
    ├── BrokerRefused                the broker answered with a non-OK status; `.code`, `.status_name`
    │   ├── NotFound                 topic, group, message or offset unknown
    │   ├── IllegalArgument          the request is malformed (bad topic name, body, filter, a time
    │   │                            without a zone, ...)
    │   ├── Throttled                the broker is overloaded, is not the primary (a replica, a fenced
    │   │                            primary) or a replica did not confirm (retriable elsewhere)
    │   └── QuotaExceeded            a lite-topic quota is full: lite topics of a parent topic
    │                                (LITE_TOPIC_QUOTA_EXCEEDED) or a client's lite subscriptions
    │                                (LITE_SUBSCRIPTION_QUOTA_EXCEEDED); not retriable as it is
    ├── BatchSendError               some messages of a batch were refused: `.receipts` (a SendReceipt
    │                                or None per message, in order), `.errors` (index -> the error)
    └── ClientClosed                 the producer or consumer was closed

`from_status(code, message)` maps a RocketMQ status to its exception through one table, as
aiokafka does: the table is the only place that decides what is retriable. A gRPC status (a
call that failed below the RocketMQ protocol, or rockmq's admin service, which answers with gRPC
codes) goes through `from_grpc`, which maps it onto the same table: a replica's refusal (led by
NOT_THE_PRIMARY) as a fenced primary's HA_NOT_AVAILABLE, so a send moves on to the primary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import grpc

from rockmq.protocol import pb
from rockmq.protocol.conventions import NOT_THE_PRIMARY

if TYPE_CHECKING:
    from rockmq.client.message import SendReceipt


class RockmqError(Exception):
    retriable = False
    code: int | None = None

    def __init__(self, message: str, *, code: int | None = None, retriable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if retriable is not None:
            self.retriable = retriable


class ConnectionFailed(RockmqError):
    """`endpoint` and gRPC's `details`, when known: what the CLI reads to say why (TLS or not, a CA)."""

    retriable = True

    def __init__(self, message: str, *, endpoint: str = "", details: str = "", code: int | None = None,
                 retriable: bool | None = None) -> None:
        super().__init__(message, code=code, retriable=retriable)
        self.endpoint, self.details = endpoint, details


class Unimplemented(ConnectionFailed):
    retriable = False


class Timeout(RockmqError):
    retriable = True


class BrokerRefused(RockmqError):
    @property
    def status_name(self) -> str:
        try:
            return pb.Code.Name(self.code) if self.code is not None else "UNKNOWN"
        except ValueError:
            return "UNKNOWN"

    def __str__(self) -> str:
        return f"{self.status_name} ({self.code}): {self.message}"


class NotFound(BrokerRefused):
    pass


class IllegalArgument(BrokerRefused):
    pass


class Throttled(BrokerRefused):
    retriable = True


class QuotaExceeded(BrokerRefused):
    pass


class ClientClosed(RockmqError):
    pass


class BatchSendError(RockmqError):
    """Part of a batch was refused: what was stored has its receipt, what was not its error.
    Retriable when every refusal is (resending the batch stores nothing twice: ids are kept)."""

    def __init__(self, receipts: Sequence[SendReceipt | None], errors: Mapping[int, RockmqError]) -> None:
        first = min(errors)
        super().__init__(f"{len(errors)} of {len(receipts)} messages refused (message {first}: {errors[first]})",
                         code=errors[first].code, retriable=all(e.retriable for e in errors.values()))
        self.receipts = list(receipts)
        self.errors = dict(errors)


_NOT_FOUND = {pb.NOT_FOUND, pb.TOPIC_NOT_FOUND, pb.CONSUMER_GROUP_NOT_FOUND, pb.MESSAGE_NOT_FOUND, pb.OFFSET_NOT_FOUND}
_QUOTA = {pb.LITE_TOPIC_QUOTA_EXCEEDED, pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED}
_RETRIABLE = {pb.TOO_MANY_REQUESTS, pb.SLAVE_PERSISTENCE_TIMEOUT, pb.MASTER_PERSISTENCE_TIMEOUT, pb.HA_NOT_AVAILABLE,
              pb.PROXY_TIMEOUT, pb.REQUEST_TIMEOUT, pb.INTERNAL_ERROR, pb.INTERNAL_SERVER_ERROR}


def from_status(code: int, message: str) -> BrokerRefused:
    """The exception for a non-OK wire status."""
    if code in _NOT_FOUND:
        return NotFound(message, code=code)
    if code in _RETRIABLE:
        return Throttled(message, code=code)
    if code in _QUOTA:
        return QuotaExceeded(message, code=code)
    if 40000 <= code < 50000:
        return IllegalArgument(message, code=code)
    return BrokerRefused(message, code=code, retriable=code >= 50000)


_GRPC_AS_STATUS = {grpc.StatusCode.NOT_FOUND: pb.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT: pb.BAD_REQUEST,
                   grpc.StatusCode.ALREADY_EXISTS: pb.BAD_REQUEST, grpc.StatusCode.FAILED_PRECONDITION: pb.FORBIDDEN,
                   grpc.StatusCode.OUT_OF_RANGE: pb.BAD_REQUEST, grpc.StatusCode.PERMISSION_DENIED: pb.FORBIDDEN,
                   grpc.StatusCode.UNAUTHENTICATED: pb.UNAUTHORIZED}


def from_grpc(endpoint: str, code: grpc.StatusCode, details: str | None) -> RockmqError:
    """The exception for a failed gRPC call to `endpoint`."""
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return Timeout(f"{endpoint} did not answer in time")
    if code == grpc.StatusCode.UNAVAILABLE:
        return ConnectionFailed(f"cannot reach {endpoint}: {details}", endpoint=endpoint, details=details or "")
    if code == grpc.StatusCode.CANCELLED:  # a broker killed mid-call ends the calls in flight so (our own
        # cancellation raises asyncio's CancelledError instead); a resent message is stored once (dedup)
        return ConnectionFailed(f"{endpoint} ended the call unanswered: {details}", endpoint=endpoint,
                                details=details or "")
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return Unimplemented(f"{endpoint}: {details}")
    status = _GRPC_AS_STATUS.get(code)
    if code == grpc.StatusCode.FAILED_PRECONDITION and (details or "").startswith(NOT_THE_PRIMARY):
        status = pb.HA_NOT_AVAILABLE
    if status is not None:
        return from_status(status, details or "")
    return ConnectionFailed(f"{endpoint}: {code.name}: {details}", retriable=False)


def from_rpc_error(endpoint: str, e: grpc.RpcError) -> RockmqError:
    """`from_grpc` for a caught grpc.RpcError (blocking or asyncio)."""
    return from_grpc(endpoint, e.code(), e.details())
