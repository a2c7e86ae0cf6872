"""What a lite send costs beside a plain one in SendService.send alone, in-process (issue 29 §5: ≤ 1.1×),
interleaved request by request so that the three share the machine's noise:

- plain: NORMAL messages to a NORMAL topic (8 queues; with `--spread-plain`, `--lite-topics` queues, each
  message of a request naming the next one, as existing's go to as many lite topics: the same fan-out);
- existing: LITE messages to `--lite-topics` existing lite topics in turn;
- creating: LITE messages each creating its lite topic, after `--warm-new` were created (past the names
  cache: as at a million, each creation evicts an older name).

    PYTHONPATH=$PWD/src python bench/lite_send_bench.py [--base /other/tree/src] [--rounds 3] [--requests 1000]

Each round runs a child process per tree (this one, and `--base` if given), starting a real broker
in-process (RocksDB in a temporary directory, flush async) and sending it serialized SendMessageRequests
of `--batch` × `--size` bytes (read as SendMessage reads them: `send_request.read`), one of each kind in
turn. Each request's CPU is the event loop thread's (time.thread_time): the Python a send runs and its
batch write. Per kind the 10th, 25th and 50th percentiles of µs per message; the low ones are the least
disturbed by other work on the machine, and their ratios agree when the figures are sound. The broker's
CPU per message end to end (gRPC, RocksDB's threads) is bench/lite_bench.py's to tell.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator

import interleaved  # bench/ is on sys.path when a bench script runs

KINDS = ("plain", "existing", "creating")
QUANTILES = (0.10, 0.25, 0.50)


def _child(args: argparse.Namespace) -> dict[str, list[float]]:
    from rockmq.broker.server import Broker
    from rockmq.config import Settings
    from rockmq.protocol import pb, rpc
    from rockmq.protocol.message_id import new_message_id
    from rockmq.protocol.send_request import read

    new_names = (f"new-{i}" for i in range(10**12))

    def request(kind: str, start: int) -> bytes:
        messages = []
        for i in range(args.batch):
            msg = pb.Message(topic=pb.Resource(name="plain" if kind == "plain" else "lite"),
                             body=os.urandom(args.size // 2).hex().encode())
            sp = msg.system_properties
            sp.message_id, sp.born_host = new_message_id(), "127.0.0.1"
            sp.message_type = pb.NORMAL if kind == "plain" else pb.LITE
            if kind == "plain" and args.spread_plain:
                sp.queue_id = (start + i) % args.lite_topics
            if kind != "plain":
                sp.lite_topic = f"session-{(start + i) % args.lite_topics}" if kind == "existing" else next(new_names)
            sp.born_timestamp.GetCurrentTime()
            messages.append(msg)
        return rpc.SendMessageRequest(messages=messages).SerializeToString()

    def requests(kind: str, count: int) -> Iterator[bytes]:
        return (request(kind, k * args.batch) for k in range(count))

    async def run(data_dir: str) -> dict[str, list[float]]:
        broker = Broker(Settings(host="127.0.0.1", port=0, data_dir=data_dir, flush="async"))
        await broker.start()
        try:
            broker.ctx.meta.create_topic("plain", args.lite_topics if args.spread_plain else 8)
            broker.ctx.meta.create_topic("lite", 8, ["LITE"])
            sender = broker.sender
            warm = {"plain": 20, "existing": -(-args.lite_topics // args.batch), "creating": args.warm_new // args.batch}
            for kind, count in warm.items():  # topics, lite topics and caches as the measured sends find them
                for raw in requests(kind, count):
                    await sender.send(read(raw))
            gc.freeze()
            raws = {kind: list(requests(kind, args.requests)) for kind in KINDS}
            spent: dict[str, list[float]] = {kind: [] for kind in KINDS}
            for i in range(args.requests):
                for kind in KINDS[i % 3:] + KINDS[:i % 3]:
                    messages = read(raws[kind][i])
                    start = time.thread_time()
                    await sender.send(messages)
                    spent[kind].append(time.thread_time() - start)
        finally:
            await broker.stop()
        return {kind: [sorted(times)[int(len(times) * q)] / args.batch * 1e6 for q in QUANTILES]
                for kind, times in spent.items()}

    with tempfile.TemporaryDirectory() as data_dir:
        return asyncio.run(run(data_dir))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="another tree's src directory, measured interleaved with this one")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=1000, help="measured requests of each kind per round")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--lite-topics", type=int, default=1000, help="existing: how many lite topics it sends to")
    parser.add_argument("--warm-new", type=int, default=70_000, help="creating: lite topics created before it is measured")
    parser.add_argument("--spread-plain", action="store_true",
                        help="plain: as many queues as --lite-topics, a request's messages spread over them")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args)))
        return
    figures: dict[str, list[dict[str, list[float]]]] = interleaved.rounds(
        __file__, [f"--{name.replace('_', '-')}={value}" for name, value in vars(args).items()
                   if name in ("requests", "batch", "size", "lite_topics", "warm_new")]
        + (["--spread-plain"] if args.spread_plain else []), args.base, args.rounds)
    for name, rounds in figures.items():
        for r, round_ in enumerate(rounds, 1):
            print(f"{name} round {r}: " + " | ".join(
                f"p{int(q * 100)} plain {round_['plain'][i]:.2f} µs, existing {round_['existing'][i] / round_['plain'][i]:.3f}×, "
                f"creating {round_['creating'][i] / round_['plain'][i]:.3f}×" for i, q in enumerate(QUANTILES)))
        ratios = {kind: statistics.median(r[kind][1] / r["plain"][1] for r in rounds) for kind in KINDS[1:]}
        plain = statistics.median(r["plain"][1] for r in rounds)
        print(f"{name}: p25 plain {plain:.2f} µs/msg, existing {ratios['existing']:.3f}×, creating {ratios['creating']:.3f}× "
              "(medians of the rounds)")


if __name__ == "__main__":
    main()
