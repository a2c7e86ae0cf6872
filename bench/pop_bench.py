"""Broker CPU per POP-consumed message without gRPC: the BatchMessaging Receive and Ack handlers
and the MessagingService AckMessage handler, called in-process on a real broker (temporary data
directory), timed with process_time. Compare two trees A/B in one run:

    PYTHONPATH=$PWD/src python bench/pop_bench.py [--messages 100000] [--batch 256]

Prints µs per message for receive (reply encoded) and ack, BatchMessaging and the official
clients' AckMessage of `--ack-batch` entries.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from typing import Any

from rockmq.broker.api.batch import BatchServicer
from rockmq.broker.api.messaging import MessagingServicer
from rockmq.broker.server import Broker
from rockmq.config import Settings
from rockmq.protocol import batch, pb, rpc


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
        messaging = MessagingServicer(b.ctx, b.sender, b.pop, b.puller, b.timers, b.transactions, b.clients, b.cluster)
        batch_api = BatchServicer(b.ctx, b.clients, b.pop, b.puller)
        topic = "pop-bench"
        body = b"x" * args.size
        total = args.messages * 2
        for first in range(0, total, 64):
            await broker.sender.send([pb.Message(topic=pb.Resource(name=topic), body=body,
                                                 system_properties=pb.SystemProperties(message_id=f"{i:032X}"))
                                      for i in range(first, first + 64)])
        ctx = _Context()
        figures: dict[str, float] = {}
        for kind, group in (("batch", "pop-bench-a"), ("v2", "pop-bench-b")):
            receive_s = ack_s = 0.0
            done = 0
            while done < args.messages:
                request = batch.ReceiveRequest(group=group, topic=topic, batch_size=args.batch, invisible_duration_ms=60_000)
                t0 = time.process_time()
                reply = _serialized(await batch_api.Receive(request, ctx))
                receive_s += time.process_time() - t0
                got = batch.ReceiveResponse.FromString(reply)
                messages = [pb.Message.FromString(m) for m in got.messages]
                if not messages:
                    break
                done += len(messages)
                step = args.batch if kind == "batch" else args.ack_batch
                for i in range(0, len(messages), step):
                    chunk = messages[i:i + step]
                    if kind == "batch":
                        ack: Any = batch.AckRequest(group=group, topic=topic,
                                                    receipt_handles=[m.system_properties.receipt_handle for m in chunk])
                        call = batch_api.Ack
                    else:
                        ack = rpc.AckMessageRequest(group=pb.Resource(name=group), topic=pb.Resource(name=topic), entries=[
                            rpc.AckMessageEntry(message_id=m.system_properties.message_id,
                                                receipt_handle=m.system_properties.receipt_handle) for m in chunk])
                        call = messaging.AckMessage
                    t0 = time.process_time()
                    _serialized(await call(ack, ctx))
                    ack_s += time.process_time() - t0
            assert done >= args.messages, f"{done} of {args.messages} messages received"
            figures[f"{kind} receive"] = receive_s / done * 1e6
            figures[f"{kind} ack"] = ack_s / done * 1e6
        return figures
    finally:
        await broker.stop()


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
