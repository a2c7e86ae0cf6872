"""What authentication costs (issue 19 §1, issue 32: at most 5 % of produce-batch), A/B in one run:
`rockmq bench --scenario produce-batch` against two brokers of this tree, one run with `--auth` (the
bench signing every request) and one without, rounds interleaved. With `--base REF` also against a
third broker with `--auth`, of the commit REF, so a change to the per-request auth path (this tree's
auth against the base's) is measured in the same run, on the same machine's noise.

    python bench/auth_bench.py [--base REF] [--rounds 5] [--duration 8] [--batch 32] [--size 1024] [--normal-user]

`--base` checks REF out in a temporary git worktree (`git worktree add --detach`), builds its compiled
data path there as this tree's was built (`python setup.py build_ext --inplace`; both sides must run
the same way, see src/rockmq/compiled.py) and removes the worktree afterwards, on failure too. Each
broker runs with PYTHONPATH=<its tree>/src; the load generator and the CLI calls are this tree's for
all three brokers, so only the broker differs. Each round runs every broker once, the order rotated.

The bench signs as the broker's super user (authentication only: a super user passes authorization
unchecked), or with `--normal-user` as a user granted Pub and Create on the topic (authentication
and the ACL decision of every request). Prints, per broker, the medians of the rounds' messages per
second and of the broker's CPU µs per message (the steadier figure on a shared machine), auth's cost
on this tree, and this tree's auth against the base's as a ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from trees import HERE, data_path, rockmq, start, worktree

ADMIN, SECRET = "bench-admin", "bench-secret"
USER, USER_SECRET = "bench-user", "bench-user-secret"
TOPIC = "auth-bench"
FIGURES = ("messages_per_s", "broker_cpu_us_per_msg")


def bench(endpoint: str, args: argparse.Namespace, *extra: str) -> dict[str, Any]:
    out = rockmq("bench", "--endpoint", endpoint, "--scenario", "produce-batch", "--duration", str(args.duration),
                 "--batch", str(args.batch), "--size", str(args.size), "--topic", TOPIC, "--no-ceiling", "--json", *extra)
    figures: dict[str, Any] = json.loads(out)["scenarios"]["produce-batch"]
    return figures


def measure(args: argparse.Namespace, tmp: Path, base: Path | None) -> dict[str, list[dict[str, Any]]]:
    auth = ("--auth", "--admin-user", ADMIN, "--admin-secret", SECRET)
    trees: dict[str, tuple[Path, tuple[str, ...]]] = {"plain": (HERE, ()), "auth": (HERE, auth)}
    if base:
        trees["base auth"] = (base, auth)
    paths = {name: data_path(tree) for name, (tree, _) in trees.items()}
    for name, path in paths.items():
        print(f"{name}: {trees[name][0]}, {path}", flush=True)
    if len(set(paths.values())) > 1:
        print("WARNING: the brokers do not run the same data path (compiled / Python): the comparison is unfair")
    brokers: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    try:
        for name, (tree, extra) in trees.items():
            brokers[name] = start(tree, tmp / name.replace(" ", "-"), *extra)
        signer = ("--access-key", ADMIN, "--secret-key", SECRET)
        if args.normal_user:
            for name in trees.keys() - {"plain"}:
                rockmq("user", "create", USER, "--secret", USER_SECRET, "--endpoint", brokers[name][1], *signer)
                rockmq("acl", "grant", USER, "--resource", f"Topic:{TOPIC}", "--actions", "Pub,Create",
                       "--endpoint", brokers[name][1], *signer)
            signer = ("--access-key", USER, "--secret-key", USER_SECRET)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        names = list(trees)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                figures = bench(brokers[name][1], args, *(signer if name != "plain" else ()))
                if figures.get("errors"):
                    raise SystemExit(f"{name}: {figures['errors']} errors: {figures.get('error_kinds')}")
                runs[name].append(figures)
                print(f"round {r + 1} {name:9}: {figures['messages_per_s']:8,.0f} msg/s, "
                      f"{figures['broker_cpu_us_per_msg']:6.1f} µs CPU/msg", flush=True)
        return runs
    finally:
        for proc, _ in brokers.values():
            proc.terminate()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", metavar="REF", help="a commit whose broker (with --auth) runs in the same rounds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--normal-user", action="store_true", help="sign as a user with grants, not the super user")
    args = parser.parse_args()
    with worktree(args.base) as base, tempfile.TemporaryDirectory(prefix="rockmq-auth-bench-") as tmp:
        runs = measure(args, Path(tmp), base)
    med = {name: {k: statistics.median(f[k] for f in fs) for k in FIGURES} for name, fs in runs.items()}
    for name, m in med.items():
        print(f"{name:9} median: {m['messages_per_s']:8,.0f} msg/s, {m['broker_cpu_us_per_msg']:6.2f} µs broker CPU/msg")
    rate = 1 - med["auth"]["messages_per_s"] / med["plain"]["messages_per_s"]
    cpu = med["auth"]["broker_cpu_us_per_msg"] / med["plain"]["broker_cpu_us_per_msg"] - 1
    print(f"auth ({'a normal user with grants' if args.normal_user else 'the super user'}) costs {rate:+.1%} of the rate "
          f"and {cpu:+.1%} broker CPU per message (batch {args.batch}, {args.size} B, {os.cpu_count()} cores)")
    if base:
        this, was = med["auth"], med["base auth"]
        rounds = [t["broker_cpu_us_per_msg"] / b["broker_cpu_us_per_msg"] for t, b in zip(runs["auth"], runs["base auth"])]
        print(f"auth, this tree / base {args.base}: msg/s {this['messages_per_s'] / was['messages_per_s']:.3f}, "
              f"broker CPU/msg {this['broker_cpu_us_per_msg'] / was['broker_cpu_us_per_msg']:.3f} "
              f"(per round: {', '.join(f'{x:.3f}' for x in rounds)})")


if __name__ == "__main__":
    main()
