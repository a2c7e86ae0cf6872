"""What the connection limits cost a call: a gRPC server's CPU per unary call with and without them, interleaved.

    PYTHONPATH=$PWD/src python bench/connection_limits_bench.py [--rounds 5] [--calls 20000]

gRPC core enforces the limits (rockmq/plumbing/connection_limits.py): the idle timer is a filter on the
server's channel stack that every call passes through, the count a check at accept. Each round runs
a grpc.aio server with an echo method twice, once with the broker's default limits' channel args
and once without, in child processes, a client in the same child driving `--concurrency` calls in
flight over one connection; it prints the server's CPU µs per call (client included, the same for
both) and calls per second, medians of the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time

import grpc


async def _run(limits: bool, calls: int, concurrency: int) -> tuple[float, float]:
    from rockmq.config import Settings

    options = Settings().connection_limits.server_options() if limits else []
    server = grpc.aio.server(options=[*options, ("grpc.so_reuseport", 0)])

    async def echo(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return request

    handler = grpc.method_handlers_generic_handler("bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)})
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary("/bench.Echo/Echo")
        await call(b"warm")
        left = calls

        async def loop() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                await call(b"x" * 100)

        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(concurrency)))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await server.stop(None)
    return cpu / calls * 1e6, calls / wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--child", choices=["with", "without"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(_run(args.child == "with", args.calls, args.concurrency))))
        return
    results: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
    for _ in range(args.rounds):
        for kind in results:
            out = subprocess.run([sys.executable, __file__, "--child", kind, "--calls", str(args.calls),
                                  "--concurrency", str(args.concurrency)], capture_output=True, text=True, check=True)
            results[kind].append(tuple(json.loads(out.stdout)))
    for kind, rows in results.items():
        print(f"{kind:>7} limits: {statistics.median(r[0] for r in rows):7.1f} CPU µs/call, "
              f"{statistics.median(r[1] for r in rows):8.0f} calls/s  (rounds: {', '.join(f'{r[0]:.1f}' for r in rows)})")


if __name__ == "__main__":
    main()
