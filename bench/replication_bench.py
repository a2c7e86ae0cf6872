"""Sync replication's cost per message: this tree against another, interleaved in one run; or, with
`--coordinated`, a coordinated group (issue 30: two members electing their primary through a real
etcd, Debian's etcd-server) against today's hand-made pair, in this tree.

    python bench/replication_bench.py [--base /path/to/other/src] [--rounds 4] [--duration 10]
    python bench/replication_bench.py --coordinated [--rounds 4] [--duration 10]

Each round, per tree (this one: the src beside this bench/ directory, so copy bench/ beside a
snapshot's src to measure the snapshot; and `--base` if given: another tree's src directory, as
bench/interleaved.py takes it; build both with `python setup.py build_ext --inplace`), a child
process starts two brokers of that tree on loopback, each in its own temporary data directory: a
primary (`rockmq serve --replication sync --broker-name b1 --port 0`) and its replica (`rockmq
serve --replica-of <primary> --broker-name b1 --port 0`). Once a send is acknowledged (a sync
primary acknowledges only what a replica holds: the replica follows), `rockmq bench --scenario
produce-batch --no-ceiling --broker-pid <primary>` loads the primary for `--duration` seconds.
Every process runs with PYTHONPATH=<tree's src>, the load generator too.

With `--coordinated`, each round runs both set-ups (the order alternating): the pair above, and two
members `--coordinator etcd://… --replication sync` (fixed free ports) whose elected primary (its log
says so) takes the load; "base" is then the pair.

Per round and tree: messages per second, the primary's CPU µs per message (the bench's own figure:
user + system time of the primary and its children, from /proc, over the load's span, divided by
the messages acknowledged) and the replica's (its /proc/PID/stat utime + stime before and after the
bench command, divided by the same messages: this span includes the bench's start and end, when the
replica idles). Then the medians and this/base. On a shared machine the CPU per message is the
steadier figure: msg/s moves with whatever else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import interleaved  # bench/ is on sys.path when a bench script runs

START_TIMEOUT_S = 60.0  # a broker's ready file
FOLLOW_TIMEOUT_S = 90.0  # until a send is acknowledged, i.e. the replica follows
SEND_TIMEOUT_S = 30.0  # one `rockmq message send`
STOP_TIMEOUT_S = 15.0  # SIGTERM, then SIGKILL
TOPIC = "bench"  # the bench's default topic: the first send creates it


def _cpu_s(pid: int) -> float:
    """utime + stime of one process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class _Broker:
    """One `rockmq serve` process of the tree on PYTHONPATH, its output in a log file."""

    def __init__(self, name: str, root: Path, args: list[str], port: int = 0) -> None:
        self.name, self.ready, self.log = name, root / f"{name}.ready", root / f"{name}.log"
        self.data_dir = root / name
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "rockmq", "serve", "--broker-name", "b1", "--data-dir", str(self.data_dir),
                 "--host", "127.0.0.1", "--port", str(port), "--ready-file", str(self.ready), *args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    def endpoint(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}):\n{_tail(self.log)}")
            if self.ready.exists():
                endpoint = self.ready.read_text().strip()
                if not endpoint.startswith("127.0.0.1:"):
                    raise RuntimeError(f"{self.name} listens on {endpoint}, not on loopback")
                return endpoint
            time.sleep(0.05)
        raise RuntimeError(f"{self.name}: no ready file after {START_TIMEOUT_S:.0f} s:\n{_tail(self.log)}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_TIMEOUT_S)


def _await_follower(endpoint: str) -> None:
    """Send until one send is acknowledged: with sync replication, only once the replica holds it."""
    deadline, last = time.monotonic() + FOLLOW_TIMEOUT_S, ""
    while time.monotonic() < deadline:
        try:
            done = subprocess.run([sys.executable, "-m", "rockmq", "message", "send", TOPIC, "warm-up",
                                   "--endpoint", endpoint], capture_output=True, text=True, timeout=SEND_TIMEOUT_S)
            if done.returncode == 0:
                return
            last = ((done.stderr.strip() or done.stdout.strip()).splitlines() or [f"exit {done.returncode}"])[-1]
        except subprocess.TimeoutExpired:
            last = f"a send took over {SEND_TIMEOUT_S:.0f} s"
        time.sleep(0.5)
    raise RuntimeError(f"no send acknowledged within {FOLLOW_TIMEOUT_S:.0f} s: {last}")


def _pair(root: Path, brokers: list[_Broker]) -> tuple[_Broker, _Broker]:
    """A sync primary and its replica, made by hand (`--replica-of`) -> (primary, replica)."""
    primary = _Broker("primary", root, ["--replication", "sync"])
    brokers.append(primary)
    replica = _Broker("replica", root, ["--replica-of", primary.endpoint()])
    brokers.append(replica)
    replica.endpoint()
    return primary, replica


def _group(root: Path, brokers: list[_Broker], etcd_url: str) -> tuple[_Broker, _Broker]:
    """Two members of a coordinated group -> (the one elected primary, the other)."""
    from tls_certs import free_port

    for name in ("m0", "m1"):
        brokers.append(_Broker(name, root, ["--replication", "sync", "--coordinator", etcd_url], free_port()))
    for m in brokers:
        m.endpoint()
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        for m in brokers:
            if any(line.endswith("(this member)") and " is primary at epoch " in line
                   for line in m.log.read_text(errors="replace").splitlines()):
                return m, next(o for o in brokers if o is not m)
        time.sleep(0.1)
    raise RuntimeError(f"no member elected within {START_TIMEOUT_S:.0f} s:\n{_tail(brokers[0].log)}")


def _child(duration: float, coordinated: bool) -> dict[str, Any]:
    from rockmq import compiled

    root = Path(tempfile.mkdtemp(prefix="replication-bench-"))
    brokers: list[_Broker] = []
    etcd = None
    try:
        if coordinated:
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the etcd process helper
            from etcd_process import EtcdProcess

            etcd = EtcdProcess(root / "etcd").start()
            primary, replica = _group(root, brokers, etcd.url)
        else:
            primary, replica = _pair(root, brokers)
        endpoint = primary.endpoint()
        _await_follower(endpoint)
        replica_cpu = _cpu_s(replica.proc.pid)
        run = subprocess.run([sys.executable, "-m", "rockmq", "bench", "--endpoint", endpoint, "--scenario",
                              "produce-batch", "--duration", str(duration), "--no-ceiling",
                              "--broker-pid", str(primary.proc.pid), "--json"],
                             capture_output=True, text=True, timeout=duration * 10 + 120)
        replica_cpu = _cpu_s(replica.proc.pid) - replica_cpu
        if run.returncode not in (0, 1):  # 1: some message failed, counted in `errors`
            raise RuntimeError(f"rockmq bench exited {run.returncode}: {run.stderr.strip()[-2000:]}")
        figures = json.loads(run.stdout)["scenarios"]["produce-batch"]
        messages = figures["messages"]
        for broker in brokers:
            if broker.proc.poll() is not None:
                raise RuntimeError(f"{broker.name} exited during the run:\n{_tail(broker.log)}")
        return {"msg_s": figures["messages_per_s"], "broker_us": figures["broker_cpu_us_per_msg"],
                "replica_us": round(replica_cpu * 1e6 / messages, 2) if messages else None,
                "messages": messages, "errors": figures["errors"], "error_samples": figures.get("error_samples", []),
                "compiled": compiled.describe()}
    finally:
        for broker in reversed(brokers):
            broker.stop()
        if etcd is not None:
            etcd.kill()
        shutil.rmtree(root, ignore_errors=True)


def _coordinated_rounds(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """Per round both set-ups of this tree, the order alternating: "this" the group, "base" the pair."""
    figures: dict[str, list[dict[str, Any]]] = {"this": [], "base": []}
    for i in range(args.rounds):
        for name in ("this", "base") if i % 2 else ("base", "this"):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--duration", str(args.duration),
                                  *(["--coordinated"] if name == "this" else [])],
                                 env={**os.environ, "PYTHONPATH": interleaved.HERE_SRC}, check=True, capture_output=True,
                                 text=True)
            figures[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    return figures


def _median(values: list[Any]) -> float:
    numbers = [v for v in values if v is not None]
    return statistics.median(numbers) if numbers else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="another tree's src directory, measured interleaved with this one")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of load per round and tree")
    parser.add_argument("--coordinated", action="store_true",
                        help="a coordinated group (this) against the hand-made pair (base), in this tree")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rounds <= 0 or args.duration <= 0:
        parser.error("--rounds and --duration must be positive")
    if args.child:
        print(json.dumps(_child(args.duration, args.coordinated)))
        return 0
    if args.base and not os.path.isfile(os.path.join(args.base, "rockmq", "__init__.py")):
        parser.error(f"--base {args.base}: not a src directory (no rockmq/ in it); give the tree's src")
    if args.base and args.coordinated:
        parser.error("--coordinated compares two set-ups of this tree: no --base")
    print(f"this: {interleaved.HERE_SRC}" + (f", base: {os.path.abspath(args.base)}" if args.base else "")
          + (" (this: a coordinated group; base: the hand-made pair)" if args.coordinated else ""), flush=True)
    try:
        figures = _coordinated_rounds(args) if args.coordinated else interleaved.rounds(
            __file__, ["--duration", str(args.duration)], args.base, args.rounds)
    except subprocess.CalledProcessError as e:
        print(f"replication_bench: a round failed:\n{e.stderr}", file=sys.stderr)
        return 1
    for name, values in figures.items():
        if any(v["compiled"] != values[0]["compiled"] for v in values) or "partly" in values[0]["compiled"] \
                or "pure" in values[0]["compiled"]:
            print(f"WARNING: {name}: {', '.join(sorted({v['compiled'] for v in values}))}")
        for i, v in enumerate(values, 1):
            print(f"{name:4} round {i}: {v['msg_s']:8,.0f} msg/s, primary {v['broker_us']:6.1f} µs/msg, "
                  f"replica {v['replica_us']:6.1f} µs/msg, {v['messages']:,} messages, {v['errors']} errors"
                  + (f" ({'; '.join(map(str, v['error_samples']))[:200]})" if v["errors"] else ""))
    medians = {name: {key: _median([v[key] for v in values]) for key in ("msg_s", "broker_us", "replica_us")}
               for name, values in figures.items()}
    for name, m in medians.items():
        print(f"{name:4} median:  {m['msg_s']:8,.0f} msg/s, primary {m['broker_us']:6.1f} µs/msg, "
              f"replica {m['replica_us']:6.1f} µs/msg")
    if "base" in medians:
        this, base = medians["this"], medians["base"]
        print("this/base of the medians: " + ", ".join(f"{what} {this[key] / base[key]:.3f}" for key, what in (
            ("msg_s", "msg/s"), ("broker_us", "primary CPU/msg"), ("replica_us", "replica CPU/msg"))))
        pairs = list(zip(figures["this"], figures["base"]))  # a round's two runs shared the machine's state
        for key, what in (("msg_s", "msg/s"), ("broker_us", "primary CPU/msg")):
            ratios = [t[key] / b[key] for t, b in pairs if t[key] and b[key]]
            print(f"this/base per round, {what}: {', '.join(f'{r:.3f}' for r in ratios)}; "
                  f"median {_median(ratios):.3f}")
    return 1 if any(v["errors"] for values in figures.values() for v in values) else 0


if __name__ == "__main__":
    sys.exit(main())
