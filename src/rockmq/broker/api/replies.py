"""Every reply the servicers build from a result or a refusal (like RocketMQ's ResponseBuilder).

`status_of` is the one place a `BrokerError` (or a crash) becomes a status: a RocketMQ
`status{code, message}` for MessagingService and BatchMessaging, which answer with gRPC OK as
the official clients expect, and through `grpc_code` a gRPC status for Admin, whose refusals
the CLI prints as one line. A crash is logged and answered INTERNAL_ERROR: the broker keeps
serving.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message

from rockmq.broker.cluster.routes import Holder
from rockmq.broker.send import SendResult
from rockmq.protocol import pb, rpc
from rockmq.protocol.endpoints import endpoints_of
from rockmq.protocol.errors import OK as OK
from rockmq.protocol.errors import AlreadyExists, BrokerError, grpc_code
from rockmq.protocol.errors import status as status
from rockmq.protocol.field_keys import SendMessageResponseFields, SendResultEntryFields
from rockmq.protocol.wire import delimited, varint

log = logging.getLogger(__name__)
INTERNAL = "internal error; see the broker log"
Reply = rpc.ReceiveMessageResponse | rpc.PullMessageResponse  # the streamed replies


NOT_FOUND = status(pb.MESSAGE_NOT_FOUND, "no new message")
MULTIPLE = status(pb.MULTIPLE_RESULTS, "entries differ; see each")


def status_of(error: BaseException, what: str = "request") -> pb.Status:
    """The status a refusal (BrokerError) or a crash (anything else, logged) is answered with."""
    if isinstance(error, BrokerError):
        return status(error.code, error.message)
    log.error("%s failed", what, exc_info=error)
    return status(pb.INTERNAL_ERROR, INTERNAL)


def entry_results(results: list[BrokerError | None]) -> tuple[pb.Status, list[pb.Status | None]]:
    """A request with per-entry results -> its top-level status and each entry's (None: OK),
    for the hand-encoded ack replies (protocol/consume_replies.py)."""
    return entry_statuses([None if r is None else status_of(r) for r in results])


def entry_statuses(entries: list[pb.Status | None]) -> tuple[pb.Status, list[pb.Status | None]]:
    """Each entry's status (None: OK) -> the request's top-level status, and them."""
    failed = [st for st in entries if st is not None]
    if not failed:
        return OK, entries
    return (multi_status(failed) if len(failed) == len(entries) else MULTIPLE), entries


def multi_status(statuses: list[pb.Status]) -> pb.Status:
    """The top-level status of a request with per-entry results."""
    if not statuses:
        return OK
    first = statuses[0]
    code = first.code
    if all(st is first or st.code == code for st in statuses):  # `is`: most are the one OK
        return first
    return MULTIPLE


_OK_ENTRY_STATUS = delimited(SendResultEntryFields.STATUS, OK.SerializeToString())
_OK_CODE = pb.OK
_MESSAGE_ID, _OFFSET, _ENTRIES = SendResultEntryFields.MESSAGE_ID, SendResultEntryFields.OFFSET, SendMessageResponseFields.ENTRIES


def send_reply(results: list[SendResult]) -> bytes:
    """SendMessage's reply, encoded: what `SendMessageResponse.SerializeToString` gives for it
    (tests/unit/test_send_reply.py), without a protobuf object per entry."""
    parts: list[bytes] = []
    statuses: list[pb.Status] = []
    for r in results:
        if r.code == _OK_CODE and r.message_id and not r.transaction_id and not r.recall_handle:  # most entries
            statuses.append(OK)
            mid = r.message_id.encode()
            entry_bytes = b"".join((_OK_ENTRY_STATUS, _MESSAGE_ID, varint(len(mid)), mid,
                                    _OFFSET + varint(r.offset) if r.offset else b""))
            parts.append(_ENTRIES + varint(len(entry_bytes)) + entry_bytes)
            continue
        st = OK if r.code == _OK_CODE else status(r.code, r.message)
        statuses.append(st)
        entry = [_OK_ENTRY_STATUS if st is OK else delimited(SendResultEntryFields.STATUS, st.SerializeToString())]
        if r.message_id:  # proto3 leaves an empty string out (a message refused for having no id)
            entry.append(delimited(SendResultEntryFields.MESSAGE_ID, r.message_id.encode()))
        if r.transaction_id:
            entry.append(delimited(SendResultEntryFields.TRANSACTION_ID, r.transaction_id.encode()))
        if r.offset:
            entry += (SendResultEntryFields.OFFSET, varint(r.offset))
        if r.recall_handle:
            entry.append(delimited(SendResultEntryFields.RECALL_HANDLE, r.recall_handle.encode()))
        parts.append(delimited(SendMessageResponseFields.ENTRIES, b"".join(entry)))
    return b"".join((delimited(SendMessageResponseFields.STATUS, multi_status(statuses).SerializeToString()), *parts))


def found_status(found: bool) -> pb.Status:
    """A receive or pull: OK with messages, MESSAGE_NOT_FOUND without."""
    return OK if found else NOT_FOUND


def serialized(reply: bytes | Message) -> bytes:
    """The serializer of a method whose handler answers with bytes encoded by hand, or with a
    reply object (a refusal, from `unary`)."""
    return reply if isinstance(reply, bytes) else reply.SerializeToString()


def status_frame(response_type: type[Reply], st: pb.Status) -> bytes:
    """A streamed reply's status frame."""
    return response_type(status=st).SerializeToString()


