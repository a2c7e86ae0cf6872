"""Broker CPU per message of `rockmq serve --workers N` for several N, interleaved in one run.

For each round and each N, starts `rockmq serve --workers N` on a fresh data directory, creates
the topic through `--port` (its queues spread over the shards), and runs one `rockmq bench`
load generator per shard at once, each sending to its shard as a client that picked that
shard's queue does, charged to that shard's process (`--broker-pid`); the total in-flight
requests are the same for every N. Prints, per N, the messages per second summed over the shards
and the broker CPU per message summed over them:

    python bench/workers_bench.py --workers 1,2 --rounds 2 --duration 10

On a machine with fewer cores than shards plus load generators this shows what sharding costs
per message, not what more cores would add (docs/cluster.md, "Every core").
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rockmq.plumbing.channels import open_channel
from rockmq.protocol import pb, rpc, svc

READY_S = 60.0


def _start(workers: int, data: Path) -> tuple[subprocess.Popen[bytes], str]:
    ready = data.with_suffix(".ready")
    proc = subprocess.Popen([sys.executable, "-m", "rockmq", "serve", "--workers", str(workers), "--port", "0",
                             "--data-dir", str(data), "--ready-file", str(ready), "--log-level", "WARNING"],
                            stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + READY_S
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"workers_bench: rockmq serve --workers {workers} did not start")
        time.sleep(0.05)
    return proc, ready.read_text().strip()


def _shards(endpoint: str, topic: str) -> list[str]:
    """The endpoint of every shard holding the topic's queues."""
    with open_channel(endpoint) as channel:
        reply = svc.MessagingServiceStub(channel).QueryRoute(rpc.QueryRouteRequest(topic=pb.Resource(name=topic)),
                                                             timeout=10)
    return sorted({f"{a.host}:{a.port}" for q in reply.message_queues for a in q.broker.endpoints.addresses[:1]})


def measure(workers: int, args: argparse.Namespace, root: Path) -> dict[str, float]:
    proc, endpoint = _start(workers, root / f"w{workers}-{time.monotonic_ns()}")
    try:
        subprocess.run([sys.executable, "-m", "rockmq", "topic", "create", args.topic, "--queues", str(args.queues),
                        "--endpoint", endpoint], check=True, capture_output=True)
        shards = _shards(endpoint, args.topic)
        per = max(1, args.concurrency // len(shards))
        # each bench charges the process listening on its shard's port (`rockmq bench` finds it)
        runs = [subprocess.Popen([sys.executable, "-m", "rockmq", "bench", "--endpoint", e, "--scenario", "produce-batch",
                                  "--duration", str(args.duration), "--topic", args.topic, "--concurrency", str(per),
                                  "--no-ceiling", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for e in shards]
        rate = cpu_s = messages = 0.0
        for run in runs:
            out, err = run.communicate(timeout=args.duration * 10 + 120)
            figures = json.loads(out or "{}").get("scenarios", {}).get("produce-batch", {"broker_cpu_us_per_msg": None})
            rate += figures["messages_per_s"]
            if run.returncode not in (0, 1) or figures["broker_cpu_us_per_msg"] is None:
                raise SystemExit(f"workers_bench: a load generator failed: {err.strip()[-300:]}")
            cpu_s += figures["broker_cpu_us_per_msg"] * figures["messages"] / 1e6
            messages += figures["messages"]
        return {"messages_per_s": rate, "broker_cpu_us_per_msg": cpu_s * 1e6 / messages if messages else 0.0}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", default="1,2", help="the N to compare, comma separated")
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds over every N")
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--concurrency", type=int, default=64, help="requests in flight over all shards")
    p.add_argument("--queues", type=int, default=8)
    p.add_argument("--topic", default="workers-bench")
    args = p.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    results: dict[int, list[dict[str, float]]] = {n: [] for n in counts}
    with tempfile.TemporaryDirectory(prefix="workers-bench-") as tmp:
        for r in range(args.rounds):
            for n in counts:
                figures = measure(n, args, Path(tmp))
                results[n].append(figures)
                print(f"round {r + 1} --workers {n}: {figures['messages_per_s']:,.0f} msg/s, "
                      f"broker CPU {figures['broker_cpu_us_per_msg']:.1f} µs/msg (summed over its shards)", flush=True)
    for n in counts:
        rates = [f["messages_per_s"] for f in results[n]]
        cpus = [f["broker_cpu_us_per_msg"] for f in results[n]]
        print(f"--workers {n}: {min(rates):,.0f}–{max(rates):,.0f} msg/s, broker CPU {min(cpus):.1f}–{max(cpus):.1f} µs/msg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
