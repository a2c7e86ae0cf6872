"""SendMessage's handler path in-process, bytes in and bytes out: this tree against another, interleaved in one run.

    PYTHONPATH=$PWD/src python bench/send_path_bench.py [--base /path/to/other/src] [--rounds 5] [--batch 32]

Each round runs a child process per tree (this one, and `--base` if given: e.g. a worktree at main), each
starting a real broker in-process (RocksDB in a temporary directory, default durable flush) and feeding it
serialized SendMessageRequests of `--batch` × `--size` bytes through what the gRPC method runs: the request
read (`send_request.read`; parsed, in a tree before it), `SendService.send`, the reply encoded (`send_reply`).
Prints CPU µs per message of the process (time.process_time: every thread, the fsync thread's and RocksDB's
too) and of the handler's thread alone (time.thread_time: the Python that SendMessage runs, and the batch
write), and messages per second (`--concurrency` requests in flight, as tasks on the loop); medians of the
rounds. The broker's CPU per message end to end is `rockmq bench --scenario produce-batch`'s to tell.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from typing import Any

import interleaved  # bench/ is on sys.path when a bench script runs


def _child(requests: int, batch: int, size: int, concurrency: int) -> tuple[float, float, float]:
    from rockmq.broker.api.replies import send_reply
    from rockmq.broker.server import Broker
    from rockmq.config import Settings
    from rockmq.protocol import pb, rpc
    from rockmq.protocol.message_id import new_message_id

    def request() -> bytes:
        messages = []
        for _ in range(batch):
            msg = pb.Message(topic=pb.Resource(name="bench"), body=os.urandom(size // 2).hex().encode(),
                             user_properties={"trace": "abc"})
            sp = msg.system_properties
            sp.message_id, sp.tag, sp.message_type, sp.born_host = new_message_id(), "created", pb.NORMAL, "127.0.0.1"
            sp.keys.append("order-1")
            sp.born_timestamp.GetCurrentTime()
            messages.append(msg)
        return rpc.SendMessageRequest(messages=messages).SerializeToString()

    async def run(data_dir: str) -> tuple[float, float, float]:
        broker = Broker(Settings(host="127.0.0.1", port=0, data_dir=data_dir))
        await broker.start()
        try:
            raws = [request() for _ in range(requests + 20)]
            sender = broker.sender

            try:  # the request read from its bytes (SendMessage's handler), or parsed (before it)
                from rockmq.protocol.send_request import read
            except ImportError:
                def read(raw: bytes) -> Any:
                    return rpc.SendMessageRequest.FromString(raw).messages

            async def one(raw: bytes) -> bytes:
                return send_reply(await sender.send(read(raw)))

            for raw in raws[:20]:  # warm up: topic created, caches filled
                await one(raw)
            todo = iter(raws[20:])
            replies: list[bytes] = []

            async def worker() -> None:  # `concurrency` of these: requests in flight, as a gRPC server has them
                for raw in todo:
                    replies.append(await one(raw))

            start, start_thread, start_wall = time.process_time(), time.thread_time(), time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            elapsed, elapsed_thread = time.process_time() - start, time.thread_time() - start_thread
            rate = requests * batch / (time.perf_counter() - start_wall)
            reply = replies[-1]
            assert rpc.SendMessageResponse.FromString(reply).status.code == pb.OK
            return elapsed / (requests * batch) * 1e6, elapsed_thread / (requests * batch) * 1e6, rate
        finally:
            await broker.stop()

    with tempfile.TemporaryDirectory() as data_dir:
        return asyncio.run(run(data_dir))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="another tree's src directory, measured interleaved with this one")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--concurrency", type=int, default=1, help="requests in flight")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.requests, args.batch, args.size, args.concurrency)))
        return
    figures: dict[str, list[list[float]]] = interleaved.rounds(
        __file__, ["--requests", str(args.requests), "--batch", str(args.batch), "--size", str(args.size),
                   "--concurrency", str(args.concurrency)],
        args.base, args.rounds)
    medians = {name: [statistics.median(v[i] for v in values) for i in (0, 1, 2)] for name, values in figures.items()}
    for name, values in figures.items():
        print(f"{name:5} process {medians[name][0]:6.2f} µs/msg, handler thread {medians[name][1]:6.2f} µs/msg, "
              f"{medians[name][2]:8,.0f} msg/s  (rounds: {', '.join(f'{p:.2f}/{t:.2f}' for p, t, _ in values)})")
    if args.base:
        print("this/base: " + ", ".join(f"{what} {medians['this'][i] / medians['base'][i]:.2f}"
                                        for i, what in enumerate(("process", "handler thread"))))


if __name__ == "__main__":
    main()
