"""Broker CPU per POP-consumed message without gRPC: the BatchMessaging Receive and Ack handlers
and the official clients' way (MessagingService ReceiveMessage streams and AckMessage), called
in-process on a real broker (temporary data directory), timed with process_time. Compare two
trees A/B in one run:

    PYTHONPATH=$PWD/src python bench/pop_bench.py [--messages 100000] [--batch 256]

Prints µs per message for receive (reply encoded) and ack, BatchMessaging (receives of `--batch`)
and the official clients' way (ReceiveMessage of `--ack-batch` + one AckMessage of its entries),
the latter through the methods as registered (`handler()`): from the request's bytes to the
reply's, deserializer and serializer included.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import timedelta
from typing import Any

from rockmq.broker.api.batch import BatchServicer
from rockmq.broker.api.messaging import MessagingServicer
from rockmq.broker.cluster.lite_relay import LiteRelay
from rockmq.broker.server import Broker
from rockmq.config import Settings
from rockmq.protocol import batch, pb, rpc
from rockmq.protocol.conventions import MESSAGING_SERVICE
from rockmq.protocol.send_request import read


class _Context:
    """What a handler reads of its gRPC context: no metadata."""

    def invocation_metadata(self) -> tuple[()]:
        return ()

    def time_remaining(self) -> None:
        return None

    def peer(self) -> str:
        return "ipv4:127.0.0.1:1"


def _serialized(reply: Any) -> bytes:
    """Replies are bytes encoded by hand or protobuf objects: serializing is part of the cost."""
    return reply if isinstance(reply, bytes) else bytes(reply.SerializeToString())


async def _run(args: argparse.Namespace, data_dir: str) -> dict[str, float]:
    broker = Broker(Settings(host="127.0.0.1", port=0, data_dir=data_dir))
    await broker.start()
    try:
        b = broker
        messaging = MessagingServicer(b.ctx, b.sender, b.pop, b.puller, b.timers, b.transactions, b.clients, b.cluster, b.streams,
                                      b.lite, b.lite_routing, LiteRelay(b.cluster))
        batch_api = BatchServicer(b.ctx, b.clients, b.pop, b.puller)
        topic = "pop-bench"
        body = b"x" * args.size
        total = args.messages * 2
        for first in range(0, total, 64):
            sent = [pb.Message(topic=pb.Resource(name=topic), body=body,
                               system_properties=pb.SystemProperties(message_id=f"{i:032X}")) for i in range(first, first + 64)]
            await broker.sender.send(read(rpc.SendMessageRequest(messages=sent).SerializeToString()))
        ctx = _Context()
        figures: dict[str, float] = {}
        receive_s = ack_s = 0.0
        done = 0
        group = "pop-bench-a"
        while done < args.messages:
            request = batch.ReceiveRequest(group=group, topic=topic, batch_size=args.batch, invisible_duration_ms=60_000)
            t0 = time.process_time()
            reply = _serialized(await batch_api.Receive(request, ctx))
            receive_s += time.process_time() - t0
            handles = [pb.Message.FromString(m).system_properties.receipt_handle
                       for m in batch.ReceiveResponse.FromString(reply).messages]
            if not handles:
                break
            done += len(handles)
            t0 = time.process_time()
            _serialized(await batch_api.Ack(batch.AckRequest(group=group, topic=topic, receipt_handles=handles), ctx))
            ack_s += time.process_time() - t0
        assert done >= args.messages, f"{done} of {args.messages} messages received"
        figures["batch receive"], figures["batch ack"] = receive_s / done * 1e6, ack_s / done * 1e6
        receive_s, ack_s = await _official(messaging, args, topic, "pop-bench-b")
        figures["v2 receive"], figures["v2 ack"] = receive_s / args.messages * 1e6, ack_s / args.messages * 1e6
        return figures
    finally:
        await broker.stop()


def _method(messaging: MessagingServicer, name: str) -> Any:
    """A MessagingService method as the server runs it: deserializer, handler, serializer."""
    details = _Call(f"/{MESSAGING_SERVICE}/{name}")
    return messaging.handler().service(details)  # type: ignore[arg-type]


class _Call:
    def __init__(self, method: str) -> None:
        self.method = method
        self.invocation_metadata = ()


async def _official(messaging: MessagingServicer, args: argparse.Namespace, topic: str, group: str) -> tuple[float, float]:
    """ReceiveMessage of `--ack-batch` + one AckMessage of its entries, bytes in and bytes out -> CPU seconds of each."""
    ctx = _Context()
    receive, ack = _method(messaging, "ReceiveMessage"), _method(messaging, "AckMessage")
    request = rpc.ReceiveMessageRequest(
        group=pb.Resource(name=group), message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=0),
        batch_size=args.ack_batch, invisible_duration=timedelta(seconds=60)).SerializeToString()
    receive_s = ack_s = 0.0
    done = 0
    while done < args.messages:
        t0 = time.process_time()
        frames = [receive.response_serializer(frame)
                  async for frame in receive.unary_stream(receive.request_deserializer(request), ctx)]
        receive_s += time.process_time() - t0
        messages = [m.message for m in map(rpc.ReceiveMessageResponse.FromString, frames) if m.HasField("message")]
        assert messages, "nothing received"
        done += len(messages)
        ack_request = rpc.AckMessageRequest(group=pb.Resource(name=group), topic=pb.Resource(name=topic), entries=[
            rpc.AckMessageEntry(message_id=m.system_properties.message_id, receipt_handle=m.system_properties.receipt_handle)
            for m in messages]).SerializeToString()
        t0 = time.process_time()
        reply = ack.response_serializer(await ack.unary_unary(ack.request_deserializer(ack_request), ctx))
        ack_s += time.process_time() - t0
        assert rpc.AckMessageResponse.FromString(reply).status.code == pb.OK, reply
    return receive_s * args.messages / done, ack_s * args.messages / done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=256, help="messages per receive")
    parser.add_argument("--ack-batch", type=int, default=32, help="entries per AckMessage")
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        figures = asyncio.run(_run(args, data_dir))
    for name, us in figures.items():
        print(f"{name:12s} {us:6.2f} µs/message")


if __name__ == "__main__":
    main()
