"""What parked long polls cost the sends of their topic (issue 20 §2.3), this tree against another, in one run.

    PYTHONPATH=$PWD/src python bench/long_poll_bench.py [--base /path/to/other/src] [--polls 300] [--queues 8] [--kind pull]

Each round runs a child process per tree (this one, and `--base` if given: e.g. a worktree at main). The
child starts a real broker in-process (RocksDB in a temporary directory, default durable flush), parks
`--polls` long polls on topic T (each polls again when its wait ends): `--kind pull`, pulls spread over
queues 1..`--queues`-1; `--kind receive`, POP receives of groups whose tag filter is "blue" (the sends
carry "red"). Then it sends `--requests` requests of `--batch` messages, alternating between queue 0 of T and an unrelated
topic U, through SendMessage's handler path (`send_request.read`, `SendService.send`). Nothing arrives on
the queues the polls wait on: every wake-up they get is wasted work. Prints messages per second and CPU µs
per message (the whole process: the polls' re-scans included) for T and for U, and T/U (1.0: the parked
polls cost T's sends nothing); medians of `--rounds`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time

import interleaved  # bench/ is on sys.path when a bench script runs

POLL_S = 30.0  # longer than a round: a poll ends only when woken
YIELDS = 5  # turns of the event loop after each send: what a woken poll takes to re-scan and park again


def _child(kind: str, polls: int, queues: int, requests: int, batch: int, size: int) -> dict[str, float]:
    from rockmq.broker.server import Broker
    from rockmq.config import Settings
    from rockmq.filter.record_filter import accept_all
    from rockmq.protocol import pb, rpc
    from rockmq.protocol.message_id import new_message_id
    from rockmq.protocol.send_request import read

    def request(topic: str) -> bytes:
        messages = []
        for _ in range(batch):
            msg = pb.Message(topic=pb.Resource(name=topic), body=b"x" * size)
            sp = msg.system_properties
            sp.message_id, sp.message_type, sp.born_host, sp.queue_id = new_message_id(), pb.NORMAL, "127.0.0.1", 0
            sp.tag = "red"
            sp.born_timestamp.GetCurrentTime()
            messages.append(msg)
        return rpc.SendMessageRequest(messages=messages).SerializeToString()

    async def run(data_dir: str) -> dict[str, float]:
        broker = Broker(Settings(host="127.0.0.1", port=0, data_dir=data_dir))
        await broker.start()
        try:
            meta = broker.ctx.meta
            parked = meta.create_topic("parked", queues)
            meta.create_topic("unrelated", queues)
            puller, sender = broker.puller, broker.sender

            async def poll(queue_id: int) -> None:
                offset = 0
                while True:
                    _, offset = await puller.pull("pollers", parked, queue_id, offset, 32, accept_all, POLL_S)

            async def receive(i: int) -> None:
                group, expr = broker.ctx.group_for(f"receivers-{i % 10}"), pb.FilterExpression(type=pb.TAG, expression="blue")
                while True:
                    await broker.pop.receive(group, parked, expr, 32, 60_000, POLL_S)

            tasks = [asyncio.create_task(poll(1 + i % (queues - 1)) if kind == "pull" else receive(i)) for i in range(polls)]
            await asyncio.sleep(0.2)  # every poll parked
            figures: dict[str, list[float]] = {"parked": [0.0, 0.0], "unrelated": [0.0, 0.0]}  # [cpu s, wall s]
            for topic in figures:  # warm up
                await sender.send(read(request(topic)), chosen=True)
            raws = {topic: [request(topic) for _ in range(requests // 2)] for topic in figures}
            for i in range(requests // 2):
                for topic, raw in raws.items():
                    cpu, wall = time.process_time(), time.perf_counter()
                    await sender.send(read(raw[i]), chosen=True)
                    for _ in range(YIELDS):  # the woken polls run (and re-park) before the next send
                        await asyncio.sleep(0)
                    figures[topic][0] += time.process_time() - cpu
                    figures[topic][1] += time.perf_counter() - wall
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            n = requests // 2 * batch
            return {f"{topic} {what}": value for topic, (cpu, wall) in figures.items()
                    for what, value in (("us", cpu / n * 1e6), ("rate", n / wall))}
        finally:
            await broker.stop()

    with tempfile.TemporaryDirectory() as data_dir:
        return asyncio.run(run(data_dir))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="another tree's src directory, measured interleaved with this one")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--polls", type=int, default=300)
    parser.add_argument("--kind", choices=("pull", "receive"), default="pull", help="what the parked polls are")
    parser.add_argument("--queues", type=int, default=8, help="of each topic: the polls wait on queues 1.., sends go to 0")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.queues < 2:
        parser.error("--queues must be at least 2 (queue 0 for the sends, the others for the polls)")
    if args.child:
        print(json.dumps(_child(args.kind, args.polls, args.queues, args.requests, args.batch, args.size)))
        return
    figures: dict[str, list[dict[str, float]]] = interleaved.rounds(
        __file__, ["--kind", args.kind, "--polls", str(args.polls), "--queues", str(args.queues),
                   "--requests", str(args.requests), "--batch", str(args.batch), "--size", str(args.size)],
        args.base, args.rounds)
    for name, rounds in figures.items():
        m = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
        print(f"{name:5} T (polls parked): {m['parked rate']:8,.0f} msg/s {m['parked us']:7.1f} µs/msg | "
              f"U (unrelated): {m['unrelated rate']:8,.0f} msg/s {m['unrelated us']:7.1f} µs/msg | "
              f"T/U rate {m['parked rate'] / m['unrelated rate']:.2f}, µs {m['parked us'] / m['unrelated us']:.2f}")


if __name__ == "__main__":
    main()
