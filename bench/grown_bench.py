"""Does produce stay fast as the store grows? Two brokers, one empty and one holding `--grown-gb`.

It starts both brokers itself on loopback (`rockmq serve --port 0`), fills the second one's data
directory through the broker (`--fill-size` bodies, `--fill-batch` per SendMessage, durable like
any send), then measures `rockmq bench`'s produce-batch (`--batch` x `--size`) on both,
interleaved over `--rounds` (empty, grown, grown, empty, ...), so the machine's load hits both
alike. It prints per run the rate, the broker's CPU per message (and how much of it went to
compactions, per column family, from RocksDB's LOG), the load average and the broker's peak RSS,
and at the end the grown/empty ratio of the mean rates; then consume-batch once on each (`--consume`), for the
peak RSS under consumption; and what both stores look like: WAL files, pending compaction bytes
and table files per level (read from a read-only open of each data directory).

    PYTHONPATH=src python bench/grown_bench.py                      # 20 GB (needs ~21 GB free; minutes)
    PYTHONPATH=src python bench/grown_bench.py --grown-gb 2 --rounds 2 --duration 8   # a quick try

The data directories live under `--work-dir` and are deleted at the end unless `--keep` is given;
a kept grown directory is reused by the next run (it is filled up only by what is missing). Target
(issue 18): grown rate >= 0.8 x empty rate; WAL and compaction debt bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rocksdict import AccessType, Options, Rdict

from rockmq.bench import scenarios
from rockmq.bench.options import Options as BenchOptions

GiB = 1024**3
MiB = 1024**2
START_TIMEOUT = 120.0  # a broker reopening a big store replays its WAL first
LEVELS = 7


@dataclass
class Broker:
    """A `rockmq serve` subprocess on a loopback port of the system's choosing."""

    name: str
    data_dir: Path
    proc: subprocess.Popen[bytes] | None = None
    endpoint: str = ""

    def start(self) -> None:
        ready = self.data_dir.with_name(self.data_dir.name + ".ready")
        ready.unlink(missing_ok=True)
        log = open(self.data_dir.with_name(self.data_dir.name + ".log"), "ab")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen([sys.executable, "-m", "rockmq", "serve", "--host", "127.0.0.1", "--port", "0",
                                      "--data-dir", str(self.data_dir), "--ready-file", str(ready),
                                      "--log-level", "WARNING"], stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{self.name} broker did not start (see {log.name})")
            time.sleep(0.1)
        self.endpoint = ready.read_text().strip()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def bench_options(endpoint: str, pid: int, args: argparse.Namespace, **changes: Any) -> BenchOptions:
    base = BenchOptions(endpoint=endpoint, topic=args.topic, group="grown-bench", scenario="produce-batch",
                             duration=args.duration, messages=None, consume_messages=1, batch=args.batch,
                             size=args.size, concurrency=args.concurrency, processes=args.processes, rate=1.0,
                             rpc_timeout=60.0, broker_pid=pid, json=True, ceiling=False)
    return replace(base, **changes)


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file()) if path.exists() else 0


def fill(broker: Broker, args: argparse.Namespace) -> None:
    """Send through the broker until its data directory holds `--grown-gb`."""
    target = int(args.grown_gb * GiB)
    have = disk_bytes(broker.data_dir)
    if have >= target:
        print(f"{broker.name}: already holds {have / GiB:.1f} GiB", flush=True)
        return
    count = (target - have) // args.fill_size + 1
    opts = bench_options(broker.endpoint, broker.pid, args, messages=count, batch=args.fill_batch, size=args.fill_size,
                         concurrency=args.fill_concurrency)
    started = time.monotonic()
    figures = scenarios.produce(opts, "produce-batch")
    seconds = time.monotonic() - started
    print(f"{broker.name}: filled {figures['messages'] * args.fill_size / GiB:.1f} GiB in {seconds:.0f} s "
          f"({figures['messages'] * args.fill_size / MiB / seconds:.0f} MiB/s, {figures['errors']} errors); "
          f"now {disk_bytes(broker.data_dir) / GiB:.1f} GiB on disk", flush=True)


