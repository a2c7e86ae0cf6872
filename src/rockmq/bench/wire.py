"""The bench's own RocketMQ 5 gRPC calls: cheap to build, counted into a Tally.

Used by the raw scenarios (produce-*, consume, consume-batch, latency, soak) and by
bench/timer_bench.py; the `-own` scenarios go through rockmq's client instead.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Sequence
from typing import TypeVar

import grpc

from rockmq.bench.jobs import Tally
from rockmq.bench.options import NEW_LITE, Options
from rockmq.client.errors import from_status
from rockmq.plumbing.channels import Tls, client_metadata, open_aio_channel, open_channel
from rockmq.protocol._gen.apache.rocketmq.v2 import definition_pb2 as pb
from rockmq.protocol._gen.apache.rocketmq.v2 import service_pb2 as svc
from rockmq.protocol._gen.apache.rocketmq.v2 import service_pb2_grpc as svc_grpc
from rockmq.protocol._gen.rockmq.messaging.v1 import batch_pb2 as batch_pb
from rockmq.protocol._gen.rockmq.messaging.v1 import batch_pb2_grpc as batch_grpc
from rockmq.protocol.endpoints import endpoints_of

OK = pb.Code.OK
MESSAGE_NOT_FOUND = pb.Code.MESSAGE_NOT_FOUND
INVISIBLE_SECONDS = 30
LONG_POLL_SECONDS = 1
CONNECT_TIMEOUT = 5.0  # loopback: a broker that is up answers at once

R = TypeVar("R")  # an RPC's reply


def reachable(endpoint: str, tls: Tls | None = None, timeout: float = CONNECT_TIMEOUT) -> bool:
    """Whether a gRPC server answers at `endpoint` within `timeout` (checked once, before a run)."""
    with open_channel(endpoint, tls) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            return False
    return True


class SetupError(Exception):
    """The broker could not be reached or refused the route query."""


def describe(status: pb.Status) -> str:
    """Render a reply status the way the protocol docs name it."""
    return str(from_status(status.code, status.message))


class Client:
    """One channel to the broker plus a cheap factory for unique messages."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self._channel = open_aio_channel(opts.endpoint, opts.tls)
        self.stub = svc_grpc.MessagingServiceStub(self._channel)
        self.batch_stub = batch_grpc.BatchMessagingStub(self._channel)
        tag = uuid.uuid4().hex.upper()
        self._metadata = client_metadata(f"rockmq-bench@{socket.gethostname()}@{os.getpid()}@{tag[:8]}", version="rockmq-bench")
        self.credentials = opts.credentials()
        self.topic = pb.Resource(name=opts.topic)
        self.group = pb.Resource(name=opts.group)
        self.queue = pb.MessageQueue()
        # Copying a template and setting the id, body and born time costs about half of building
        # each message from keyword arguments; ids are a per-process random prefix plus a counter.
        self._template = pb.Message(
            topic=self.topic,
            system_properties=pb.SystemProperties(
                message_type=message_type(opts), body_encoding=pb.IDENTITY,
                born_host=socket.gethostname()
            ),
        )
        self._id_prefix = tag[8:24]
        self._sequence = 0

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """Every call's headers: signed (once a second) when the bench has credentials."""
        return self._metadata if self.credentials is None else self._metadata + self.credentials.headers()

    async def open(self) -> None:
        """Connect and query the route: it auto-creates the topic and names a queue to receive from."""
        try:
            await asyncio.wait_for(self._channel.channel_ready(), CONNECT_TIMEOUT)
        except TimeoutError:
            raise SetupError(f"no broker at {self.opts.endpoint} within {CONNECT_TIMEOUT:.0f} s") from None
        request = svc.QueryRouteRequest(topic=self.topic, endpoints=endpoints_of(self.opts.endpoint))
        reply = await self.stub.QueryRoute(request, metadata=self.metadata, timeout=self.opts.rpc_timeout)
        if reply.status.code != OK or not reply.message_queues:
            raise SetupError(f"QueryRoute {self.opts.topic}: {describe(reply.status)}")
        self.queue = reply.message_queues[0]

    async def close(self) -> None:
        """Close the channel, cancelling anything still in flight."""
        await self._channel.close()

    def send_request(self, count: int) -> svc.SendMessageRequest:
        """`count` fresh messages sharing one born timestamp, each with its own random body (equal
        bodies would compress to nothing in the store and flatter every figure)."""
        seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
        request = svc.SendMessageRequest()
        size, lite, priorities = self.opts.size, self.opts.lite_topics, self.opts.priorities
        bodies = os.urandom(count * size)
        for i in range(count):
            message = request.messages.add()
            message.CopyFrom(self._template)
            message.body = bodies[i * size:(i + 1) * size]
            props = message.system_properties
            props.message_id = f"{self._id_prefix}{self._sequence:016X}"
            props.born_timestamp.seconds = seconds
            props.born_timestamp.nanos = nanos
            if lite is not None:
                props.lite_topic = self.lite_topic(lite)
            elif priorities is not None:
                props.priority = self._sequence % priorities
            self._sequence += 1
        return request

    def lite_topic(self, count: int) -> str:
        """The lite topic of the message numbered `_sequence`: one of `count` shared by every client
        process in turn, or (NEW_LITE) one of its own, named after this client and the number."""
        if count == NEW_LITE:
            return f"{self._id_prefix[:8]}-{self._sequence}"
        return f"lite-{self._sequence % count}"


