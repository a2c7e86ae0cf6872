"""A client's conversation with its brokers: its identity headers, deadlines, RocketMQ statuses
turned into exceptions (errors.py) and routes. All I/O goes through its Transport (transport.py)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from rockmq.client.errors import ClientClosed, from_status
from rockmq.client.queues import Queue
from rockmq.client.transport import ADMIN, BATCH, MESSAGING, Call, GrpcTransport, Transport
from rockmq.protocol import pb, rpc
from rockmq.protocol.channels import client_metadata, new_client_id
from rockmq.protocol.endpoints import address_of, endpoints_of

OK_CODES = (pb.OK, pb.MULTIPLE_RESULTS)
_BATCH_OK_CODES = (*OK_CODES, pb.MESSAGE_NOT_FOUND)


class Session:
    def __init__(self, access_point: str, request_timeout_s: float, client_id: str | None = None,
                 lane: str | None = None, transport: Transport | None = None) -> None:
        """With a `transport` of the caller's, the caller closes it; else the session makes a
        GrpcTransport and closes it with itself."""
        self.access_point = access_point
        self.request_timeout_s = request_timeout_s
        self.client_id = client_id or new_client_id()
        self.metadata = client_metadata(self.client_id, lane=lane)
        self.transport: Transport = transport or GrpcTransport()
        self._owns_transport = transport is None
        self.closed = False

    def _call(self, endpoint: str, service: str, method: str, request: Any, timeout: float | None) -> Call:
        if self.closed:
            raise ClientClosed("the client is closed")
        return Call(endpoint, service, method, request, self.metadata, timeout or self.request_timeout_s)

    async def unary(self, endpoint: str, method: str, request: Any, timeout: float | None = None) -> Any:
        """Call a unary MessagingService method; raise for transport errors and non-OK statuses."""
        reply = await self.transport.unary(self._call(endpoint, MESSAGING, method, request, timeout))
        if reply.status.code not in OK_CODES:
            raise from_status(reply.status.code, reply.status.message)
        return reply

    def stream(self, endpoint: str, method: str, request: Any, timeout: float) -> AsyncGenerator[Any, None]:
        """The frames of a streaming MessagingService method; statuses in them are the caller's."""
        return self.transport.stream(self._call(endpoint, MESSAGING, method, request, timeout))

    async def batch(self, endpoint: str, method: str, request: Any, timeout: float | None = None) -> Any:
        """Call a method of rockmq's BatchMessaging service (many messages per reply); raises
        Unimplemented against a broker without it."""
        reply = await self.transport.unary(self._call(endpoint, BATCH, method, request, timeout))
        if reply.status.code not in _BATCH_OK_CODES:
            raise from_status(reply.status.code, reply.status.message)
        return reply

    async def admin(self, endpoint: str, method: str, request: Any, timeout: float | None = None) -> Any:
        """Call a method of rockmq's admin service (it answers with gRPC status codes)."""
        return await self.transport.unary(self._call(endpoint, ADMIN, method, request, timeout))

    async def route(self, topic: str) -> list[Queue]:
        request = rpc.QueryRouteRequest(topic=pb.Resource(name=topic), endpoints=endpoints_of(self.access_point))
        reply = await self.unary(self.access_point, "QueryRoute", request)
        return [Queue(topic, q.broker.name, address_of(q.broker.endpoints), q.id) for q in reply.message_queues]

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._owns_transport:
            await self.transport.close()
