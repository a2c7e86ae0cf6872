"""What a lite or priority send costs the broker beside a plain one (issue 29 §5: ≤ 1.1× in broker CPU per message),
A/B in one run: interleaved rounds of `rockmq bench --scenario produce-batch`, same size and batch, each
against a fresh broker of this tree (the order rotated each round):

- plain: NORMAL messages to a NORMAL topic;
- lite-fixed: LITE messages to `--lite-topics` lite topics in turn, created before the measured run;
- lite-new: LITE messages each to a new lite topic (`--lite-topics new`: every send creates them);
- priority: PRIORITY messages to a PRIORITY topic (max priority 9), priorities 0..9 in turn (`--priorities 10`).

    python bench/lite_bench.py [--rounds 5] [--duration 5] [--batch 64] [--size 256] [--lite-topics 1000] [--base REF]

Prints each round, then per variant the medians of messages per second and of the broker's CPU µs per
message (/proc of the broker: rockmq.bench.probe) and their ratios to plain with the per-round ratios.
`--base REF`: each variant also against a broker of that commit (checked out and built as bench/ab.py
does) in the same rounds, and this / base per variant.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from trees import HERE, rockmq, start, worktree

VARIANTS = ("plain", "lite-fixed", "lite-new", "priority")
PLAIN_TOPIC, LITE_TOPIC, PRIORITY_TOPIC = "bench-plain", "bench-lite", "bench-priority"


def one(variant: str, args: argparse.Namespace, data: Path, tree: Path) -> dict[str, Any]:
    """One measured run of `variant` against a fresh broker of `tree`."""
    proc, endpoint = start(tree, data)
    try:
        common = ["--endpoint", endpoint, "--scenario", "produce-batch", "--batch", str(args.batch),
                  "--size", str(args.size), "--no-ceiling", "--json"]
        rockmq("topic", "create", PLAIN_TOPIC, "--endpoint", endpoint)
        rockmq("topic", "create", LITE_TOPIC, "--types", "LITE", "--endpoint", endpoint)
        rockmq("topic", "create", PRIORITY_TOPIC, "--types", "PRIORITY", "--endpoint", endpoint)
        lite = {"plain": [], "lite-fixed": ["--lite-topics", str(args.lite_topics)],
                "lite-new": ["--lite-topics", "new"], "priority": ["--priorities", "10"]}[variant]
        topic = {"plain": PLAIN_TOPIC, "priority": PRIORITY_TOPIC}.get(variant, LITE_TOPIC)
        if variant == "lite-fixed":  # the fixed set exists before the measured run
            rockmq("bench", *common, "--topic", topic, "--messages", str(args.lite_topics), *lite)
        out = rockmq("bench", *common, "--topic", topic, "--duration", str(args.duration), *lite)
    finally:
        proc.terminate()
        proc.wait()
    figures: dict[str, Any] = json.loads(out)["scenarios"]["produce-batch"]
    if figures.get("errors"):
        raise SystemExit(f"{variant}: {figures['errors']} errors: {figures.get('error_samples')}")
    return figures


def measure(args: argparse.Namespace, trees: dict[str, Path], tmp: Path) -> dict[str, dict[str, list[dict[str, Any]]]]:
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {name: {v: [] for v in VARIANTS} for name in trees}
    names = list(trees)
    for r in range(args.rounds):
        for variant in VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]:
            for name in names[r % len(names):] + names[:r % len(names)]:
                figures = one(variant, args, tmp / f"{name}-{variant}-{r}", trees[name])
                runs[name][variant].append(figures)
                print(f"round {r + 1} {name} {variant:10}: {figures['messages_per_s']:9,.0f} msg/s, "
                      f"{figures['broker_cpu_us_per_msg']:6.1f} µs CPU/msg, client CPU {figures['client_cpu_pct']:.0f}%",
                      flush=True)
    return runs


def cpu(fs: list[dict[str, Any]]) -> float:
    return float(statistics.median(f["broker_cpu_us_per_msg"] for f in fs))


def report(name: str, runs: dict[str, list[dict[str, Any]]]) -> None:
    plain = runs["plain"]
    base_rate = statistics.median(f["messages_per_s"] for f in plain)
    for variant, fs in runs.items():
        rate = statistics.median(f["messages_per_s"] for f in fs)
        rounds = ", ".join(f"{f['broker_cpu_us_per_msg'] / p['broker_cpu_us_per_msg']:.2f}" for f, p in zip(fs, plain))
        print(f"{name} {variant:10} {rate:9,.0f} msg/s ({rate / base_rate:.2f}x plain), {cpu(fs):6.2f} µs CPU/msg "
              f"({cpu(fs) / cpu(plain):.2f}x plain; per round {rounds})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--lite-topics", type=int, default=1000, help="lite-fixed: how many lite topics it sends to")
    parser.add_argument("--base", metavar="REF", help="also measure a broker of this commit, in the same rounds")
    args = parser.parse_args()
    with worktree(args.base) as base, tempfile.TemporaryDirectory(prefix="rockmq-lite-bench-") as tmp:
        trees = {"this": HERE} if base is None else {"this": HERE, "base": base}
        runs = measure(args, trees, Path(tmp))
    for name, variants in runs.items():
        report(name, variants)
    if "base" in runs:
        for variant in VARIANTS:
            print(f"{variant:10} this / base {args.base}: {cpu(runs['this'][variant]) / cpu(runs['base'][variant]):.3f} "
                  "(broker CPU per message)")


if __name__ == "__main__":
    main()
