"""The null broker: rockmq's gRPC services with handlers that answer OK at once and store nothing.

What no broker could beat on this machine: the same grpc.aio server (the broker's options, its
event loop) and the same services registered the same way (the servicers here subclass the
broker's, so `handler()` is the broker's own: requests decoded and replies encoded exactly as there;
SendMessage and AckMessage read from their bytes by the broker's readers), with no work in between.
SendMessage answers one OK entry per message (encoded as the broker's); ReceiveMessage streams the
status frame, `batch_size` prepared messages and the closing frame; AckMessage and
BatchMessaging.Ack answer OK entries; BatchMessaging.Receive and Pull answer `batch_size` prepared
messages (replies pre-encoded as the broker's are). With `--fsync-file`, each send, receive and ack
request also writes about as many bytes as it carries and fdatasyncs them (in a worker thread, as
the broker's commit does) before answering: the cost of a durable write per request, without
group commit. Other methods are not served (the inherited handlers find no broker behind them).

Run by `rockmq bench` (rockmq.bench.ceiling) as `python -m rockmq.bench.null_broker`; it binds
127.0.0.1:0 and writes HOST:PORT to `--ready-file` once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import socket
import sys
import threading
from collections.abc import AsyncIterator

from rockmq import malloc_tuning
from rockmq.broker.api.batch import BatchServicer
from rockmq.broker.api.messaging import MessagingServicer
from rockmq.broker.api.replies import OK, now_frame, send_reply, status_frame, unary
from rockmq.broker.send import SendResult
from rockmq.broker.server import SWITCH_INTERVAL_S, _listen
from rockmq.config import Settings
from rockmq.plumbing.ready_file import write_ready_file
from rockmq.plumbing.requests import Context
from rockmq.protocol import batch, pb, rpc
from rockmq.protocol.ack_request import AckRequest
from rockmq.protocol.consume_replies import ack_message_reply, ack_reply, messages_reply, received_reply
from rockmq.protocol.field_keys import ReceivedMessageFields
from rockmq.protocol.send_request import SentMessage
from rockmq.protocol.wire import delimited

NAME = "null-broker"
ACK_BYTES = 64  # what the fsync variant writes per acked message (a POP checkpoint's order of size)
WRAP_BYTES = 16 * 1024 * 1024  # the fsync file's size: rewritten from its start


class Disk:
    """One write + fdatasync per call, at a rolling offset of a file written in full at the start:
    the cheapest durable write (the file's size never changes, so no journal commit), as a
    ceiling should be."""

    def __init__(self, path: str, size: int) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self.zeros = bytes(size)
        for at in range(0, WRAP_BYTES, len(self.zeros)):
            os.pwrite(self.fd, self.zeros, at)
        os.fsync(self.fd)
        self.at = 0
        self.lock = threading.Lock()

    def write(self, nbytes: int) -> None:
        with self.lock:
            at = self.at if self.at + nbytes <= WRAP_BYTES else 0
            self.at = at + nbytes
        os.pwrite(self.fd, self.zeros[:nbytes], at)
        os.fdatasync(self.fd)


def prepared(i: int, size: int) -> bytes:
    """A stored message as a receiver gets it: id, receipt handle, times, queue and offset."""
    message = pb.Message(topic=pb.Resource(name="bench"), body=os.urandom(size), system_properties=pb.SystemProperties(
        message_id=f"01{os.getpid():012X}{i:020X}", message_type=pb.NORMAL, body_encoding=pb.IDENTITY,
        born_host=socket.gethostname(), store_host="127.0.0.1", queue_id=0, queue_offset=i,
        receipt_handle=f"null-{i:08d}", delivery_attempt=1))
    message.system_properties.born_timestamp.GetCurrentTime()
    message.system_properties.store_timestamp.GetCurrentTime()
    return message.SerializeToString()


class Nothing:
    """What both null servicers share: the prepared messages and the optional per-request fsync."""

    def __init__(self, size: int, disk: Disk | None, settings: Settings) -> None:
        self.disk = disk
        self.queues = settings.default_queues
        self.default_batch = settings.receive_batch
        self.messages = [prepared(i, size) for i in range(settings.max_receive_batch)]
        self.frames = [delimited(ReceivedMessageFields.MESSAGE, m) for m in self.messages]

    async def sync(self, nbytes: int) -> None:
        if self.disk is not None:
            await asyncio.to_thread(self.disk.write, nbytes)

    def batch(self, asked: int) -> list[bytes]:
        return self.messages[:asked or self.default_batch]

    def framed(self, asked: int) -> list[bytes]:
        """`batch`'s messages framed as a receive hands them out (ReceiveMessage's and Receive's field)."""
        return self.frames[:asked or self.default_batch]

    def route(self, topic: pb.Resource, endpoints: pb.Endpoints) -> list[pb.MessageQueue]:
        broker = pb.Broker(name=NAME, id=0, endpoints=endpoints)
        return [pb.MessageQueue(topic=topic, id=i, permission=pb.READ_WRITE, broker=broker,
                                accept_message_types=[pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION]) for i in range(self.queues)]


class NullMessaging(MessagingServicer):
    def __init__(self, nothing: Nothing) -> None:  # no broker behind it: the parent's parts stay unset
        self.nothing = nothing

    @unary(rpc.QueryRouteResponse)
    async def QueryRoute(self, request: rpc.QueryRouteRequest, context: Context) -> rpc.QueryRouteResponse:
        return rpc.QueryRouteResponse(status=OK, message_queues=self.nothing.route(request.topic, request.endpoints))

    @unary(rpc.QueryAssignmentResponse)
    async def QueryAssignment(self, request: rpc.QueryAssignmentRequest, context: Context) -> rpc.QueryAssignmentResponse:
        first = self.nothing.route(request.topic, request.endpoints)[0]
        return rpc.QueryAssignmentResponse(status=OK, assignments=[pb.Assignment(message_queue=first)])

    @unary(rpc.HeartbeatResponse)
    async def Heartbeat(self, request: rpc.HeartbeatRequest, context: Context) -> rpc.HeartbeatResponse:
        return rpc.HeartbeatResponse(status=OK)

    @unary(rpc.NotifyClientTerminationResponse)
    async def NotifyClientTermination(self, request: rpc.NotifyClientTerminationRequest,
                                      context: Context) -> rpc.NotifyClientTerminationResponse:
        return rpc.NotifyClientTerminationResponse(status=OK)

    async def SendMessage(self, messages: list[SentMessage], context: Context) -> bytes:
        """Read as the broker reads it (`send_request.read`, the method's deserializer), so the ceiling is gRPC plus the
        broker's own decoding."""
        await self.nothing.sync(sum(len(m.body) for m in messages))
        return send_reply([SendResult(pb.OK, "", m.message_id, i) for i, m in enumerate(messages)])

    async def ReceiveMessage(self, request: rpc.ReceiveMessageRequest, context: Context) -> AsyncIterator[bytes]:
        await self.nothing.sync(ACK_BYTES)
        response = rpc.ReceiveMessageResponse
        yield status_frame(response, OK)
        for frame in self.nothing.framed(request.batch_size):
            yield frame
        yield now_frame(response)

    @unary(rpc.AckMessageResponse)
    async def AckMessage(self, request: AckRequest, context: Context) -> bytes:
        await self.nothing.sync(ACK_BYTES * len(request.entries))
        return ack_message_reply(OK, request.entries, [None] * len(request.entries))

    @unary(rpc.UpdateOffsetResponse)
    async def UpdateOffset(self, request: rpc.UpdateOffsetRequest, context: Context) -> rpc.UpdateOffsetResponse:
        return rpc.UpdateOffsetResponse(status=OK)

    @unary(rpc.GetOffsetResponse)
    async def GetOffset(self, request: rpc.GetOffsetRequest, context: Context) -> rpc.GetOffsetResponse:
        return rpc.GetOffsetResponse(status=OK, offset=0)

    @unary(rpc.QueryOffsetResponse)
    async def QueryOffset(self, request: rpc.QueryOffsetRequest, context: Context) -> rpc.QueryOffsetResponse:
        return rpc.QueryOffsetResponse(status=OK, offset=0)


class NullBatch(BatchServicer):
    def __init__(self, nothing: Nothing) -> None:  # no broker behind it: the parent's parts stay unset
        self.nothing = nothing

    @unary(batch.ReceiveResponse)
    async def Receive(self, request: batch.ReceiveRequest, context: Context) -> bytes:
        await self.nothing.sync(ACK_BYTES)
        return received_reply(OK, self.nothing.framed(request.batch_size))

    @unary(batch.AckResponse)
    async def Ack(self, request: batch.AckRequest, context: Context) -> bytes:
        acked = len(request.receipt_handles) + sum(len(run.entries) for run in request.receipt_runs)
        await self.nothing.sync(ACK_BYTES * acked)
        return ack_reply(OK, [None] * acked)

    @unary(batch.PullResponse)
    async def Pull(self, request: batch.PullRequest, context: Context) -> bytes:
        messages = self.nothing.batch(request.batch_size)
        return messages_reply(OK, messages, request.offset + len(messages))


async def serve(size: int, fsync_file: str | None, ready_file: str) -> None:
    """Serve until SIGTERM (the bench stops it when its measurement is done); the process is
    tuned as `rockmq serve`'s (malloc, thread switch interval, frozen start-up objects)."""
    malloc_tuning.tune()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    settings = Settings(host="127.0.0.1", port=0)
    server, bound = _listen(settings, following=False, users=None)
    nothing = Nothing(size, Disk(fsync_file, size * settings.max_receive_batch) if fsync_file else None, settings)
    server.add_generic_rpc_handlers((NullMessaging(nothing).handler(), NullBatch(nothing).handler()))
    await server.start()
    gc.freeze()
    write_ready_file(ready_file, settings.host, bound.port)
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