_COMPACTING = re.compile(r"\[(\w+)\] \[JOB (\d+)\] Compacting")


def compaction_cpu(data_dir: Path, since: float, until: float) -> dict[str, float]:
    """CPU seconds of the compactions that finished between `since` and `until` (wall clock), per
    family, from the `compaction_finished` events of RocksDB's LOG: what the store's growth costs."""
    family: dict[int, str] = {}
    cpu: dict[str, float] = {}
    with open(data_dir / "LOG", errors="replace") as lines:
        for line in lines:
            if match := _COMPACTING.search(line):
                family[int(match[2])] = match[1]
            elif '"compaction_finished"' in line:
                event = json.loads(line[line.index("{"):])
                if since <= event["time_micros"] / 1e6 <= until:
                    name = family.get(event["job"], "?")
                    cpu[name] = cpu.get(name, 0.0) + event["compaction_time_cpu_micros"] / 1e6
    return cpu


def measure(broker: Broker, args: argparse.Namespace) -> dict[str, Any]:
    started = time.time()
    peak = scenarios.PeakRss(broker.pid)
    try:
        figures = scenarios.produce(bench_options(broker.endpoint, broker.pid, args), "produce-batch")
    finally:
        peak_mib = peak.stop()
    if figures["messages"]:  # the broker's CPU per message is figures["broker_cpu_us_per_msg"]
        compactions = compaction_cpu(broker.data_dir, started, time.time())
        figures["compaction_us_per_msg"] = {f: round(s * 1e6 / figures["messages"], 2) for f, s in compactions.items()}
    figures["peak_rss_mib"] = peak_mib
    return figures


def measure_consume(broker: Broker, args: argparse.Namespace) -> dict[str, Any]:
    """`rockmq bench`'s consume-batch (prefill, then receive 256 + ack per batch): for the peak RSS."""
    opts = bench_options(broker.endpoint, broker.pid, args, scenario="consume-batch", messages=args.consume,
                         concurrency=None, batch=256)
    peak = scenarios.PeakRss(broker.pid)
    try:
        figures = scenarios.consume(opts, "consume-batch", True)
    finally:
        peak_mib = peak.stop()
    figures["peak_rss_mib"] = peak_mib
    return figures


