"""The client's I/O seam: every call a client makes to a broker is a `Call` handed to its
`Transport` (like httpx's transports). `GrpcTransport` is the real one; `MockTransport(handler)`
answers from a function, so code using the client is tested without a broker and without
patching the client's insides:

    def handler(call: Call):
        if call.method == "QueryRoute": return rpc.QueryRouteResponse(...)
        ...
    producer = AsyncProducer("broker:8081", transport=MockTransport(handler))

A transport raises a `RockmqError` when a call fails below the RocketMQ protocol (unreachable,
deadline, a gRPC status); RocketMQ statuses in replies are the session's to judge (session.py).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

import grpc

from rockmq.client.errors import from_rpc_error
from rockmq.plumbing.channels import ChannelCache, Metadata, Tls, open_aio_channel, open_channel
from rockmq.protocol import admin_grpc, batch, batch_grpc, svc

MESSAGING, BATCH, ADMIN = "messaging", "batch", "admin"  # RocketMQ's MessagingService, rockmq's BatchMessaging and Admin


@dataclass(frozen=True, slots=True)
class Call:
    endpoint: str
    service: str  # MESSAGING, BATCH or ADMIN
    method: str  # the gRPC method, e.g. "SendMessage"
    request: Any  # a protobuf request (Telemetry: an async iterator of them)
    metadata: Metadata
    timeout: float


class Transport(Protocol):
    async def unary(self, call: Call) -> Any:
        """The reply to a unary call."""

    def stream(self, call: Call) -> AsyncGenerator[Any, None]:
        """The replies of a streaming call (ReceiveMessage, PullMessage, Telemetry)."""

    async def close(self) -> None:
        """Release what the transport holds; it is not used afterwards."""


def _batch_stub(channel: grpc.Channel | grpc.aio.Channel) -> batch_grpc.BatchMessagingStub:
    """BatchMessaging, its Receive and Pull replies read as `ReceivedBatch`: the reply and its
    messages in one parse (-1 µs per received message against a parse per message)."""
    stub = batch_grpc.BatchMessagingStub(channel)
    service = batch.DESCRIPTOR.services_by_name["BatchMessaging"].full_name
    for method, request in (("Receive", batch.ReceiveRequest), ("Pull", batch.PullRequest)):
        setattr(stub, method, cast(Any, channel).unary_unary(
            f"/{service}/{method}", request_serializer=request.SerializeToString,
            response_deserializer=batch.ReceivedBatch.FromString, _registered_method=True))
    return stub


_STUBS: dict[str, Callable[[grpc.Channel | grpc.aio.Channel], Any]] = {
    MESSAGING: svc.MessagingServiceStub, BATCH: _batch_stub, ADMIN: admin_grpc.AdminStub}


class GrpcTransport:
    """gRPC channels per endpoint (plumbing/channels.py: rockmq's options, remade after a fork):
    asyncio ones, and blocking ones for `unary_blocking` (made on its first use); TLS ones with `tls`."""

    def __init__(self, tls: Tls | None = None) -> None:
        self.tls = tls
        self._stubs: ChannelCache[str, tuple[grpc.aio.Channel, dict[str, Any]]] = ChannelCache(self._open)
        self._blocking: ChannelCache[str, tuple[grpc.Channel, dict[str, Any]]] = ChannelCache(self._open_blocking)

    def _open(self, endpoint: str) -> tuple[grpc.aio.Channel, dict[str, Any]]:
        channel = open_aio_channel(endpoint, self.tls)
        return channel, {service: stub(channel) for service, stub in _STUBS.items()}

    def _open_blocking(self, endpoint: str) -> tuple[grpc.Channel, dict[str, Any]]:
        channel = open_channel(endpoint, self.tls)
        return channel, {service: stub(channel) for service, stub in _STUBS.items()}

    def _method(self, call: Call) -> Any:
        return getattr(self._stubs.get(call.endpoint)[1][call.service], call.method)

    def unary_blocking(self, call: Call) -> Any:
        """The reply to a unary call, waited for in the calling thread (not an event loop's): the
        sync Producer's first attempt skips two thread hand-offs this way."""
        try:
            return getattr(self._blocking.get(call.endpoint)[1][call.service], call.method)(
                call.request, metadata=call.metadata, timeout=call.timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(call.endpoint, e) from None

    async def unary(self, call: Call) -> Any:
        try:
            return await self._method(call)(call.request, metadata=call.metadata, timeout=call.timeout)
        except grpc.aio.AioRpcError as e:
            raise from_rpc_error(call.endpoint, e) from None

    async def stream(self, call: Call) -> AsyncGenerator[Any, None]:
        rpc = self._method(call)(call.request, metadata=call.metadata, timeout=call.timeout)
        try:
            async for reply in rpc:
                yield reply
        except grpc.aio.AioRpcError as e:
            raise from_rpc_error(call.endpoint, e) from None
        finally:
            rpc.cancel()

    async def close(self) -> None:
        for channel, _ in self._stubs.take_all():
            await channel.close()
        for blocking, _ in self._blocking.take_all():
            blocking.close()


Handler = Callable[[Call], Any]


class MockTransport:
    """Answers every call with `handler(call)`: a reply (or, for a stream, an iterable or async
    iterable of replies), possibly awaitable. A handler raising a RockmqError fails the call."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.calls: list[Call] = []  # every call made, in order
        self.closed = False

    async def _answer(self, call: Call) -> Any:
        self.calls.append(call)
        reply = self.handler(call)
        return await reply if inspect.isawaitable(reply) else reply

    async def unary(self, call: Call) -> Any:
        return await self._answer(call)

    async def stream(self, call: Call) -> AsyncGenerator[Any, None]:
        replies = await self._answer(call)
        if hasattr(replies, "__aiter__"):
            async for reply in replies:
                yield reply
        else:
            for reply in replies:
                yield reply

    async def close(self) -> None:
        self.closed = True
