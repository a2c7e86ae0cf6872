"""Where a broker's CPU per message goes, thread by thread, beside the null broker's: `produce-batch` against each.

    PYTHONPATH=$PWD/src python bench/thread_cpu_bench.py [--rounds 2] [--duration 6] [--batch 32]

Each round starts `rockmq serve` (this tree, default durable flush, a fresh data directory) and the null
broker (`rockmq.bench.null_broker`), and runs the same `rockmq bench --scenario produce-batch` load against
each, a short warm-up first; the CPU each thread used meanwhile (`/proc/PID/task/*/stat`, 10 ms ticks) is
divided by the messages stored. Threads are named as the kernel names them: the event loop is the process's
main thread, RocksDB names its flush (`rocksdb:high`) and compaction (`rocksdb:low`) threads, gRPC its
`event_engine` threads; the threads Python starts all carry the process's name and are numbered in the
order they started (in the broker two are busy: the WAL fsync thread and gRPC's poller, which the null
broker has too). Threads that used nothing are left out. docs/benchmarks.md has a run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

READY_S = 60.0


def _threads(pid: int) -> dict[int, tuple[str, int]]:
    """Each thread of `pid`: tid -> (its name, the CPU ticks it used)."""
    out: dict[int, tuple[str, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        out[int(task.name)] = (name, int(fields[11]) + int(fields[12]))
    return out


def _start(command: list[str], ready: Path) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen([*command, "--ready-file", str(ready)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + READY_S
    while not ready.exists() or not ready.read_text().strip():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"thread_cpu_bench: {' '.join(command)} did not start")
        time.sleep(0.05)
    return proc, ready.read_text().strip()


def _bench(endpoint: str, pid: int, args: argparse.Namespace, duration: float) -> int:
    """Messages `produce-batch` stored in `duration` seconds."""
    out = subprocess.run([sys.executable, "-m", "rockmq", "bench", "--endpoint", endpoint, "--scenario", "produce-batch",
                          "--duration", str(duration), "--batch", str(args.batch), "--no-ceiling", "--json",
                          "--broker-pid", str(pid)], check=True, capture_output=True, text=True)
    messages: int = json.loads(out.stdout)["scenarios"]["produce-batch"]["messages"]
    return messages


def measure(command: list[str], args: argparse.Namespace, ready: Path) -> dict[str, float]:
    """µs of CPU per message of each thread of the server `command` starts, under `produce-batch`."""
    proc, endpoint = _start(command, ready)
    try:
        _bench(endpoint, proc.pid, args, 2)  # warm-up: topic created, caches and memtables filling
        before = _threads(proc.pid)
        messages = _bench(endpoint, proc.pid, args, args.duration)
        after = _threads(proc.pid)
    finally:
        proc.terminate()
        proc.wait()
    ticks = os.sysconf("SC_CLK_TCK")
    per: dict[str, float] = defaultdict(float)
    others = 0
    for tid in sorted(after):
        name, used = after[tid]
        used -= before.get(tid, (name, 0))[1]
        if tid == proc.pid:
            label = "event loop (main thread)"
        elif name.startswith(("rocksdb", "event_engine")):
            label = name
        else:
            others += 1
            label = f"Python thread {others} (in start order)"
        per[label] += used / ticks / messages * 1e6
    per["whole process"] = sum(per.values())
    return per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--duration", type=float, default=6.0, help="seconds of produce-batch per measurement")
    parser.add_argument("--batch", type=int, default=32, help="messages per SendMessage")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"broker": [], "null broker": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in range(args.rounds):
            runs["broker"].append(measure([sys.executable, "-m", "rockmq", "serve", "--port", "0", "--data-dir",
                                           str(root / f"data{n}"), "--log-level", "WARNING"], args, root / f"b{n}.ready"))
            runs["null broker"].append(measure([sys.executable, "-m", "rockmq.bench.null_broker"], args, root / f"n{n}.ready"))
    for server, rounds in runs.items():
        print(f"{server}, µs of CPU per message (rounds):")
        used = {label for r in rounds for label, us in r.items() if us > 0}
        for label in sorted(used, key=lambda k: (k == "whole process", k)):
            print(f"  {label:40} " + "  ".join(f"{r.get(label, 0.0):6.2f}" for r in rounds))


if __name__ == "__main__":
    main()
