"""What authentication costs (issue 19 §1: at most 5 % of produce-batch): `rockmq bench --scenario
produce-batch` against two brokers of this tree, one run with `--auth` (the bench signing every
request) and one without, in the same run, rounds interleaved.

    PYTHONPATH=$PWD/src python bench/auth_bench.py [--rounds 5] [--duration 8] [--batch 32] [--size 1024] [--normal-user]

The bench signs as the broker's super user (authentication only: a super user passes authorization
unchecked), or with `--normal-user` as a user granted Pub and Create on the topic (authentication
and the ACL decision of every request). Prints, per broker, the medians of the rounds' messages per
second and of the broker's CPU µs per message (the steadier figure on a shared machine), and auth's
cost in each.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ADMIN, SECRET = "bench-admin", "bench-secret"
USER, USER_SECRET = "bench-user", "bench-user-secret"
TOPIC = "auth-bench"


def start(data_dir: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    ready = data_dir.with_suffix(".ready")
    proc = subprocess.Popen([sys.executable, "-m", "rockmq", "serve", "--port", "0", "--data-dir", str(data_dir),
                             "--ready-file", str(ready), "--log-level", "WARNING", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the broker in {data_dir} did not start")
        time.sleep(0.05)
    return proc, ready.read_text().strip()


def bench(endpoint: str, args: argparse.Namespace, *extra: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "rockmq", "bench", "--endpoint", endpoint, "--scenario", "produce-batch",
                          "--duration", str(args.duration), "--batch", str(args.batch), "--size", str(args.size),
                          "--topic", TOPIC, "--no-ceiling", "--json", *extra], capture_output=True, text=True,
                         check=True).stdout
    figures: dict[str, Any] = json.loads(out)["scenarios"]["produce-batch"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--normal-user", action="store_true", help="sign as a user with grants, not the super user")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"plain": [], "auth": []}
    with tempfile.TemporaryDirectory(prefix="rockmq-auth-bench-") as tmp:
        plain, plain_at = start(Path(tmp) / "plain")
        auth, auth_at = start(Path(tmp) / "auth", "--auth", "--admin-user", ADMIN, "--admin-secret", SECRET)
        signer = ("--access-key", ADMIN, "--secret-key", SECRET)
        try:
            if args.normal_user:
                for command in (("user", "create", USER, "--secret", USER_SECRET),
                                ("acl", "grant", USER, "--resource", f"Topic:{TOPIC}", "--actions", "Pub,Create")):
                    subprocess.run([sys.executable, "-m", "rockmq", *command, "--endpoint", auth_at, *signer], check=True,
                                   capture_output=True)
                signer = ("--access-key", USER, "--secret-key", USER_SECRET)
            for r in range(args.rounds):
                for name in (("plain", "auth") if r % 2 == 0 else ("auth", "plain")):
                    extra = signer if name == "auth" else ()
                    figures = bench(auth_at if name == "auth" else plain_at, args, *extra)
                    if figures.get("errors"):
                        raise SystemExit(f"{name}: {figures['errors']} errors: {figures.get('error_kinds')}")
                    runs[name].append(figures)
                    print(f"round {r + 1} {name}: {figures['messages_per_s']:,.0f} msg/s, "
                          f"{figures['broker_cpu_us_per_msg']:.1f} us CPU/msg", flush=True)
        finally:
            for proc in (plain, auth):
                proc.terminate()
                proc.wait()
    med = {name: {k: statistics.median(f[k] for f in fs) for k in ("messages_per_s", "broker_cpu_us_per_msg")}
           for name, fs in runs.items()}
    for name, m in med.items():
        print(f"{name}: {m['messages_per_s']:,.0f} msg/s, broker {m['broker_cpu_us_per_msg']:.2f} us CPU/msg (medians)")
    rate = 1 - med["auth"]["messages_per_s"] / med["plain"]["messages_per_s"]
    cpu = med["auth"]["broker_cpu_us_per_msg"] / med["plain"]["broker_cpu_us_per_msg"] - 1
    print(f"auth ({'a normal user with grants' if args.normal_user else 'the super user'}) costs {rate:+.1%} of the rate "
          f"and {cpu:+.1%} broker CPU per message (batch {args.batch}, {args.size} B, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
