"""The null broker: rockmq's gRPC services with handlers that answer OK at once and store nothing.

What no broker could beat on this machine: the same grpc.aio server (the broker's options, its
event loop), the same services registered the same way (requests decoded, replies encoded as the
broker does; ReceiveMessage streams pre-encoded frames), and no work in between. SendMessage
answers one OK entry per message; ReceiveMessage streams the status frame, `batch_size` prepared
messages and the closing frame; AckMessage and BatchMessaging.Ack answer OK entries;
BatchMessaging.Receive and Pull answer `batch_size` prepared messages. With `--fsync-file`, each
send, receive and ack request also writes about as many bytes as it carries and fsyncs them (in a
worker thread, as the broker's commit does) before answering: the cost of a durable write per
request, without group commit.

Run by `rockmq bench` (rockmq.bench.ceiling) as `python -m rockmq.bench.null_broker`; it binds
127.0.0.1:0 and writes HOST:PORT to `--ready-file` once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from rockmq.broker.api import batch as batch_api
from rockmq.broker.api import messaging
from rockmq.broker.api.replies import OK, now_frame, status_frame
from rockmq.broker.server import _listen
from rockmq.config import Settings
from rockmq.protocol import batch, pb, rpc
from rockmq.protocol.field_keys import ReceivedMessage
from rockmq.protocol.wire import delimited
from rockmq.ready_file import write_ready_file

NAME = "null-broker"
ACK_BYTES = 64  # what the fsync variant writes per acked message (a POP checkpoint's order of size)
WRAP_BYTES = 64 * 1024 * 1024  # the fsync file is rewritten from its start past this size


class Disk:
    """One write + fsync per call, at a rolling offset of one file (so it never grows unbounded)."""

    def __init__(self, path: str, size: int) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        self.zeros = bytes(size)
        self.at = 0
        self.lock = threading.Lock()

    def write(self, nbytes: int) -> None:
        with self.lock:
            at = self.at
            self.at = (at + nbytes) % WRAP_BYTES
        os.pwrite(self.fd, self.zeros[:nbytes], at)
        os.fsync(self.fd)


class NullBroker:
    def __init__(self, size: int, disk: Disk | None, settings: Settings) -> None:
        self.disk = disk
        self.queues = settings.default_queues
        self.default_batch = settings.receive_batch
        self.messages = [self._prepared(i, size) for i in range(settings.max_receive_batch)]
        self.frames = [delimited(ReceivedMessage.MESSAGE, m) for m in self.messages]

    @staticmethod
    def _prepared(i: int, size: int) -> bytes:
        """A stored message as a receiver gets it: id, receipt handle, times, queue and offset."""
        message = pb.Message(topic=pb.Resource(name="bench"), body=os.urandom(size), system_properties=pb.SystemProperties(
            message_id=f"01{os.getpid():012X}{i:020X}", message_type=pb.NORMAL, body_encoding=pb.IDENTITY,
            born_host=socket.gethostname(), store_host="127.0.0.1", queue_id=0, queue_offset=i,
            receipt_handle=f"null-{i:08d}", delivery_attempt=1))
        message.system_properties.born_timestamp.GetCurrentTime()
        message.system_properties.store_timestamp.GetCurrentTime()
        return message.SerializeToString()

    async def _sync(self, nbytes: int) -> None:
        if self.disk is not None:
            await asyncio.to_thread(self.disk.write, nbytes)

    def _count(self, asked: int) -> int:
        return min(asked or self.default_batch, len(self.messages))

    def _route(self, topic: pb.Resource, endpoints: pb.Endpoints) -> list[pb.MessageQueue]:
        broker = pb.Broker(name=NAME, id=0, endpoints=endpoints)
        return [pb.MessageQueue(topic=topic, id=i, permission=pb.READ_WRITE, broker=broker,
                                accept_message_types=[pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION]) for i in range(self.queues)]

    async def QueryRoute(self, request: rpc.QueryRouteRequest, context: Any) -> rpc.QueryRouteResponse:
        return rpc.QueryRouteResponse(status=OK, message_queues=self._route(request.topic, request.endpoints))

    async def QueryAssignment(self, request: rpc.QueryAssignmentRequest, context: Any) -> rpc.QueryAssignmentResponse:
        first = self._route(request.topic, request.endpoints)[0]
        return rpc.QueryAssignmentResponse(status=OK, assignments=[pb.Assignment(message_queue=first)])

    async def Heartbeat(self, request: rpc.HeartbeatRequest, context: Any) -> rpc.HeartbeatResponse:
        return rpc.HeartbeatResponse(status=OK)

    async def NotifyClientTermination(self, request: rpc.NotifyClientTerminationRequest,
                                      context: Any) -> rpc.NotifyClientTerminationResponse:
        return rpc.NotifyClientTerminationResponse(status=OK)

    async def SendMessage(self, request: rpc.SendMessageRequest, context: Any) -> rpc.SendMessageResponse:
        await self._sync(sum(len(m.body) for m in request.messages))
        return rpc.SendMessageResponse(status=OK, entries=[
            rpc.SendResultEntry(status=OK, message_id=m.system_properties.message_id, offset=i)
            for i, m in enumerate(request.messages)])

    async def ReceiveMessage(self, request: rpc.ReceiveMessageRequest, context: Any) -> AsyncIterator[bytes]:
        await self._sync(ACK_BYTES)
        response = rpc.ReceiveMessageResponse
        yield status_frame(response, OK)
        for frame in self.frames[:self._count(request.batch_size)]:
            yield frame
        yield now_frame(response)

    async def AckMessage(self, request: rpc.AckMessageRequest, context: Any) -> rpc.AckMessageResponse:
        await self._sync(ACK_BYTES * len(request.entries))
        return rpc.AckMessageResponse(status=OK, entries=[
            rpc.AckMessageResultEntry(message_id=e.message_id, receipt_handle=e.receipt_handle, status=OK)
            for e in request.entries])

    async def UpdateOffset(self, request: rpc.UpdateOffsetRequest, context: Any) -> rpc.UpdateOffsetResponse:
        return rpc.UpdateOffsetResponse(status=OK)

    async def GetOffset(self, request: rpc.GetOffsetRequest, context: Any) -> rpc.GetOffsetResponse:
        return rpc.GetOffsetResponse(status=OK, offset=0)

    async def QueryOffset(self, request: rpc.QueryOffsetRequest, context: Any) -> rpc.QueryOffsetResponse:
        return rpc.QueryOffsetResponse(status=OK, offset=0)

    async def Receive(self, request: batch.ReceiveRequest, context: Any) -> batch.ReceiveResponse:
        await self._sync(ACK_BYTES)
        return batch.ReceiveResponse(status=OK, messages=self.messages[:self._count(request.batch_size)])

    async def Ack(self, request: batch.AckRequest, context: Any) -> batch.AckResponse:
        await self._sync(ACK_BYTES * len(request.receipt_handles))
        return batch.AckResponse(status=OK, entries=[OK] * len(request.receipt_handles))

    async def Pull(self, request: batch.PullRequest, context: Any) -> batch.PullResponse:
        messages = self.messages[:self._count(request.batch_size)]
        return batch.PullResponse(status=OK, messages=messages, next_offset=request.offset + len(messages))

    def handlers(self) -> tuple[grpc.GenericRpcHandler, grpc.GenericRpcHandler]:
        """MessagingService and BatchMessaging, with the broker's (de)serializers, for the methods
        above (any other answers UNIMPLEMENTED)."""
        def unary(methods: dict[str, tuple[Any, Any]]) -> dict[str, grpc.RpcMethodHandler[Any, Any]]:
            return {name: grpc.unary_unary_rpc_method_handler(getattr(self, name), request.FromString, response.SerializeToString)
                    for name, (request, response) in methods.items() if hasattr(self, name)}

        raw: Callable[[bytes], bytes] = lambda frame: frame  # noqa: E731 - frames are encoded already, as the broker's
        v2 = unary(messaging.UNARY_METHODS)
        request = rpc.ReceiveMessageRequest
        v2["ReceiveMessage"] = grpc.unary_stream_rpc_method_handler(self.ReceiveMessage, request.FromString, raw)
        return (grpc.method_handlers_generic_handler(messaging.SERVICE, v2),
                grpc.method_handlers_generic_handler(batch_api.SERVICE, unary(batch_api.METHODS)))


async def serve(size: int, fsync_file: str | None, ready_file: str) -> None:
    """Serve until SIGTERM (the bench stops it when its measurement is done)."""
    settings = Settings(host="127.0.0.1", port=0)
    server, port = _listen(settings, following=False)
    null = NullBroker(size, Disk(fsync_file, size * settings.max_receive_batch) if fsync_file else None, settings)
    server.add_generic_rpc_handlers(null.handlers())
    await server.start()
    write_ready_file(ready_file, settings.host, port)
    await server.wait_for_termination()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rockmq.bench.null_broker", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1024, help="body bytes of the prepared messages")
    parser.add_argument("--fsync-file", help="write and fsync this file once per send, receive and ack request")
    parser.add_argument("--ready-file", required=True, help="where to write HOST:PORT once serving")
    args = parser.parse_args(argv)
    try:
        import uvloop  # as `rockmq serve`
    except ImportError:
        asyncio.run(serve(args.size, args.fsync_file, args.ready_file))
    else:
        uvloop.run(serve(args.size, args.fsync_file, args.ready_file))


if __name__ == "__main__":
    main()