def message_type(opts: Options) -> pb.MessageType:
    """The bench's messages' type: LITE with --lite-topics, PRIORITY with --priorities, else NORMAL."""
    if opts.lite_topics is not None:
        return pb.LITE
    return pb.NORMAL if opts.priorities is None else pb.PRIORITY


async def call(tally: Tally, method: str, pending: Awaitable[R], messages: int = 1) -> R | None:
    """Await one RPC, counted as a request; a gRPC error fails `messages` and gives None."""
    tally.requests += 1
    try:
        return await pending
    except grpc.aio.AioRpcError as exc:
        tally.fail(f"{method} {exc.code().name}: {exc.details()}", messages)
        return None


def count_ok(tally: Tally, method: str, sent: int, statuses: Sequence[pb.Status], overall: pb.Status) -> int:
    """Count a reply's OK entries; the rest of the `sent` failed, for the first refusal's reason."""
    done = sum(1 for status in statuses if status.code == OK)
    tally.ok += done
    tally.finished = time.monotonic()
    if done < sent:
        failed = next((status for status in statuses if status.code != OK), overall)
        tally.fail(f"{method} {describe(failed)}", sent - done)
    return done


async def send(client: Client, tally: Tally, count: int) -> bool:
    """One SendMessage of `count` messages; True when every message was stored."""
    pending = client.stub.SendMessage(client.send_request(count), metadata=client.metadata, timeout=client.opts.rpc_timeout)
    reply = await call(tally, "SendMessage", pending, count)
    return reply is not None and count_ok(tally, "SendMessage", count, [e.status for e in reply.entries], reply.status) == count


async def receive(client: Client, tally: Tally, count: int) -> list[svc.AckMessageEntry] | None:
    """One POP receive of up to `count` messages; None when the topic is drained or it failed."""
    request = svc.ReceiveMessageRequest(
        group=client.group,
        message_queue=client.queue,
        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
        batch_size=count,
        invisible_duration={"seconds": INVISIBLE_SECONDS},
        auto_renew=False,
        long_polling_timeout={"seconds": LONG_POLL_SECONDS},
    )
    tally.requests += 1
    entries: list[svc.AckMessageEntry] = []
    status: pb.Status | None = None
    try:
        # The broker ends the poll 0.5 s before this deadline (protocol: ReceiveMessage).
        call = client.stub.ReceiveMessage(
            request, metadata=client.metadata, timeout=LONG_POLL_SECONDS + client.opts.rpc_timeout
        )
        async for reply in call:
            kind = reply.WhichOneof("content")
            if kind == "status":
                status = reply.status
            elif kind == "message":
                props = reply.message.system_properties
                entries.append(svc.AckMessageEntry(message_id=props.message_id, receipt_handle=props.receipt_handle))
    except grpc.aio.AioRpcError as exc:
        tally.fail(f"ReceiveMessage {exc.code().name}: {exc.details()}")
        return None
    if status is None:
        tally.fail("ReceiveMessage: stream carried no status")
        return None
    if status.code == MESSAGE_NOT_FOUND:
        return None
    if status.code != OK:
        tally.fail(f"ReceiveMessage {describe(status)}")
        return None
    return entries


async def ack(client: Client, tally: Tally, entries: list[svc.AckMessageEntry]) -> None:
    """Ack a whole received batch in one request."""
    request = svc.AckMessageRequest(group=client.group, topic=client.topic, entries=entries)
    pending = client.stub.AckMessage(request, metadata=client.metadata, timeout=client.opts.rpc_timeout)
    if (reply := await call(tally, "AckMessage", pending, len(entries))) is not None:
        count_ok(tally, "AckMessage", len(entries), [entry.status for entry in reply.entries], reply.status)


async def receive_batched(client: Client, tally: Tally, count: int) -> list[str] | None:
    """rockmq's BatchMessaging.Receive: many messages per reply; -> receipt handles."""
    request = batch_pb.ReceiveRequest(
        group=client.opts.group, topic=client.opts.topic, batch_size=count,
        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"),
        invisible_duration_ms=INVISIBLE_SECONDS * 1000, long_polling_timeout_ms=LONG_POLL_SECONDS * 1000,
    )
    pending = client.batch_stub.Receive(request, metadata=client.metadata, timeout=LONG_POLL_SECONDS + client.opts.rpc_timeout)
    if (reply := await call(tally, "Receive", pending)) is None:
        return None
    if reply.status.code != OK:
        if reply.status.code != MESSAGE_NOT_FOUND:
            tally.fail(f"Receive {describe(reply.status)}")
        return None
    return [pb.Message.FromString(raw).system_properties.receipt_handle for raw in reply.messages]


async def ack_batched(client: Client, tally: Tally, handles: list[str]) -> None:
    """rockmq's BatchMessaging.Ack of a whole received batch."""
    request = batch_pb.AckRequest(group=client.opts.group, topic=client.opts.topic, receipt_handles=handles)
    pending = client.batch_stub.Ack(request, metadata=client.metadata, timeout=client.opts.rpc_timeout)
    if (reply := await call(tally, "Ack", pending, len(handles))) is not None:
        count_ok(tally, "Ack", len(handles), reply.entries, reply.status)
