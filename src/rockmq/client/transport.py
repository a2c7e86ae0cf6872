"""The one seam between the client API and the network: gRPC channels per broker endpoint, the
client's identity headers, deadlines, and wire statuses turned into exceptions (errors.py)."""

from __future__ import annotations

from dataclasses import dataclass

import grpc

from rockmq.client.errors import ClientClosed, Unimplemented, from_rpc_error, from_status
from rockmq.protocol import admin_grpc, batch_grpc, pb, rpc, svc
from rockmq.protocol.channels import ChannelCache, client_metadata, new_client_id, open_aio_channel
from rockmq.protocol.endpoints import address_of, endpoints_of

OK_CODES = (pb.OK, pb.MULTIPLE_RESULTS)


@dataclass(frozen=True)
class Queue:
    """One queue of a topic on one broker (queue ids are per broker)."""

    topic: str
    broker: str
    endpoint: str
    queue_id: int


def queue_order(queue: Queue) -> tuple[str, str, int, str]:
    """The order every client agrees on whatever order a route lists queues in: (topic, broker,
    queue_id), as RocketMQ sorts them."""
    return queue.topic, queue.broker, queue.queue_id, queue.endpoint


class Transport:
    def __init__(self, access_point: str, request_timeout_s: float, client_id: str | None = None,
                 lane: str | None = None) -> None:
        self.access_point = access_point
        self.request_timeout_s = request_timeout_s
        self.client_id = client_id or new_client_id()
        self.metadata = client_metadata(self.client_id, lane=lane)
        self._channels = ChannelCache(open_aio_channel)
        self._stubs = ChannelCache(lambda endpoint: svc.MessagingServiceStub(self._channel(endpoint)))
        self.closed = False

    def _channel(self, endpoint: str) -> grpc.aio.Channel:
        if self.closed:
            raise ClientClosed("the client is closed")
        return self._channels.get(endpoint)

    def stub(self, endpoint: str) -> svc.MessagingServiceStub:
        return self._stubs.get(endpoint)

    async def batch(self, endpoint: str, method: str, request, timeout: float | None = None):
        """Call a method of rockmq's BatchMessaging service (many messages per reply); raises
        Unimplemented against a broker without it."""
        try:
            reply = await getattr(batch_grpc.BatchMessagingStub(self._channel(endpoint)), method)(
                request, metadata=self.metadata, timeout=timeout or self.request_timeout_s)
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                raise Unimplemented(f"{endpoint} has no {method}") from None
            raise from_rpc_error(endpoint, e) from None
        if reply.status.code not in (*OK_CODES, pb.MESSAGE_NOT_FOUND):
            raise from_status(reply.status.code, reply.status.message)
        return reply

    async def admin(self, endpoint: str, method: str, request, timeout: float | None = None):
        """Call a method of rockmq's admin service (it answers with gRPC status codes)."""
        try:
            return await getattr(admin_grpc.AdminStub(self._channel(endpoint)), method)(
                request, metadata=self.metadata, timeout=timeout or self.request_timeout_s)
        except grpc.aio.AioRpcError as e:
            raise from_rpc_error(endpoint, e) from None

    async def unary(self, endpoint: str, method: str, request, timeout: float | None = None):
        """Call a unary MessagingService method; raise for transport errors and non-OK statuses."""
        try:
            reply = await getattr(self.stub(endpoint), method)(request, metadata=self.metadata,
                                                                timeout=timeout or self.request_timeout_s)
        except grpc.aio.AioRpcError as e:
            raise from_rpc_error(endpoint, e) from None
        if reply.status.code not in OK_CODES:
            raise from_status(reply.status.code, reply.status.message)
        return reply

    async def route(self, topic: str) -> list[Queue]:
        request = rpc.QueryRouteRequest(topic=pb.Resource(name=topic), endpoints=endpoints_of(self.access_point))
        reply = await self.unary(self.access_point, "QueryRoute", request)
        return [Queue(topic, q.broker.name, address_of(q.broker.endpoints), q.id) for q in reply.message_queues]

    async def close(self) -> None:
        self.closed = True
        for channel in self._channels.take_all():
            await channel.close()
        self._stubs.take_all()