def now_frame(response_type: type[rpc.ReceiveMessageResponse]) -> bytes:
    """ReceiveMessage's closing frame: the broker's time of delivery."""
    frame = response_type()
    frame.delivery_timestamp.GetCurrentTime()
    return frame.SerializeToString()


def message_queues(topic: str, queues: list[tuple[Holder, int]], here: str,
                   requested: pb.Endpoints, tls: bool) -> list[pb.MessageQueue]:
    """A route's queues as clients get them. Each broker is reached at the endpoint it
    registered of the client's kind (`tls`: it came in over TLS), except this one (`here`): at
    the address the client used to get here, if it names one. Several ("replica;primary", which
    official clients dial as one channel, reaching any of them) are not where this broker's
    queues are written: its own endpoint then."""
    def endpoints(holder: Holder) -> pb.Endpoints:
        if holder.broker == here and len(requested.addresses) == 1:
            return requested
        return endpoints_of(holder.endpoint_for(tls))

    return [pb.MessageQueue(topic=pb.Resource(name=topic), id=queue_id, permission=_permission(h),
                            broker=pb.Broker(name=h.broker, id=0, endpoints=endpoints(h)),
                            accept_message_types=h.message_types) for h, queue_id in queues]


def _permission(holder: Holder) -> pb.Permission:
    """What clients may do with a holder's queues: its topic's permission, and no writes on a
    replica whose primary is out of reach."""
    readable, writable = "r" in holder.perm, "w" in holder.perm and holder.writable
    return (pb.READ_WRITE if readable and writable else pb.READ if readable else pb.WRITE if writable
            else pb.NONE)


Handler = TypeVar("Handler", bound=Callable[..., Awaitable[Any]])


def unary(response_type: type) -> Callable[[Handler], Handler]:
    """Wrap a unary RocketMQ-style handler: a refusal or crash is a reply carrying its status."""

    def wrap(fn: Handler) -> Handler:
        @functools.wraps(fn)
        async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            try:
                return await fn(self, request, context)
            except Exception as e:
                return response_type(status=status_of(e, fn.__name__))

        return handler  # type: ignore[return-value]

    return wrap


def admin_call(fn: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """Wrap an Admin handler (sync or async, taking the request, and the call's context if it
    names one): a refusal or crash aborts the call with its gRPC status and one readable line."""
    with_context = len(inspect.signature(fn).parameters) == 3  # (self, request, context)

    @functools.wraps(fn)
    async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        try:
            result = fn(self, request, context) if with_context else fn(self, request)
            return await result if inspect.isawaitable(result) else result
        except AlreadyExists as e:
            await context.abort(grpc.StatusCode.ALREADY_EXISTS, e.message)
        except Exception as e:
            st = status_of(e, f"admin {fn.__name__}")
            await context.abort(grpc_code(st), st.message)

    return handler