def store_shape(data_dir: Path) -> dict[str, Any]:
    """WAL files, pending compaction bytes and table files per level, from a read-only open (it
    sees the state of the last manifest write; the broker keeps running)."""
    wal = [f for f in data_dir.iterdir() if f.suffix == ".log"]
    shape: dict[str, Any] = {"disk_gib": round(disk_bytes(data_dir) / GiB, 2), "wal_files": len(wal),
                             "wal_mib": round(sum(f.stat().st_size for f in wal) / MiB, 1)}
    names = Rdict.list_cf(str(data_dir))
    db = Rdict(str(data_dir), options=Options(raw_mode=True), column_families={n: Options(raw_mode=True) for n in names},
               access_type=AccessType.read_only())
    try:
        families = {}
        for name in names:
            cf = db.get_column_family(name)
            levels = [cf.property_int_value(f"rocksdb.num-files-at-level{n}") or 0 for n in range(LEVELS)]
            pending = cf.property_int_value("rocksdb.estimate-pending-compaction-bytes") or 0
            blobs = cf.property_int_value("rocksdb.num-blob-files") or 0
            if any(levels) or pending or blobs:
                families[name] = {"sst_per_level": levels, "pending_compaction_mib": round(pending / MiB, 1),
                                  "blob_files": blobs}
        shape["families"] = families
    finally:
        db.close()
    return shape


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grown-gb", type=float, default=20.0, help="what the grown store holds before measuring")
    parser.add_argument("--work-dir", type=Path, default=Path("grown-bench-data"), help="where both data directories go")
    parser.add_argument("--keep", action="store_true", help="keep the data directories (a later run reuses the grown one)")
    parser.add_argument("--fill-size", type=int, default=64 * 1024, help="body bytes of the fill messages")
    parser.add_argument("--fill-batch", type=int, default=16, help="fill messages per SendMessage")
    parser.add_argument("--fill-concurrency", type=int, default=8, help="fill requests in flight")
    parser.add_argument("--rounds", type=int, default=3, help="measurements per broker, interleaved")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measurement")
    parser.add_argument("--batch", type=int, default=32, help="messages per SendMessage when measuring")
    parser.add_argument("--size", type=int, default=1024, help="body bytes when measuring")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight when measuring")
    parser.add_argument("--processes", type=int, default=1, help="client processes when measuring")
    parser.add_argument("--consume", type=int, default=100_000,
                        help="then consume-batch this many on each broker, for its RSS (0: skip)")
    parser.add_argument("--topic", default="grown-bench")
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args(argv)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    empty, grown = Broker("empty", args.work_dir / "empty"), Broker("grown", args.work_dir / "grown")
    shutil.rmtree(empty.data_dir, ignore_errors=True)
    runs: dict[str, list[dict[str, Any]]] = {"empty": [], "grown": []}
    try:
        grown.start()
        fill(grown, args)
        empty.start()
        for r in range(args.rounds):
            for broker in (empty, grown) if r % 2 == 0 else (grown, empty):
                figures = measure(broker, args)
                runs[broker.name].append(figures)
                print(f"round {r + 1} {broker.name}: {figures['messages_per_s']:,.0f} msg/s, "
                      f"{figures.get('broker_cpu_us_per_msg') or '?'} us broker CPU/msg "
                      f"(compactions {figures.get('compaction_us_per_msg')}), "
                      f"load {os.getloadavg()[0]:.1f}, peak RSS {figures['peak_rss_mib']} MiB, "
                      f"{figures['errors']} errors", flush=True)
        consumed = {b.name: measure_consume(b, args) for b in (empty, grown)} if args.consume else {}
        for name, figures in consumed.items():
            print(f"consume-batch {name}: {figures['messages_per_s']:,.0f} msg/s, peak RSS {figures['peak_rss_mib']} MiB, "
                  f"{figures['errors']} errors", flush=True)
        shapes = {b.name: store_shape(b.data_dir) for b in (empty, grown)}
    finally:
        empty.stop()
        grown.stop()
        if not args.keep:
            shutil.rmtree(args.work_dir / "empty", ignore_errors=True)
            shutil.rmtree(args.work_dir / "grown", ignore_errors=True)
    rate = {name: statistics.mean(f["messages_per_s"] for f in fs) for name, fs in runs.items()}
    ratio = rate["grown"] / rate["empty"] if rate["empty"] else 0.0
    peak_rss = {n: max(f["peak_rss_mib"] for f in fs) for n, fs in runs.items()}
    summary = {"rate": rate, "ratio": round(ratio, 3), "peak_rss_mib": peak_rss, "shape": shapes, "runs": runs,
               "consume": consumed}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"produce-batch {args.batch} x {args.size} B: empty {rate['empty']:,.0f} msg/s, grown "
              f"({shapes['grown']['disk_gib']} GiB) {rate['grown']:,.0f} msg/s, ratio {ratio:.2f} (target >= 0.8)")
        for name, shape in shapes.items():
            print(f"  {name}: peak RSS {peak_rss[name]} MiB, WAL {shape['wal_files']} files "
                  f"{shape['wal_mib']} MiB")
            for family, f in shape["families"].items():
                print(f"    {family}: tables per level {f['sst_per_level']}, blob files {f['blob_files']}, "
                      f"pending compaction {f['pending_compaction_mib']} MiB")
    failed = any(f["errors"] for fs in (*runs.values(), list(consumed.values())) for f in fs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
