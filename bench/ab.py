"""This tree against a base commit on `rockmq bench` scenarios, in one run: per round and scenario, a
fresh broker of each tree (the order rotated each round), the same load generator (this tree's).
What every change to a per-message path states (docs/benchmarks.md "How to reproduce").

    python bench/ab.py --base REF [--scenarios produce-batch,consume-own,consume] [--rounds 5] [--duration 8]
    python bench/ab.py --base HEAD --base-flags=--no-trace   # what a setting costs: the same tree, one flag apart

Prints each round, then per scenario the medians of messages per second and of the broker's CPU µs
per message (the steadier figure on a shared machine) for both trees, and this / base with the
per-round ratios. The base is checked out and built in a temporary worktree (trees.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from trees import HERE, data_path, rockmq, start, worktree

DEFAULT_SCENARIOS = "produce-batch,consume-own,consume"  # the official consume pattern is `consume`


def one(tree: Path, scenario: str, args: argparse.Namespace, data: Path, flags: list[str]) -> dict[str, Any]:
    """One scenario against a fresh broker of `tree` started with `flags`."""
    proc, endpoint = start(tree, data, *flags)
    try:
        out = rockmq("bench", "--endpoint", endpoint, "--scenario", scenario, "--duration", str(args.duration),
                     "--no-ceiling", "--json")
    finally:
        proc.terminate()
        proc.wait()
    figures: dict[str, Any] = json.loads(out)["scenarios"][scenario]
    if figures.get("errors"):
        raise SystemExit(f"{scenario} on {tree}: {figures['errors']} errors: {figures.get('error_kinds')}")
    return figures


def measure(args: argparse.Namespace, base: Path, tmp: Path) -> dict[tuple[str, str], list[dict[str, Any]]]:
    trees = {"this": HERE, "base": base}
    paths = {name: data_path(tree) for name, tree in trees.items()}
    print(", ".join(f"{name}: {trees[name]} ({path})" for name, path in paths.items()), flush=True)
    if len(set(paths.values())) > 1:
        print("WARNING: the trees do not run the same data path (compiled / Python): the comparison is unfair")
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    names = list(trees)
    for r in range(args.rounds):
        for scenario in args.scenarios:
            for name in names[r % 2:] + names[:r % 2]:
                flags = args.base_flags.split() if name == "base" else []
                figures = one(trees[name], scenario, args, tmp / f"{name}-{scenario}-{r}", flags)
                runs.setdefault((scenario, name), []).append(figures)
                print(f"round {r + 1} {scenario:14} {name}: {figures['messages_per_s']:9,.0f} msg/s, "
                      f"{figures['broker_cpu_us_per_msg']:6.1f} µs CPU/msg", flush=True)
    return runs


def report(runs: dict[tuple[str, str], list[dict[str, Any]]], scenarios: list[str], ref: str) -> None:
    for scenario in scenarios:
        this, base = runs[(scenario, "this")], runs[(scenario, "base")]
        rate = [statistics.median(f["messages_per_s"] for f in fs) for fs in (this, base)]
        cpu = [statistics.median(f["broker_cpu_us_per_msg"] for f in fs) for fs in (this, base)]
        rounds = ", ".join(f"{t['broker_cpu_us_per_msg'] / b['broker_cpu_us_per_msg']:.2f}" for t, b in zip(this, base))
        print(f"{scenario:14} this / base {ref}: {rate[0]:,.0f} / {rate[1]:,.0f} msg/s ({rate[0] / rate[1]:.3f}), "
              f"{cpu[0]:.2f} / {cpu[1]:.2f} µs CPU/msg ({cpu[0] / cpu[1]:.3f}; per round {rounds})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", metavar="REF", required=True, help="the commit to compare with")
    parser.add_argument("--scenarios", default=DEFAULT_SCENARIOS, type=lambda s: [x for x in s.split(",") if x])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--base-flags", default="", help="`rockmq serve` flags of the base tree's broker (one string)")
    args = parser.parse_args()
    with worktree(args.base) as base, tempfile.TemporaryDirectory(prefix="rockmq-ab-data-") as tmp:
        assert base is not None
        runs = measure(args, base, Path(tmp))
    report(runs, args.scenarios, args.base)


if __name__ == "__main__":
    main()
