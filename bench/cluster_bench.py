"""Produce throughput of a cluster against a single broker: one `rockmq bench` load generator per
broker, all at once, figures summed.

Starts nothing: point it at running brokers, e.g. a single one and then three of a cluster:

    python bench/cluster_bench.py --endpoints 127.0.0.1:8081
    python bench/cluster_bench.py --endpoints 127.0.0.1:8081,127.0.0.1:8082,127.0.0.1:8083

Each generator sends to its own broker, as a client does when it picks that broker's queue; on
one machine the brokers and the generators share the same cores, so this measures what the
cluster costs, not what more machines would add.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--endpoints", required=True, help="HOST:PORT of each broker, comma separated")
    p.add_argument("--scenario", default="produce-batch", choices=("produce-batch", "produce-single"))
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--topic", default="cluster-bench")
    args = p.parse_args()
    endpoints = [e.strip() for e in args.endpoints.split(",") if e.strip()]
    runs = [subprocess.Popen([sys.executable, "-m", "rockmq", "bench", "--endpoint", e, "--scenario", args.scenario,
                              "--duration", str(args.duration), "--topic", args.topic, "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for e in endpoints]
    total, errors = 0.0, 0
    for endpoint, run in zip(endpoints, runs):
        out, err = run.communicate(timeout=args.duration * 10 + 120)
        if run.returncode not in (0, 1):
            print(f"cluster_bench: {endpoint}: {err.strip().splitlines()[-1] if err.strip() else run.returncode}",
                  file=sys.stderr)
            return 3
        figures = json.loads(out)["scenarios"][args.scenario]
        total += figures["messages_per_s"]
        errors += figures["errors"]
        print(f"{endpoint}: {figures['messages_per_s']:,.0f} msg/s ({figures['errors']} errors)")
    print(f"{args.scenario} over {len(endpoints)} broker(s): {total:,.0f} msg/s in total, {errors} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
